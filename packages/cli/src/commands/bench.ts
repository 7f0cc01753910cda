// `kiln bench <model.ts|file.tsgraph>`: times a model the ways it can run — eager, compiled at
// -O0 and -O2, on the CPU and (asked for) WebGPU — and prints one table per batch size (the seed
// document's table): p50 and p90 latency, measured peak memory, QPS, and the latency and memory
// ratios against the first row (eager). Invariant: every variant runs the same inputs after one
// untimed warm-up run, and a compiled variant's outputs are checked against eager (1e-4
// relative) before it is timed, so a table never shows a wrong-but-fast row. Memory is measured,
// never planned: eager counts the tensor bytes a run held at once (memory.stats), a compiled run
// its arena and live buffers (RunStats.measuredPeakBytes).

import { readFileSync } from 'node:fs';
import { load, type Model } from '@kiln/runtime';
import { memory, noGrad, type Tensor } from 'kiln';
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
.tsgraph, the file as it is. Each variant runs once untimed, then --runs times; one table per
batch size shows p50 and p90 latency, the measured peak memory of a run (eager: tensor bytes
held at once; compiled: arena plus live buffers), QPS (samples per second at p50), and the
latency speedup and memory ratio against the first row. Compiled outputs are checked against
eager before they are timed.

Options:
  --batch <n[,n...]>        the size of symbolic dims (N); several give one table each (default 1)
  --runs <n>                timed runs per variant (default 20)
  --backend <cpu|webgpu|all>  a backend to time on (repeatable; default cpu; all: every one this machine has)
  --export, --trace, --input, --weights   as for kiln compile
  -q, --quiet               no progress output
  --verbose                 show stack traces on errors
  -h, --help                this help

Example:
  kiln bench examples/cli/research-model.ts --batch 1,32 --runs 10`;

interface Row { variant: string; times: number[]; peak?: number }

function batches(p: Parsed): number[] {
  const v = flagString(p, 'batch') ?? '1';
  const list = v.split(',').map((s) => s.trim());
  if (!list.every((s) => /^\d+$/.test(s) && Number(s) >= 1)) throw new UsageError(`--batch must be a positive integer or a comma-separated list of them (1,32), got '${v}'`, 'bench');
  return list.map(Number);
}

/** The most tensor bytes one eager call held at once, above what was alive before it. */
function eagerPeak(fn: () => unknown): number {
  memory.resetPeakStats();
  const before = memory.stats().liveBytes;
  fn();
  return memory.stats().peakBytes - before;
}

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
  const sizes = batches(p), runs = positiveInt(p, 'runs', 20);
  const backends = flagList(p, 'backend');
  for (const b of backends) if (b !== 'cpu' && b !== 'webgpu' && b !== 'all') throw new UsageError(`--backend must be cpu, webgpu or all, got '${b}'`, 'bench');
  const chosen = (backends.includes('all') ? ['cpu', 'webgpu'] : backends.length ? [...new Set(backends)] : ['cpu']) as ('cpu' | 'webgpu')[];
  for (const batch of sizes) await benchBatch(p, batch, runs, chosen);
  return 0;
}

async function benchBatch(p: Parsed, batch: number, runs: number, chosen: readonly ('cpu' | 'webgpu')[]): Promise<void> {
  const progress = new Progress(flagBool(p, 'quiet'));
  const path = p.positionals[0];
  const rows: Row[] = [], notes: string[] = [];

  if (path.endsWith('.tsgraph')) {
    const bytes = new Uint8Array(readFileSync(path));
    for (const backend of chosen) {
      const m = await loadOn(bytes, backend, path);
      if (typeof m === 'string') { notes.push(m); continue; }
      const inputs = m.inputs.map((i) => randomInput(i.name, i.type, batch));
      rows.push({ variant: `${path} ${backend}`, times: await timeRuns(runs, () => m.run(inputs)), peak: m.stats?.measuredPeakBytes });
    }
  } else {
    checkInputFlags(p, 'bench');
    const loaded = await loadModelFile(path, p, progress);
    const examples = loaded.specs.map((s) => exampleInput(s));
    const xs = loaded.specs.map((s) => exampleInput(s, batch));
    const want = noGrad(() => loaded.model.forward(...xs)) as Tensor;
    const eager = () => noGrad(() => loaded.model.forward(...xs));
    rows.push({ variant: 'eager', times: await timeRuns(runs, eager), peak: eagerPeak(eager) });
    const compiled = await frontend(loaded, p, progress, examples);
    for (const level of [0, 2] as const) {
      const bytes = (await optimize(compiled, p, progress, level, examples)).toBytes();
      for (const backend of chosen) {
        const m = await loadOn(bytes, backend, `-O${level}`);
        if (typeof m === 'string') { notes.push(m); continue; }
        const [got] = await m.run(xs);
        checkClose(got.data, want.toArray(), `-O${level} on ${backend}`);
        rows.push({ variant: `-O${level} ${backend}`, times: await timeRuns(runs, () => m.run(xs)), peak: m.stats?.measuredPeakBytes });
      }
    }
  }
  printTable(rows, runs, batch);
  for (const n of notes) console.log(`  ${n}`);
}

function checkClose(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-4 * Math.max(1, Math.abs(want[i])))) {
      throw new UserError(`${what}: output element ${i} is ${got[i]}, eager gives ${want[i]}; not timing a graph that computes something else (report this with the model file)`);
    }
  }
}

/** p-th percentile (nearest rank) of `t`. */
function percentile(t: readonly number[], p: number): number {
  const s = [...t].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function printTable(rows: readonly Row[], runs: number, batch: number): void {
  const base = rows[0];
  const baseP50 = base ? percentile(base.times, 50) : 1;
  console.log(`batch ${batch}, ${runs} runs each (after one warm-up run); ratios against ${base?.variant ?? '-'}`);
  const head = ['variant', 'p50 ms', 'p90 ms', 'peak memory', 'QPS', 'speedup', 'memory saved'];
  const body = rows.map((r) => {
    const p50 = percentile(r.times, 50), p90 = percentile(r.times, 90);
    const mem = r.peak === undefined || base?.peak === undefined || r.peak === 0 ? '-' : `${(base.peak / r.peak).toFixed(2)}x`;
    return [r.variant, p50.toFixed(2), p90.toFixed(2), r.peak === undefined ? '-' : formatBytes(r.peak), (batch / (p50 / 1000)).toFixed(1), `${(baseP50 / p50).toFixed(2)}x`, mem];
  });
  const w = head.map((_, j) => Math.max(...[head, ...body].map((r) => r[j].length)));
  for (const r of [head, ...body]) console.log(`  ${r.map((c, j) => (j === 0 ? c.padEnd(w[j]) : c.padStart(w[j]))).join('  ')}`);
}
