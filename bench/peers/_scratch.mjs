import { createModel } from '@kiln/runtime';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { setNumThreads } from 'kiln';
import { MODELS, traceBatchDynamic } from './cpu-models.mjs';
setNumThreads(1);
const name = process.argv[2] ?? 'MLP 784-512-512-10', batch = Number(process.argv[3] ?? 1);
const { model } = MODELS[name].kiln();
const g = traceBatchDynamic(model, MODELS[name].input);
const x0 = MODELS[name].input(batch);
const x = structuredClone(x0);
const ms = {};
for (const lvl of [0, 2]) ms[lvl] = createModel(runPipeline(g, { passes: LEVELS[lvl] }).graph);
const med = (a) => a.sort((p, q) => p - q)[a.length >> 1];
for (let round = 0; round < 3; round++) {
  for (const lvl of [0, 2]) {
    const m = ms[lvl];
    for (let i = 0; i < 300; i++) m.runSync([x]);
    const t = [];
    for (let i = 0; i < 300; i++) { const t0 = performance.now(); m.runSync([x]); t.push(performance.now() - t0); }
    const tg = [];
    for (let i = 0; i < 100; i++) { await new Promise((r) => setTimeout(r, 1)); const t0 = performance.now(); m.runSync([x]); tg.push(performance.now() - t0); }
    console.log(`O${lvl} tight ${med(t).toFixed(3)} ms, with 1ms gaps ${med(tg).toFixed(3)} ms`);
  }
}
