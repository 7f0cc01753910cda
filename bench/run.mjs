// The benchmark runner (`npm run bench` builds first, then runs this file). Each benchmark is
// repeated and reported as median, min and max over the runs in one markdown table on stdout
// (progress goes to stderr, so `npm run bench > table.md` keeps just the table). Figures go
// into the issue notes, not into the repository.
//
// Rows: the kernel figures of bench/kernels.mjs `benchKernels()` (matmul 512³, seed-CNN conv2
// GFLOP/s) when that file exists, the full digits training (wall time and test accuracy), and
// ResearchModel's eager forward latency in eval mode under noGrad at batch 1 and 32, and the
// runtime's figures from bench/runtime.mjs (browser bundle size, CPU executor latency), and the
// optimization pipeline's from bench/passes.mjs (-O0 vs -O2 latency, peak memory, node counts).

import { existsSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { randn, noGrad, manualSeed } from 'kiln';
import { trainDigits } from '../examples/digits/train.mjs';
import { ResearchModel, seedInputShape } from '../examples/seed/models.mjs';
import { isMain, summarize, timeRuns } from './stats.mjs';
import { benchRuntime } from './runtime.mjs';
import { benchPasses } from './passes.mjs';

export { summarize, timeRuns };

/**
 * @typedef {{ median: number, min: number, max: number, runs: number | null }} Summary
 * @typedef {{ name: string, unit: string, samples?: number[], summary?: Summary }} Row
 * One benchmark: `samples` are the per-run measurements in `unit`, or, when a benchmark
 * reports only its statistics, `summary` holds them.
 */

const fmt = (v) => (!Number.isFinite(v) ? String(v) : Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

/** The markdown table of the rows. */
export function table(rows) {
  const lines = ['| benchmark | median | min | max | runs | unit |', '| --- | ---: | ---: | ---: | ---: | --- |'];
  for (const r of rows) {
    const s = r.summary ?? summarize(r.samples);
    lines.push(`| ${r.name} | ${fmt(s.median)} | ${fmt(s.min)} | ${fmt(s.max)} | ${s.runs ?? '?'} | ${r.unit} |`);
  }
  return lines.join('\n');
}

/**
 * Rows from bench/kernels.mjs, which another part of the project owns. `benchKernels({ quick })` may
 * return (or resolve to) an array of rows or an object keyed by name; a row carries `samples`
 * (per-run values), or a `median` (with optional `min`/`max`/`runs`), or a single `value`.
 */
async function kernelRows(quick, log) {
  const file = fileURLToPath(new URL('./kernels.mjs', import.meta.url));
  if (!existsSync(file)) {
    log('bench/kernels.mjs not present: no kernel rows');
    return [];
  }
  const mod = await import(pathToFileURL(file).href);
  if (typeof mod.benchKernels !== 'function') throw new Error('bench/kernels.mjs must export a function benchKernels()');
  log('kernels ...');
  const result = await mod.benchKernels({ quick });
  const entries = Array.isArray(result) ? result.map((r) => [r.name, r]) : Object.entries(result ?? {});
  return entries.map(([name, r]) => {
    const row = { name: String(name ?? r?.name), unit: r?.unit ?? '' };
    if (typeof r === 'number') return { ...row, samples: [r] };
    if (Array.isArray(r?.samples) && r.samples.length) return { ...row, samples: r.samples };
    const median = typeof r?.median === 'number' ? r.median : r?.value;
    if (typeof median !== 'number') throw new Error(`bench/kernels.mjs: row '${row.name}' has neither samples, median nor value`);
    return { ...row, summary: { median, min: r.min ?? median, max: r.max ?? median, runs: r.runs ?? null } };
  });
}

/** The full digits training, `runs` times: wall time and test accuracy. */
function digitsRows(runs, log) {
  const seconds = [], accuracy = [];
  for (let i = 0; i < runs; i++) {
    log(`digits training ${i + 1}/${runs} ...`);
    const r = trainDigits({ progress: false });
    seconds.push(r.seconds);
    accuracy.push(100 * r.testAccuracy);
  }
  return [
    { name: 'digits training, 15 epochs', unit: 's', samples: seconds },
    { name: 'digits test accuracy', unit: '%', samples: accuracy },
  ];
}

/** ResearchModel forward latency, eval mode, inside noGrad. */
function latencyRows(batches, quick, log) {
  manualSeed(0);
  const model = new ResearchModel();
  model.eval();
  return batches.map((b) => {
    log(`ResearchModel forward, batch ${b} ...`);
    const x = randn(seedInputShape(b));
    const samples = timeRuns(() => noGrad(() => model.forward(x)), quick ? { minRuns: 3, budgetMs: 1000 } : { minRuns: 7, budgetMs: 5000 });
    return { name: `ResearchModel eager forward (eval, noGrad), batch ${b}`, unit: 'ms', samples };
  });
}

/** Runs the selected benchmarks and returns their rows. */
export async function runBenchmarks({ digitsRuns = 3, quick = false, only = ['kernels', 'digits', 'latency', 'runtime', 'passes'], log = () => {} } = {}) {
  const rows = [];
  if (only.includes('kernels')) rows.push(...(await kernelRows(quick, log)));
  if (only.includes('digits')) rows.push(...digitsRows(digitsRuns, log));
  if (only.includes('latency')) rows.push(...latencyRows([1, 32], quick, log));
  if (only.includes('runtime')) rows.push(...(await benchRuntime({ quick, log })));
  if (only.includes('passes')) rows.push(...(await benchPasses({ quick, log })));
  return rows;
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      'digits-runs': { type: 'string' },
      only: { type: 'string', default: 'kernels,digits,latency,runtime,passes' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('usage: node bench/run.mjs [--quick] [--digits-runs N] [--only kernels,digits,latency,runtime,passes]\n');
  } else {
    const digitsRuns = Number(values['digits-runs'] ?? (values.quick ? 1 : 3));
    if (!Number.isInteger(digitsRuns) || digitsRuns < 1) throw new Error(`bench: --digits-runs must be a positive integer, got '${values['digits-runs']}'`);
    const only = values.only.split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = only.filter((s) => !['kernels', 'digits', 'latency', 'runtime', 'passes'].includes(s));
    if (unknown.length) throw new Error(`bench: unknown --only item(s) ${unknown.join(', ')}; choose from kernels, digits, latency, runtime, passes`);
    const log = (s) => process.stderr.write(`${s}\n`);
    const rows = await runBenchmarks({ digitsRuns, quick: values.quick, only, log });
    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    process.stdout.write(`Kiln benchmarks — Node ${process.version}, ${cpu} (${os.availableParallelism()} threads), ${os.platform()} ${os.arch()}\n\n`);
    process.stdout.write(`${table(rows)}\n`);
  }
}
