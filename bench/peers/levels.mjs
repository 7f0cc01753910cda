// -O0 against -O2 (and -O2 without its memory plan) on the CPU peer benchmark's models, warm, in
// one process (`node bench/peers/levels.mjs [--models=mlp] [--runs=31] [--threads=1]`): the
// three compiled forms of a model run in turn (the order rotating), INNER runs per timed sample,
// so machine load falls on all three alike and the ratios come from one run. ./cpu.mjs measures cold-cache
// single runs against the peers; this isolates what the passes and the arena change.
// Invariant: every form's output matches -O0's within TOLERANCE before any timing.

import { setNumThreads } from 'kiln';
import { createModel } from '@kiln/runtime';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { summarize } from '../stats.mjs';
import { MODELS, traceBatchDynamic } from './cpu-models.mjs';

const TOLERANCE = 1e-4;
const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const runs = Number(arg('runs', 31)), threads = Number(arg('threads', 1));
const only = arg('models', '').toLowerCase().split(',').filter(Boolean);
const FORMS = { '-O0': LEVELS[0], '-O2': LEVELS[2], '-O2, no plan': LEVELS[2].filter((p) => p !== 'plan-memory') };
setNumThreads(threads);

console.log(`| model, batch | ${Object.keys(FORMS).map((f) => `Kiln ${f}`).join(' | ')} | -O2 vs -O0 | no plan vs -O2 |`);
console.log(`| --- | ${Object.keys(FORMS).map(() => '---:').join(' | ')} | ---: | ---: |`);
for (const [name, m] of Object.entries(MODELS)) {
  if (only.length && !only.some((w) => name.toLowerCase().includes(w))) continue;
  const graph = traceBatchDynamic(m.kiln().model, m.input);
  const models = Object.fromEntries(Object.entries(FORMS).map(([f, passes]) => [f, createModel(runPipeline(graph, { passes }).graph)]));
  for (const batch of m.batches) {
    const x = m.input(batch);
    const want = models['-O0'].runSync([x])[0].data;
    for (const [f, model] of Object.entries(models)) {
      const got = model.runSync([x])[0].data;
      const worst = got.reduce((w, v, i) => Math.max(w, Math.abs(v - want[i])), 0);
      if (!(worst <= TOLERANCE)) throw new Error(`bench/peers/levels: ${name} batch ${batch}: Kiln ${f} differs from -O0 by ${worst}`);
    }
    // Warm-up (V8 optimizes the executor after many runs), then INNER runs per sample so one
    // sample is well above the timer's resolution.
    const one = (model) => { const t0 = performance.now(); model.runSync([x]); return performance.now() - t0; };
    const per = one(models['-O0']);
    const inner = Math.max(1, Math.round(2 / Math.max(per, 1e-3)));
    for (let t0 = performance.now(); performance.now() - t0 < 1000;) for (const model of Object.values(models)) model.runSync([x]);
    const samples = Object.fromEntries(Object.keys(models).map((f) => [f, []]));
    // The order rotates sample by sample: whichever form runs right after -O0 (which allocates
    // every intermediate) would otherwise pay for the collections -O0's garbage triggers.
    const forms = Object.entries(models);
    for (let r = 0; r < runs; r++) {
      for (const [f, model] of [...forms.slice(r % forms.length), ...forms.slice(0, r % forms.length)]) {
        const c0 = process.cpuUsage();
        for (let i = 0; i < inner; i++) model.runSync([x]);
        const c = process.cpuUsage(c0);
        samples[f].push((c.user + c.system) / 1000 / inner);
      }
    }
    const med = Object.fromEntries(Object.entries(samples).map(([f, s]) => [f, summarize(s).median]));
    const ms = (v) => `${v < 1 ? v.toFixed(3) : v < 10 ? v.toFixed(2) : v.toFixed(1)} ms`;
    console.log(`| ${name}, ${batch} | ${Object.values(med).map(ms).join(' | ')} | ${(med['-O0'] / med['-O2']).toFixed(2)}× | ${(med['-O2, no plan'] / med['-O2']).toFixed(2)}× |`);
  }
}
console.log(`\nCPU time per run (this process), medians of ${runs} samples, the three forms interleaved; ratios > 1 mean -O2 is faster (last column: > 1 means the arena made -O2 faster). --threads=${threads}; node ${process.version}.`);
