// Kiln against onnxruntime-web's WebAssembly backend on the CPU: the seed ResearchModel (eval,
// [N,3,32,32]) at batch 1 and 32 — Kiln eager, and its traced graph run by the runtime's CPU
// device at -O0 and -O2 — against onnxruntime-web 'wasm' (SIMD), the same weights, the same
// thread count (printed), in one process (`npm run bench:peers:cpu`, `--threads=N`, default 1).
// Invariant: no row is timed before its logits matched Kiln's eager forward within TOLERANCE;
// timed runs are interleaved round-robin, so load on the machine falls on all rows alike.
// tfjs-backend-wasm is not a row yet (not in bench/package.json).

import { createModel } from '@kiln/runtime';
import { runPipeline, LEVELS } from '@kiln/compiler';
import { setNumThreads, getNumThreads, noGrad, tensor } from 'kiln';
import { summarize } from '../stats.mjs';
import { maxAbsDiff, seedInput, seedModel } from './model.mjs';
import { seedModelOnnx } from './onnx.mjs';

const TOLERANCE = 1e-3;
const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const threads = arg('threads', 1), runs = arg('runs', 9);
setNumThreads(threads);

const { model, weights, reference, graph } = seedModel();
const traced = graph();
const ort = await import('onnxruntime-web');
ort.env.wasm.numThreads = threads;
ort.env.wasm.simd = true;
ort.env.logLevel = 'error';
const session = await ort.InferenceSession.create(seedModelOnnx(weights), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });

const kilnAt = (level) => {
  const m = createModel(runPipeline(traced, { passes: LEVELS[level] }).graph);
  return async (x) => (await m.run([x]))[0].data;
};
const rows = [
  { name: 'Kiln eager', run: async (x) => noGrad(() => model.forward(tensor(x.data, { shape: x.shape })).toArray()) },
  { name: 'Kiln -O0 (runtime, CPU)', run: kilnAt(0) },
  { name: 'Kiln -O2 (runtime, CPU)', run: kilnAt(2) },
  { name: `onnxruntime-web ${ort.env.versions?.web ?? ''} wasm`, run: async (x) => (await session.run({ x: new ort.Tensor('float32', x.data, x.shape) })).logits.data.slice() },
];

console.log(`| model, batch | ${rows.map((r) => r.name).join(' | ')} | -O2 vs ort-web | -O2 vs -O0 |`);
console.log(`| --- |${' ---: |'.repeat(rows.length + 2)}`);
for (const n of [1, 32]) {
  const x = seedInput(n), want = reference(x);
  for (const r of rows) {
    const d = maxAbsDiff(await r.run(x), want);
    if (!(d <= TOLERANCE)) throw new Error(`bench/peers/cpu: ${r.name} at batch ${n} differs from eager by ${d}`);
    await r.run(x);
  }
  const times = rows.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < rows.length; k++) {
      const j = (i + k) % rows.length;
      const t0 = performance.now();
      await rows[j].run(x);
      times[j].push(performance.now() - t0);
    }
  }
  const med = times.map((t) => summarize(t).median);
  const [, o0, o2, ortMs] = med;
  console.log(`| seed CNN, ${n} | ${med.map((m) => `${m.toFixed(2)} ms`).join(' | ')} | ${(ortMs / o2).toFixed(2)}× | ${(o0 / o2).toFixed(2)}× |`);
}
console.log(`\nthreads: Kiln ${getNumThreads()}, onnxruntime-web ${ort.env.wasm.numThreads}; ${runs} timed runs per row, medians; ratios > 1 mean Kiln -O2 is faster.`);
await session.release();
