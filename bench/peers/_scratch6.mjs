import { createModel } from '@kiln/runtime';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { setNumThreads } from 'kiln';
import { MODELS, traceBatchDynamic, eager } from './cpu-models.mjs';
setNumThreads(1);
const name = process.argv[2], batch = Number(process.argv[3]), n = Number(process.argv[4] ?? 100), gap = Number(process.argv[5] ?? 0);
const { model } = MODELS[name].kiln();
const g = traceBatchDynamic(model, MODELS[name].input);
const x = structuredClone(MODELS[name].input(batch));
const runs = { eager: () => eager(model, x) };
for (const l of [0, 2]) { const m = createModel(runPipeline(g, { passes: LEVELS[l] }).graph); runs['O' + l] = () => m.runSync([x]); }
const med = (a) => a.sort((p, q) => p - q)[a.length >> 1];
const t = Object.fromEntries(Object.keys(runs).map((k) => [k, []])), w = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
const junk = new Float32Array(8 << 20);
for (let i = 0; i < n; i++) for (const [k, f] of Object.entries(runs)) {
  if (gap) { for (let j = 0; j < junk.length; j += 16) junk[j] += 1; } // evict caches like another process would
  const c0 = process.cpuUsage(), t0 = performance.now(); f(); const ms = performance.now() - t0; const c = process.cpuUsage(c0);
  if (i >= n / 5) { t[k].push((c.user + c.system) / 1000); w[k].push(ms); }
}
console.log(name, batch, gap ? 'cold' : 'warm', Object.keys(runs).map((k) => `${k} cpu ${med(t[k]).toFixed(3)} wall ${med(w[k]).toFixed(3)}`).join(' | '));
