import { createModel } from '@kiln/runtime';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { setNumThreads } from 'kiln';
import { MODELS, traceBatchDynamic } from './cpu-models.mjs';
setNumThreads(Number(process.env.T ?? 1));
const name = process.argv[2] ?? 'MLP 784-512-512-10', batch = Number(process.argv[3] ?? 1);
const { model } = MODELS[name].kiln();
const g = traceBatchDynamic(model, MODELS[name].input);
const x = structuredClone(MODELS[name].input(batch));
const variants = { O0: LEVELS[0], O2: LEVELS[2], O2noplan: LEVELS[2].filter((p) => p !== 'plan-memory') };
const ms = Object.fromEntries(Object.entries(variants).map(([k, p]) => [k, createModel(runPipeline(g, { passes: p }).graph)]));
const med = (a) => a.sort((p, q) => p - q)[a.length >> 1];
const n = Number(process.argv[4] ?? 50);
for (const m of Object.values(ms)) for (let i = 0; i < n; i++) m.runSync([x]);
const t = Object.fromEntries(Object.keys(ms).map((k) => [k, []]));
for (let r = 0; r < n; r++) for (const [k, m] of Object.entries(ms)) { const c0 = process.cpuUsage(); m.runSync([x]); const c = process.cpuUsage(c0); t[k].push((c.user + c.system) / 1000); }
console.log(Object.entries(t).map(([k, v]) => `${k} ${med(v).toFixed(3)}`).join('  '));
