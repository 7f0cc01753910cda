// `npm run fuzz -- [--count N] [--seed S] [--from I] [--scale X] [--hang-ms MS] [--memory-mb MB]
// [--max-run-ms MS] [--max-live-mb MB] [--max-tensor-mb MB] [--workers N] [--chunk N]
// [--threads N] [--families a,b]`: the long
// load+run campaign, in `--workers` child processes (default: one per core), each running the
// CPU kernels on `--threads` threads (default 1), over all families or only those named. Prints
// progress every 1000 cases and the outcome table per family at the end; exits 1 when any case
// ended untyped, hung, blew up memory or crashed the child.

import { availableParallelism } from 'node:os';
import { formatReport, isBad, runCampaign } from './campaign.js';

const args = process.argv.slice(2);
function opt(name: string, dflt: number): number {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  if (!Number.isFinite(v)) throw new Error(`--${name} takes a number, got ${args[i + 1]}`);
  return v;
}
const known = new Set(['count', 'seed', 'from', 'scale', 'hang-ms', 'memory-mb', 'max-run-ms', 'max-live-mb', 'max-tensor-mb', 'workers', 'chunk', 'threads', 'families']);
for (const a of args) if (a.startsWith('--') && !known.has(a.slice(2))) throw new Error(`unknown option ${a} (known: ${[...known].map((k) => `--${k}`).join(', ')})`);

const count = opt('count', 10_000), seed = opt('seed', 17), from = opt('from', 0), scale = opt('scale', 4);
const limits = { maxRunMs: opt('max-run-ms', 1000), maxLiveBytes: opt('max-live-mb', 128) * 2 ** 20, maxTensorBytes: opt('max-tensor-mb', 64) * 2 ** 20 };
const hangMs = opt('hang-ms', 5000), memoryBytes = opt('memory-mb', 1536) * 2 ** 20;
const workers = opt('workers', availableParallelism()), chunk = opt('chunk', 500), threads = opt('threads', 1);
const fi = args.indexOf('--families'), families = fi < 0 ? undefined : (args[fi + 1] ?? '').split(',').filter(Boolean);
console.log(`load+run fuzz: ${count} cases from ${from}, seed ${seed}, scale ${scale}; runtime limits maxRunMs ${limits.maxRunMs}, maxLiveBytes ${limits.maxLiveBytes / 2 ** 20} MiB, maxTensorBytes ${limits.maxTensorBytes / 2 ** 20} MiB; watchdog: hang > ${hangMs} ms (confirmed alone), memory > ${memoryBytes / 2 ** 20} MiB; ${workers} worker(s) of ${threads} thread(s), chunks of ${chunk}${families ? `; families ${families.join(', ')}` : ''}`);
const report = await runCampaign({
  count, seed, from, scale, limits, hangMs, memoryBytes, workers, chunk, threads, families, progressEvery: 1000,
  onProgress: (done, r) => {
    let bad = 0;
    for (const m of r.counts.values()) for (const [o, n] of m) if (isBad(o)) bad += n;
    console.log(`  ${done} cases, ${bad} bad, ${((performance.now()) / 1000).toFixed(0)} s`);
    // The whole table now and then: a campaign stopped early still leaves its counts.
    if (done % 5000 === 0) console.log(formatReport({ ...r, wallMs: performance.now() }, `\nafter ${done} cases (seed ${seed}, from ${from})`));
  },
});
console.log(formatReport(report, `\nload+run fuzz: ${report.cases} cases (seed ${seed}, from ${from})`));
let bad = 0;
for (const m of report.counts.values()) for (const [o, n] of m) if (isBad(o)) bad += n;
process.exitCode = bad ? 1 : 0;
