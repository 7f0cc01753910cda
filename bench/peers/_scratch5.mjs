// A/B of the wasm element body: same -O2 model, elementBody on/off, interleaved, CPU time.
import { createModel } from '@kiln/runtime';
import { fastPrimitives } from '../../runtime/dist/wasm/primitives.js';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { setNumThreads } from 'kiln';
import { MODELS, traceBatchDynamic } from './cpu-models.mjs';
setNumThreads(1);
const name = process.argv[2], batch = Number(process.argv[3]), n = Number(process.argv[4] ?? 100);
const { model } = MODELS[name].kiln();
const g = runPipeline(traceBatchDynamic(model, MODELS[name].input), { passes: LEVELS[2] }).graph;
const x = structuredClone(MODELS[name].input(batch));
const m = createModel(g);
const prims = fastPrimitives(), eb = prims.elementBody;
const med = (a) => a.sort((p, q) => p - q)[a.length >> 1];
const t = { on: [], off: [] };
for (let i = 0; i < n; i++) for (const k of ['on', 'off']) { prims.elementBody = k === 'on' ? eb : undefined; const c0 = process.cpuUsage(); m.runSync([x]); const c = process.cpuUsage(c0); if (i > n / 5) t[k].push((c.user + c.system) / 1000); }
console.log(name, batch, `elementBody on ${med(t.on).toFixed(3)} ms, off ${med(t.off).toFixed(3)} ms, off/on ${(med(t.off) / med(t.on)).toFixed(2)}`);
