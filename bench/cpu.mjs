// The CPU kernels side by side: plain JavaScript (KILN_WASM=0) against the WebAssembly SIMD
// primitives on 1 thread and on all cores, each configuration in its own child process of one
// run (`npm run bench:cpu`). Rows: matmul 512³ and 1024³ GFLOP/s, the seed ResearchModel
// (eager under noGrad, and its trace run by the runtime at -O0 and -O2) at batch 1 and 32, an
// MLP 784-512-512-10 at batch 1 and 64, and the digits training (15 epochs). Medians in ms;
// the last columns are speed-ups over JavaScript (numbers agree to float32 rounding: the
// kernel tests check that, this file only times).

import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { isMain, summarize, timeRuns } from './stats.mjs';

const CONFIGS = [
  { name: 'JavaScript', env: { KILN_WASM: '0' }, threads: 1 },
  { name: 'SIMD, 1 thread', env: {}, threads: 1 },
  { name: `SIMD, ${os.availableParallelism()} threads`, env: {}, threads: os.availableParallelism() },
];

/** One configuration's rows (runs in the child). */
async function measure(threads) {
  const { randn, matmul, nn, noGrad, manualSeed, jit, setNumThreads } = await import('kiln');
  const { fastPrimitives } = await import('@kiln/runtime');
  const { ResearchModel } = await import('../examples/seed/models.mjs');
  setNumThreads(threads);
  const rows = {};
  const ms = (fn, opts) => summarize(timeRuns(fn, { warmup: 2, minRuns: 5, budgetMs: 2500, ...opts })).median;
  for (const n of [512, 1024]) {
    manualSeed(1);
    const a = randn([n, n]), b = randn([n, n]);
    const t = ms(() => matmul(a, b), { minRuns: 3 });
    rows[`matmul ${n}³ (GFLOP/s)`] = (2 * n ** 3) / t / 1e6;
  }
  manualSeed(0);
  const seed = new ResearchModel();
  seed.eval();
  for (const batch of [1, 32]) {
    manualSeed(2);
    const x = randn([batch, 3, 32, 32]);
    rows[`seed CNN eager, batch ${batch} (ms)`] = ms(() => noGrad(() => seed.forward(x)));
    const traced = jit.trace(seed, [x], { warn: false });
    rows[`seed CNN -O0, batch ${batch} (ms)`] = ms(() => traced.forward(x));
    const fast = jit.optimizeForInference(traced);
    rows[`seed CNN -O2, batch ${batch} (ms)`] = ms(() => fast.forward(x));
  }
  manualSeed(3);
  const mlp = new nn.Sequential(new nn.Linear(784, 512), new nn.ReLU(), new nn.Linear(512, 512), new nn.ReLU(), new nn.Linear(512, 10));
  for (const batch of [1, 64]) {
    const x = randn([batch, 784]);
    rows[`MLP eager, batch ${batch} (ms)`] = ms(() => noGrad(() => mlp.forward(x)));
    const fast = jit.optimizeForInference(jit.trace(mlp, [x], { warn: false }));
    rows[`MLP -O2, batch ${batch} (ms)`] = ms(() => fast.forward(x));
  }
  const { trainDigits } = await import('../examples/digits/train.mjs');
  const r = trainDigits({ progress: false });
  rows['digits training, 15 epochs (s)'] = r.seconds;
  return { kind: fastPrimitives().kind, rows, accuracy: r.testAccuracy };
}

if (process.argv[2] === '--child') {
  const out = await measure(Number(process.argv[3]));
  process.stdout.write(JSON.stringify(out));
} else if (isMain(import.meta.url)) {
  const results = CONFIGS.map((c) => {
    process.stderr.write(`bench/cpu: ${c.name}…\n`);
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', String(c.threads)], { env: { ...process.env, ...c.env }, encoding: 'utf8', maxBuffer: 1 << 24 });
    if (r.status !== 0) throw new Error(`bench/cpu: ${c.name} failed:\n${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').pop());
  });
  const names = Object.keys(results[0].rows);
  const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  console.log(`| row | ${CONFIGS.map((c, i) => `${c.name} (${results[i].kind})`).join(' | ')} | ${CONFIGS.slice(1).map((c) => `${c.name} vs JS`).join(' | ')} |`);
  console.log(`| --- |${' ---: |'.repeat(CONFIGS.length * 2 - 1)}`);
  for (const n of names) {
    const v = results.map((r) => r.rows[n]);
    const higherIsBetter = n.includes('GFLOP');
    const ratios = v.slice(1).map((x) => `${(higherIsBetter ? x / v[0] : v[0] / x).toFixed(2)}×`);
    console.log(`| ${n} | ${v.map(fmt).join(' | ')} | ${ratios.join(' | ')} |`);
  }
  console.log(`\nnode ${process.version}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'unknown CPU'})`);
}
