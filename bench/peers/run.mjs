// Kiln against its WebGPU peers on the seed ResearchModel (eval, [N,3,32,32]) at batch 1 and 32:
// Kiln -O0 and -O2, onnxruntime-web's WebGPU EP and tfjs-webgpu, with the same weights, on the
// same Dawn GPU, in one process. Invariant: no row is timed before its logits matched Kiln's
// eager forward pass within TOLERANCE (else the script exits non-zero); timed runs are
// interleaved round-robin across runtimes (a rotating start), so load on the machine falls on all
// rows alike; one idle interval timer stays alive throughout, for every row (see KEEP_AWAKE).
// Run with `npm run bench:peers` (builds, then installs bench/'s own dependencies). `--runs=N`
// sets the timed runs at batch 32 (default 3; batch 1 gets 2N+1).

import { loadavg } from 'node:os';
import { summarize } from '../stats.mjs';
import { adapterName, installGpu } from './gpu.mjs';
import { createKilnPeer } from './kiln.mjs';
import { maxAbsDiff, seedInput, seedModel } from './model.mjs';
import { createOrtPeer } from './ort.mjs';
import { createTfjsPeer, toNhwc } from './tfjs.mjs';

const TOLERANCE = 1e-3;
const log = (s) => process.stderr.write(`${s}\n`);
const arg = process.argv.find((a) => a.startsWith('--runs='));
const runs32 = arg ? Number(arg.slice('--runs='.length)) : 3;
if (!Number.isInteger(runs32) || runs32 < 1) throw new Error(`bench/peers: --runs must be a positive integer, got '${arg}'`);
const BATCHES = [{ n: 1, runs: 2 * runs32 + 1 }, { n: 32, runs: runs32 }];

/**
 * With no timer pending, Node's event loop stalls onnxruntime-web's waits on Dawn (its session
 * took 70-170 s to create here instead of 1-3 s, and its runs slowed too); a browser's event
 * loop never idles like that. An idle interval, alive for all rows alike, keeps Node's loop in
 * the same state.
 */
const KEEP_AWAKE = setInterval(() => {}, 60_000);

await installGpu();
const { weights, reference, graph } = seedModel();
const traced = graph();

/** Each runtime with its load time (model/session creation: Kiln compiles every shader here, the peers at first run). */
const peers = [];
const makers = [
  () => createKilnPeer(traced, 0), () => createKilnPeer(traced, 2),
  () => createOrtPeer(weights), () => createTfjsPeer(weights),
];
for (const make of makers) {
  const t0 = performance.now();
  const peer = await make();
  peers.push({ peer, loadMs: performance.now() - t0, layout: peer.name.startsWith('tfjs') ? 'nhwc' : 'nchw' });
  log(`loaded ${peer.name} in ${(performance.now() - t0).toFixed(0)} ms`);
}
const kilnO2 = peers[1].peer.name;

const rows = [];
const failures = [];
for (const { n, runs } of BATCHES) {
  const nchw = seedInput(n);
  const inputs = { nchw, nhwc: toNhwc(nchw) };
  const ref = reference(nchw);
  // The first run of each runtime: checks the logits and warms up (the peers compile shaders here).
  for (const p of peers) {
    const before = p.peer.device?.stats.dispatches;
    const t0 = performance.now();
    const out = await p.peer.run(inputs[p.layout]);
    const firstMs = performance.now() - t0;
    const dispatches = p.peer.device ? p.peer.device.stats.dispatches - before : undefined;
    const diff = maxAbsDiff(out, ref);
    log(`batch ${n}: ${p.peer.name} max |logits - Kiln eager| = ${diff.toExponential(2)} (first run ${firstMs.toFixed(0)} ms)`);
    if (!(diff <= TOLERANCE)) failures.push(`${p.peer.name} at batch ${n}: max abs diff ${diff} > ${TOLERANCE}`);
    rows.push({ name: p.peer.name, n, diff, firstMs, samples: [], dispatches });
  }
  if (failures.length) break;
  const at = rows.length - peers.length;
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < peers.length; k++) {
      const i = (k + r) % peers.length;
      const t0 = performance.now();
      await peers[i].peer.run(inputs[peers[i].layout]);
      rows[at + i].samples.push(performance.now() - t0);
    }
    log(`batch ${n}: round ${r + 1}/${runs} done`);
  }
}
for (const p of peers) await p.peer.release();
clearInterval(KEEP_AWAKE);

if (failures.length) {
  console.error(`bench/peers: outputs disagree with Kiln's eager forward pass:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}

const fmt = (ms) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));
console.log(`seed ResearchModel (eval), input [N,3,32,32], same weights everywhere; WebGPU adapter: ${await adapterName()}; load average at end ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log('| runtime | batch | median ms (min-max, runs) | Kiln -O2 speedup | dispatches/run | first run ms | load ms | max abs diff vs eager |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  const s = summarize(r.samples);
  const o2 = summarize(rows.find((q) => q.n === r.n && q.name === kilnO2).samples);
  const load = peers.find((p) => p.peer.name === r.name).loadMs;
  console.log(`| ${r.name} | ${r.n} | ${fmt(s.median)} (${fmt(s.min)}-${fmt(s.max)}, ${s.runs}) | ${(s.median / o2.median).toFixed(2)}x | ${r.dispatches ?? '-'} | ${fmt(r.firstMs)} | ${r.n === 1 ? fmt(load) : '-'} | ${r.diff.toExponential(1)} |`);
}
for (const { n } of BATCHES) {
  const median = (name) => summarize(rows.find((q) => q.n === n && q.name === name).samples).median;
  const others = rows.filter((q) => q.n === n && q.name !== kilnO2).map((q) => `${(median(q.name) / median(kilnO2)).toFixed(2)}x faster than ${q.name}`);
  console.log(`batch ${n}: ${kilnO2} is ${others.join(', ')}`);
}
console.log('Kiln -O2 speedup = this row\'s median / Kiln -O2\'s median at the same batch (>1: Kiln -O2 is faster). load = model/session creation (Kiln compiles all its shaders there; the peers compile theirs during the first run).');
