// `kiln bench <model.ts|file.tsgraph>`: times a model the ways it can run — eager, compiled at
// -O0 and -O2, on the CPU and (asked for) WebGPU — and prints one table: median, spread, peak
// intermediate memory, speedup over the first row. Invariant: every variant runs the same
// inputs after one untimed warm-up run, and a compiled variant's outputs are checked against
// eager (1e-4 relative) before it is timed, so a table never shows a wrong-but-fast row.

import { readFileSync } from 'node:fs';
import { load, type Model } from '@kiln/runtime';
import { noGrad, type Tensor } from 'kiln';
import { flagBool, flagList, flagString, type FlagSpec, type Parsed } from '../args.js';
import { UsageError, UserError } from '../errors.js';
import { exampleInput } from '../input-spec.js';
import { randomInput } from '../input-files.js';
import { Progress } from '../progress.js';
import { formatBytes } from './inspect.js';
import { checkInputFlags, COMPILE_FLAGS, frontend, loadModelFile, optimize } from './compile.js';

export const BENCH_FLAGS: Record<string, FlagSpec> = {
  ...Object.fromEntries(['export', 'trace', 'input', 'weights', 'quiet'].map((k) => [k, COMPILE_FLAGS[k]])),
  batch: { type: 'string' },
  runs: { type: 'string' },
  backend: { type: 'list' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const BENCH_HELP = `Usage: kiln bench <model.ts | file.tsgraph> [options]

Times a model: for a model file, eager against the compiled graph at -O0 and -O2; for a
.tsgraph, the file as it is. Each variant runs once untimed, then --runs times; the table shows
the median and spread, the peak intermediate memory of a run, and the speedup over the first row.
Compiled outputs are checked against eager before they are timed.

Options:
  --batch <n>               the size of symbolic dims (N) (default 1)
  --runs <n>                timed runs per variant (default 20)
  --backend <cpu|webgpu>    a backend to time on (repeatable; default cpu)
  --export, --trace, --input, --weights   as for kiln compile
  -q, --quiet               no progress output
  --verbose                 show stack traces on errors
  -h, --help                this help

Example:
  kiln bench examples/cli/research-model.ts --batch 8 --runs 10`;

interface Row { variant: string; times: number[]; peak?: number }

function positiveInt(p: Parsed, name: string, dflt: number): number {
  const v = flagString(p, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new UsageError(`--${name} must be a positive integer, got '${v}'`, 'bench');
  return Number(v);
}

async function timeRuns(runs: number, fn: () => unknown): Promise<number[]> {
  await fn();
  const times: number[] = [];
  for (let k = 0; k < runs; k++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times;
}

async function loadOn(bytes: Uint8Array, backend: 'cpu' | 'webgpu', what: string): Promise<Model | string> {
  try {
    return await load(bytes, { backend });
  } catch (e) {
    if (e instanceof Error && e.name === 'RuntimeError' && backend === 'webgpu') return `${what}: WebGPU unavailable (${e.message.split(';')[0]})`;
    throw e;
  }
}

/** Runs `kiln bench`; returns the exit code. */
export async function benchCommand(p: Parsed): Promise<number> {
  if (p.positionals.length !== 1) throw new UsageError(p.positionals.length ? `expected one model or .tsgraph file, got ${p.positionals.length}` : 'missing the model or .tsgraph file', 'bench');
  const batch = positiveInt(p, 'batch', 1), runs = positiveInt(p, 'runs', 20);
  const backends = flagList(p, 'backend');
  for (const b of backends) if (b !== 'cpu' && b !== 'webgpu') throw new UsageError(`--backend must be cpu or webgpu, got '${b}'`, 'bench');
  const chosen = (backends.length ? backends : ['cpu']) as ('cpu' | 'webgpu')[];
  const progress = new Progress(flagBool(p, 'quiet'));
  const path = p.positionals[0];
  const rows: Row[] = [], notes: string[] = [];

  if (path.endsWith('.tsgraph')) {
    const bytes = new Uint8Array(readFileSync(path));
    for (const backend of chosen) {
      const m = await loadOn(bytes, backend, path);
      if (typeof m === 'string') { notes.push(m); continue; }
      const inputs = m.inputs.map((i) => randomInput(i.name, i.type, batch));
      rows.push({ variant: `${path} ${backend}`, times: await timeRuns(runs, () => m.run(inputs)), peak: m.stats?.peakIntermediateBytes });
    }
  } else {
    checkInputFlags(p, 'bench');
    const loaded = await loadModelFile(path, p, progress);
    const examples = loaded.specs.map((s) => exampleInput(s));
    const xs = loaded.specs.map((s) => exampleInput(s, batch));
    const want = noGrad(() => loaded.model.forward(...xs)) as Tensor;
    rows.push({ variant: 'eager', times: await timeRuns(runs, () => noGrad(() => loaded.model.forward(...xs))) });
    const compiled = await frontend(loaded, p, progress, examples);
    for (const level of [0, 2] as const) {
      const bytes = (await optimize(compiled, p, progress, level, examples)).toBytes();
      for (const backend of chosen) {
        const m = await loadOn(bytes, backend, `-O${level}`);
        if (typeof m === 'string') { notes.push(m); continue; }
        const [got] = await m.run(xs);
        checkClose(got.data, want.toArray(), `-O${level} on ${backend}`);
        rows.push({ variant: `-O${level} ${backend}`, times: await timeRuns(runs, () => m.run(xs)), peak: m.stats?.peakIntermediateBytes });
      }
    }
  }
  printTable(rows, runs, batch);
  for (const n of notes) console.log(`  ${n}`);
  return 0;
}

function checkClose(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-4 * Math.max(1, Math.abs(want[i])))) {
      throw new UserError(`${what}: output element ${i} is ${got[i]}, eager gives ${want[i]}; not timing a graph that computes something else (report this with the model file)`);
    }
  }
}

function printTable(rows: readonly Row[], runs: number, batch: number): void {
  const median = (t: number[]) => [...t].sort((a, b) => a - b)[Math.floor(t.length / 2)];
  const base = rows.length ? median(rows[0].times) : 1;
  console.log(`batch ${batch}, ${runs} runs each (after one warm-up run)`);
  const head = ['variant', 'median ms', 'min ms', 'max ms', 'peak memory', 'speedup'];
  const body = rows.map((r) => {
    const med = median(r.times);
    return [r.variant, med.toFixed(2), Math.min(...r.times).toFixed(2), Math.max(...r.times).toFixed(2), r.peak === undefined ? '-' : formatBytes(r.peak), `${(base / med).toFixed(2)}x`];
  });
  const w = head.map((_, j) => Math.max(...[head, ...body].map((r) => r[j].length)));
  for (const r of [head, ...body]) console.log(`  ${r.map((c, j) => (j === 0 ? c.padEnd(w[j]) : c.padStart(w[j]))).join('  ')}`);
}
