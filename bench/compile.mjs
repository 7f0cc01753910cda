// jit.compile against eager (`npm run bench:compile`): one digits training step (forward,
// cross-entropy, backward, Adam step) at batch 32, with the compile time of the first call
// shown apart; the default against `recompute: true` (bytes held per step, step time); and the
// cost of the guard check every compiled call makes first, against a batch-1 seed CNN call. Medians in ms. Numbers agree with eager (tests/jit-compile.test.ts
// checks 50 steps); this file only times. Flags: `--threads=N` (setNumThreads: 1 takes the
// worker threads, and their spinning, out of the CPU-time columns), `--steps=N` interleaved
// steps of each (default 60).

import { F, jit, manualSeed, noGrad, optim, randn, setNumThreads, tensor } from 'kiln';
import { digitsModel, loadDigits } from '../examples/digits/train.mjs';
import { ResearchModel } from '../examples/seed/models.mjs';
import { isMain, summarize, timeRuns } from './stats.mjs';

const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const ms = (fn, opts) => summarize(timeRuns(fn, { warmup: 2, minRuns: 10, budgetMs: 4000, ...opts })).median;

export function measure({ threads = Number(arg('threads') ?? 0), steps = Number(arg('steps') ?? 60) } = {}) {
  if (threads) setNumThreads(threads);
  const data = loadDigits();
  const batches = Array.from({ length: 8 }, (_, s) => ({
    x: tensor(data.x.slice(s * 32 * 64, (s + 1) * 32 * 64), { shape: [32, 1, 8, 8] }),
    y: tensor(data.y.slice(s * 32, (s + 1) * 32), { shape: [32] }),
  }));
  const trainer = (compiled, opts = {}) => {
    manualSeed(0);
    const model = digitsModel().train();
    const net = compiled ? jit.compile(model, opts) : model;
    const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
    let k = 0;
    const phases = { forward: [], 'loss + backward': [], 'optimizer step': [] };
    const step = () => {
      const b = batches[k++ % batches.length];
      opt.zeroGrad();
      let t = process.cpuUsage();
      const out = net.forward(b.x);
      phases.forward.push(cpuSince(t));
      t = process.cpuUsage();
      F.crossEntropy(out, b.y).backward();
      phases['loss + backward'].push(cpuSince(t));
      t = process.cpuUsage();
      opt.step();
      phases['optimizer step'].push(cpuSince(t));
    };
    return Object.assign(step, { phases, net });
  };
  const cpuSince = (t0) => { const d = process.cpuUsage(t0); return (d.user + d.system) / 1000; };
  const rows = {};
  const eager = trainer(false), step = trainer(true);
  const t0 = performance.now();
  step(); // captures, differentiates, optimizes, runs
  rows['digits train step, jit.compile: first call incl. compile (ms)'] = performance.now() - t0;
  // Eager and compiled steps interleaved one by one, medians: the machine's load shifts over
  // seconds, and timing one after the other would hand the difference to whichever ran calmer.
  // CPU time of this process as well: on a shared machine a step may wait for a core most of its
  // wall time, and the CPU time is what the step itself cost (all threads: the convolutions split
  // over the worker threads, which spin a little after each split call).
  const e = [], c = [], ec = [], cc = [];
  const cpu = (fn) => { const t0 = process.cpuUsage(); fn(); const d = process.cpuUsage(t0); return (d.user + d.system) / 1000; };
  for (let i = 0; i < 3; i++) { eager(); step(); }
  for (let i = 0; i < steps; i++) {
    let t = performance.now(); ec.push(cpu(eager)); e.push(performance.now() - t);
    t = performance.now(); cc.push(cpu(step)); c.push(performance.now() - t);
  }
  rows['digits train step, eager (ms)'] = summarize(e).median;
  rows['digits train step, jit.compile (ms)'] = summarize(c).median;
  rows['speed-up (eager / compiled)'] = rows['digits train step, eager (ms)'] / rows['digits train step, jit.compile (ms)'];
  rows['digits train step, eager (CPU ms)'] = summarize(ec).median;
  rows['digits train step, jit.compile (CPU ms)'] = summarize(cc).median;
  rows['speed-up in CPU time (eager / compiled)'] = rows['digits train step, eager (CPU ms)'] / rows['digits train step, jit.compile (CPU ms)'];
  // The fastest step of each: on a loaded machine the least disturbed figure (load only adds).
  rows['digits train step, eager (min CPU ms)'] = Math.min(...ec);
  rows['digits train step, jit.compile (min CPU ms)'] = Math.min(...cc);
  rows['speed-up in min CPU time (eager / compiled)'] = rows['digits train step, eager (min CPU ms)'] / rows['digits train step, jit.compile (min CPU ms)'];
  // Where the step's CPU time goes, per phase (medians over the interleaved steps above; the
  // loss and the optimizer are eager code on both sides, the backward through the compiled graph
  // is one autograd node running the backward graph).
  for (const phase of Object.keys(eager.phases)) {
    const a = summarize(eager.phases[phase].slice(-steps)).median, b = summarize(step.phases[phase].slice(-steps)).median;
    rows[`  ${phase}, eager (CPU ms)`] = a;
    rows[`  ${phase}, jit.compile (CPU ms)`] = b;
  }
  // `recompute: true` against the default, interleaved the same way: the bytes a step holds from
  // its forward to its backward, and the step time the recomputation costs.
  const again = trainer(true, { recompute: true });
  const h = [], r = [];
  for (let i = 0; i < 3; i++) { step(); again(); }
  for (let i = 0; i < steps; i++) {
    let t = performance.now(); step(); h.push(performance.now() - t);
    t = performance.now(); again(); r.push(performance.now() - t);
  }
  rows['digits train step, held from forward to backward (KB)'] = step.net.explain().graphs[0].saved.bytes / 1e3;
  rows['digits train step, held with recompute: true (KB)'] = again.net.explain().graphs[0].saved.bytes / 1e3;
  rows['digits train step, jit.compile, beside recompute: true (ms)'] = summarize(h).median;
  rows['digits train step, jit.compile recompute: true (ms)'] = summarize(r).median;

  manualSeed(1);
  const seed = new ResearchModel().eval();
  const fast = jit.compile(seed);
  const x = randn([1, 3, 32, 32]);
  noGrad(() => fast.forward(x));
  const call = ms(() => noGrad(() => fast.forward(x)));
  rows['seed CNN batch 1, eager (ms)'] = ms(() => noGrad(() => seed.forward(x)));
  const reps = 1000;
  const guard = ms(() => { for (let i = 0; i < reps; i++) noGrad(() => fast.guardsHold(x)); }) / reps;
  rows['seed CNN batch 1, jit.compile call (ms)'] = call;
  rows['guard check (ms)'] = guard;
  rows['guard check / call (%)'] = (100 * guard) / call;
  return rows;
}

if (isMain(import.meta.url)) {
  const rows = measure();
  for (const [k, v] of Object.entries(rows)) console.log(`${k.padEnd(64)} ${v.toFixed(k.includes('%') || k.includes('speed') ? 2 : 3)}`);
}
