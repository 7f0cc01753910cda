import { createModel } from '@kiln/runtime';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { setNumThreads } from 'kiln';
import { MODELS, traceBatchDynamic } from './cpu-models.mjs';
import { PEER_MODELS } from './cpu-peers.mjs';
import * as ort from 'onnxruntime-web';
setNumThreads(1);
ort.env.wasm.numThreads = 1; ort.env.wasm.simd = true; ort.env.logLevel = 'error';
const name = process.argv[2], batch = Number(process.argv[3]), n = Number(process.argv[4] ?? 100), gap = Number(process.argv[5] ?? 0);
const { model, weights } = MODELS[name].kiln();
const g = traceBatchDynamic(model, MODELS[name].input);
const x = structuredClone(MODELS[name].input(batch));
const s = await ort.InferenceSession.create(PEER_MODELS[name].onnx(weights), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
const runs = { ort: async () => (await s.run({ x: new ort.Tensor('float32', x.data, x.shape) })).logits.data.slice() };
const m = createModel(runPipeline(g, { passes: LEVELS[2] }).graph); runs.O2 = async () => m.runSync([x])[0].data;
const med = (a) => a.sort((p, q) => p - q)[a.length >> 1];
const t = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
const junk = new Float32Array(8 << 20);
for (let i = 0; i < n; i++) for (const [k, f] of Object.entries(runs)) {
  if (gap) { for (let j = 0; j < junk.length; j += 16) junk[j] += 1; }
  const c0 = process.cpuUsage(); await f(); const c = process.cpuUsage(c0);
  if (i >= n / 5) t[k].push((c.user + c.system) / 1000);
}
console.log(name, batch, gap ? 'cold' : 'warm', Object.keys(runs).map((k) => `${k} cpu ${med(t[k]).toFixed(3)}`).join(' | '), `ort/O2 ${(med(t.ort) / med(t.O2)).toFixed(2)}`);
