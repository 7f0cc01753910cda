// `kiln run <file.tsgraph>`: load in the runtime alone on a backend, feed random inputs of the
// declared types (or files), print the outputs and the time. Invariant: the graph runs exactly
// as an application would run it with `load(path, { backend }).run(inputs)`; every flag (and each
// --input's name against the file's declared inputs) is checked before a backend starts.

import { load, type InputValue, type Output } from '@kiln/runtime';
import { flagBool, flagList, flagString, type FlagSpec, type Parsed } from '../args.js';
import { UsageError, UserError } from '../errors.js';
import { randomInput, readInputFile } from '../input-files.js';
import { DTYPE_FROM_SHORT } from '@kiln/ir-spec';
import { existsSync } from 'node:fs';
import { readGraphFile } from '../read-graph.js';
import { profiler } from 'kiln';

export const RUN_FLAGS: Record<string, FlagSpec> = {
  input: { type: 'list' },
  batch: { type: 'string' },
  backend: { type: 'string' },
  runs: { type: 'string' },
  seed: { type: 'string' },
  values: { type: 'string' },
  profile: { type: 'string' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const RUN_HELP = `Usage: kiln run <file.tsgraph> [options]

Runs a .tsgraph in the runtime and prints each output's name, shape, first values and the time.
Inputs are random values of the declared types unless given with --input.

Options:
  --input <name=file>       an input from a .json file ({ "data": [...], "shape": [...] } or
                            nested arrays) or a .npy file (float32 or int32); repeatable
  --batch <n>               the size of symbolic dims (N) for random inputs (default 1)
  --backend <cpu|webgpu|auto>  where to run (default auto)
  --runs <n>                run n times and report the median time (default 1)
  --seed <n>                seed of the generator the graph's random ops (rand, randn,
                            training-mode dropout) draw from (default: a fixed seed)
  --values <n>              how many values of each output to print (default 8)
  --profile <trace.json>    profile the runs: print the time per kernel (with the IR nodes and
                            source lines each covers) and write a Chrome trace (Perfetto,
                            chrome://tracing), or, for a .html path, a self-contained timeline page;
                            on WebGPU, kernels are timed by GPU timestamp queries where available
  --verbose                 show stack traces on errors
  -h, --help                this help

Example:
  kiln run model.tsgraph --batch 4 --backend cpu
  kiln run model.tsgraph --runs 10 --profile trace.json`;

function positiveInt(p: Parsed, name: string, dflt: number): number {
  const v = flagString(p, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new UsageError(`--${name} must be a positive integer, got '${v}'`, 'run');
  return Number(v);
}

/** Runs `kiln run`; returns the exit code. */
export async function runCommand(p: Parsed): Promise<number> {
  if (p.positionals.length !== 1) throw new UsageError(p.positionals.length ? `expected one .tsgraph file, got ${p.positionals.length}` : 'missing the .tsgraph file', 'run');
  const backend = flagString(p, 'backend') ?? 'auto';
  if (backend !== 'cpu' && backend !== 'webgpu' && backend !== 'auto') throw new UsageError(`--backend must be cpu, webgpu or auto, got '${backend}'`, 'run');
  const batch = positiveInt(p, 'batch', 1), runs = positiveInt(p, 'runs', 1), shown = positiveInt(p, 'values', 8);
  const path = p.positionals[0];
  const seedFlag = flagString(p, 'seed');
  if (seedFlag !== undefined && !/^\d+$/.test(seedFlag)) throw new UsageError(`--seed must be a non-negative integer, got '${seedFlag}'`, 'run');
  const seed = seedFlag === undefined ? undefined : Number(seedFlag);
  const files = new Map<string, string>();
  for (const f of flagList(p, 'input')) {
    const eq = f.indexOf('=');
    if (eq <= 0 || eq === f.length - 1) throw new UsageError(`--input takes name=file, got '${f}'`, 'run');
    const name = f.slice(0, eq), file = f.slice(eq + 1);
    if (files.has(name)) throw new UsageError(`--input ${name} is given twice`, 'run');
    if (!existsSync(file)) throw new UserError(`--input ${name}: no such file: ${file}`);
    files.set(name, file);
  }
  // The declared inputs, read by the checked decoder alone: a wrong --input name is reported
  // before a backend (WebGPU) starts.
  const declared = readGraphFile(path).header.inputs;
  for (const name of files.keys()) {
    if (!declared.some((i) => i.name === name)) throw new UserError(`--input ${name}: the graph has no input '${name}'; its inputs are ${declared.map((i) => `${i.name}: ${i.type}`).join(', ')}`);
  }

  const traceFile = flagString(p, 'profile');
  const t0 = performance.now();
  let model;
  try {
    // --profile: WebGPU dispatches timed by GPU timestamp queries where the adapter has them.
    model = await load(path, { backend, seed, ...(traceFile !== undefined ? { profile: true } : {}) });
  } catch (e) {
    if (e instanceof Error && (e.name === 'TsgraphError' || e.name === 'RuntimeError')) throw new UserError(`${path}: ${e.message}`, { cause: e });
    throw e;
  }
  const loadMs = performance.now() - t0;

  const inputs: InputValue[] = model.inputs.map((i) => {
    const file = files.get(i.name);
    if (!file) return randomInput(i.name, i.type, batch);
    const short = i.type.replace(/\[.*$/, '');
    const dtype = Object.hasOwn(DTYPE_FROM_SHORT, short) ? DTYPE_FROM_SHORT[short] : 'float32';
    return readInputFile(file, dtype);
  });

  const times: number[] = [];
  let outs: Output[] | undefined;
  const runAll = async () => {
    for (let k = 0; k < runs; k++) {
      const t = performance.now();
      outs = await model.run(inputs);
      times.push(performance.now() - t);
    }
  };
  const prof = traceFile === undefined ? (await runAll(), undefined) : await profiler.profile({}, runAll);
  times.sort((a, b) => a - b);
  const describe = (v: InputValue, type: string) => (typeof v === 'object' ? `[${v.shape.join(',')}]` : String(v)) + `  (${type})`;
  console.log(`${path}  backend ${model.device.backend}`);
  model.inputs.forEach((i, k) => console.log(`  input  ${i.name}: ${describe(inputs[k], i.type)}${files.has(i.name) ? `  from ${files.get(i.name)}` : '  random'}`));
  for (const o of outs ?? []) {
    const vals = Array.from(o.data.subarray(0, shown), (x) => (o.dtype === 'float32' ? Number(x).toPrecision(6) : String(x)));
    console.log(`  output ${o.name}: ${o.dtype} [${o.shape.join(',')}]  ${vals.join(' ')}${o.data.length > shown ? ' ...' : ''}`);
  }
  const median = times[Math.floor(times.length / 2)];
  console.log(`  load ${loadMs.toFixed(1)} ms, run ${median.toFixed(2)} ms${runs > 1 ? ` (median of ${runs}, min ${times[0].toFixed(2)}, max ${times[times.length - 1].toFixed(2)})` : ''}`);
  if (flagBool(p, 'verbose') && model.stats) console.log(`  peak intermediate memory ${model.stats.peakIntermediateBytes} bytes (measured ${model.stats.measuredPeakBytes}), ${model.stats.nodesRun} nodes run`);
  if (prof && traceFile !== undefined) {
    console.log(`\nprofile of ${runs} run${runs > 1 ? 's' : ''}, by kernel and source line:`);
    console.log(prof.keyAverages({ groupBy: 'source' }).table({ sortBy: 'total', rowLimit: 20 }));
    try {
      if (traceFile.endsWith('.html')) prof.exportHtml(traceFile, `kiln run ${path}`);
      else prof.exportChromeTrace(traceFile);
    } catch (e) {
      throw new UserError(`--profile: cannot write ${traceFile}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    console.log(`wrote ${traceFile}${traceFile.endsWith('.html') ? ' (a timeline page)' : ' (open it in https://ui.perfetto.dev or chrome://tracing)'}`);
  }
  return 0;
}
