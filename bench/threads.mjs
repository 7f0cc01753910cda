// Kiln -O2 on 1 thread against all cores, side by side in ONE process (`npm run bench:threads`,
// `--runs=N` (default 21), `--models=seed,mlp` (a subset), `--threads=N` (the many-thread side,
// default the available cores)): the rows of bench/peers/cpu.mjs (seed CNN b1/b32, MLP b1/b64,
// small ResNet b1/b16), each compiled once and run alternately with setNumThreads(1) and
// setNumThreads(N), so machine load falls on both alike. Prints wall and CPU-time medians, the
// speed-up of N threads over 1 (> 1: the other cores helped), how many products were split,
// and whether the outputs were bit-identical across thread counts (they must be).

import os from 'node:os';
import { summarize } from './stats.mjs';

const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const runs = Number(arg('runs', 21)), many = Number(arg('threads', os.availableParallelism()));
const only = arg('models', '')?.toLowerCase().split(',').filter(Boolean);
const WARM_MS = 600;

const { setNumThreads, getNumThreads } = await import('kiln');
const { createModel, fastPrimitives } = await import('@kiln/runtime');
const { LEVELS, runPipeline } = await import('@kiln/compiler');
const { MODELS, traceBatchDynamic } = await import('./peers/cpu-models.mjs');
const defaultThreads = getNumThreads();

/** One timed run at `t` threads: wall and CPU ms, and the output. */
function timed(model, x, t) {
  setNumThreads(t);
  const c0 = process.cpuUsage(), t0 = performance.now();
  const out = model.runSync([x])[0].data;
  const ms = performance.now() - t0, c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, out };
}

const rows = [];
for (const [name, def] of Object.entries(MODELS)) {
  if (only.length && !only.some((o) => name.toLowerCase().includes(o))) continue;
  const { model } = def.kiln();
  const compiled = createModel(runPipeline(traceBatchDynamic(model, def.input), { passes: LEVELS[2] }).graph);
  for (const batch of def.batches) {
    const x = def.input(batch);
    const t0 = performance.now();
    for (let i = 0; performance.now() - t0 < WARM_MS || i < 4; i++) timed(compiled, x, 1 + (i % 2) * (many - 1));
    const one = [], all = [], cpuOne = [], cpuAll = [];
    let identical = true, { splitCalls: splits, workerChunks: helped } = fastPrimitives().threadStats();
    for (let r = 0; r < runs; r++) {
      // Alternate which goes first, so neither always runs right after the other.
      const order = r % 2 ? [many, 1] : [1, many];
      const res = {};
      for (const t of order) res[t] = timed(compiled, x, t);
      one.push(res[1].ms); all.push(res[many].ms); cpuOne.push(res[1].cpuMs); cpuAll.push(res[many].cpuMs);
      const a = res[1].out, b = res[many].out;
      for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) { identical = false; break; }
    }
    splits = fastPrimitives().threadStats().splitCalls - splits;
    helped = fastPrimitives().threadStats().workerChunks - helped;
    rows.push({ name, batch, one: summarize(one).median, all: summarize(all).median, cpuOne: summarize(cpuOne).median, cpuAll: summarize(cpuAll).median, splits: splits / runs, helped: helped / runs, identical });
    process.stderr.write(`bench/threads: ${name}, batch ${batch} done\n`);
  }
}
setNumThreads(1);

const ms = (v) => `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ms`;
console.log(`| model, batch | -O2, 1 thread | -O2, ${many} threads | ${many} vs 1 (wall) | CPU time, 1 | CPU time, ${many} | split calls per run | chunks the workers ran per run | bit-identical |`);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
for (const r of rows) {
  console.log(`| ${r.name}, ${r.batch} | ${ms(r.one)} | ${ms(r.all)} | ${(r.one / r.all).toFixed(2)}× | ${ms(r.cpuOne)} | ${ms(r.cpuAll)} | ${r.splits.toFixed(1)} | ${r.helped.toFixed(1)} | ${r.identical ? 'yes' : 'NO'} |`);
}
console.log(`\n${runs} runs per cell, 1 and ${many} threads alternating in one process, medians; ${many} vs 1 > 1 means the other cores helped. ` +
  `node ${process.version}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}; getNumThreads() default ${defaultThreads}.`);
