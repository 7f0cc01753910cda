// Winograd weight transforms as background jobs (winograd.ts `prepare`, threads.ts jobs): with
// worker threads, the first call of a pinned weight's conv defers its transform (posted when the
// run ends) and runs the direct conv — the direct kernel's exact results — and every later call
// gives the F(4×4) kernel's exact results, whether a worker made the transform or the call had to
// (never posted); at one thread nothing is posted: the first call is the direct conv too, and the
// transform is made on this thread in idle time after the run (a timer tick).
// Freeing a transform drops its job; a loaded model run at once matches its later runs to the
// Winograd bound on 1 and 2 threads; a process whose model left transforms pending exits by itself.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeTsgraph, GraphBuilder, tensorType } from '@kiln/ir-spec';
import { getNumThreads, setNumThreads, wasmKernels } from './heap.js';
import { PinnedArrays } from './pinned.js';
import { wasmConv2d } from './conv.js';
import { wasmWinograd4 } from './winograd.js';
import { setThreadHost } from './threads.js';
import { nodeThreadHost } from './node-threads.js';
import { loadWith } from '../load.js';
import { readNodeSource } from '../source-node.js';
import { randomFloats } from './test-helpers.js';

// What the Node entry point (runtime/src/index.ts) installs.
setThreadHost(nodeThreadHost);

const heap = wasmKernels()!;
const dir = mkdtempSync(join(tmpdir(), 'kiln-wino-jobs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** 64 → 64 channels at 16×16, padding 1: F(4×4) applies (winograd4Applies). */
const d = { N: 1, C: 64, H: 16, W: 16, Cout: 64, G: 1, OH: 16, OW: 16, win: { kh: 3, kw: 3, sh: 1, sw: 1, pt: 1, pl: 1, dh: 1, dw: 1 } };

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function withThreads<T>(n: number, f: () => T): T {
  const saved = getNumThreads();
  setNumThreads(n);
  try { return f(); } finally { setNumThreads(saved); }
}

describe('Winograd weight transforms as background jobs', () => {
  const x = randomFloats(64 * 256, 1), b = randomFloats(64, 3);
  // The two kernels, weights not pinned (so never deferred): what each call must equal bit for bit.
  const direct = (w: Float32Array) => wasmConv2d(heap, undefined, () => false, () => false)(x, w, b, d, { relu: true });
  const f4 = (w: Float32Array) => wasmWinograd4(heap)(x, w, b, d, { relu: true });

  it('the first call runs the direct conv while a worker makes the transform; later calls are F(4×4)', async () => {
    const w = randomFloats(64 * 64 * 9, 2), pins = new PinnedArrays(heap), conv = wasmConv2d(heap, pins);
    pins.pin(w);
    const before = heap.jobStats;
    const first = withThreads(2, () => conv(x, w, b, d, { relu: true }));
    expect(first).toEqual(direct(w));
    expect(heap.jobStats.posted).toBe(before.posted);
    heap.releaseJobs(); // what the CPU device does when a run ends
    expect(heap.jobStats.posted).toBe(before.posted + 1);
    await until(() => heap.jobStats.byWorkers > before.byWorkers, 'a worker to take the job');
    const want = f4(w);
    expect(withThreads(2, () => conv(x, w, b, d, { relu: true }))).toEqual(want);
    expect(withThreads(1, () => conv(x, w, b, d, { relu: true }))).toEqual(want);
    expect(heap.jobStats.posted).toBe(before.posted + 1);
  });

  it('a transform not posted yet is made by the call that needs it', () => {
    const w = randomFloats(64 * 64 * 9, 4), pins = new PinnedArrays(heap), conv = wasmConv2d(heap, pins);
    pins.pin(w);
    const before = heap.jobStats;
    withThreads(2, () => conv(x, w, b, d, { relu: true })); // deferred; no run end posts it
    expect(withThreads(2, () => conv(x, w, b, d, { relu: true }))).toEqual(f4(w));
    expect(heap.jobStats.posted).toBe(before.posted);
  });

  it('at one thread nothing is posted: the first call runs the direct conv and idle time makes the transform', async () => {
    const w = randomFloats(64 * 64 * 9, 5), pins = new PinnedArrays(heap), conv = wasmConv2d(heap, pins);
    pins.pin(w);
    const before = heap.jobStats;
    expect(withThreads(1, () => conv(x, w, b, d, { relu: true }))).toEqual(direct(w));
    withThreads(1, () => heap.releaseJobs()); // the run ends
    expect(heap.jobStats.madeIdle).toBe(before.madeIdle); // not during the run's end: in a later tick
    await until(() => heap.jobStats.madeIdle > before.madeIdle, 'an idle tick to make the transform');
    expect(withThreads(1, () => conv(x, w, b, d, { relu: true }))).toEqual(f4(w));
    expect(heap.jobStats.posted).toBe(before.posted);
  });

  it('freeing a deferred transform drops it (or its job), and job slots are reused', () => {
    const live = heap.liveBytes;
    for (let i = 0; i < 100; i++) {
      const copy = heap.alloc(9 * 4 * 4);
      const ticket = withThreads(2, () => heap.winograd4WeightsLater(4, copy, copy))!;
      expect(ticket).toBeLessThan(0);
      if (i % 3 > 0) heap.releaseJobs(); // posted: a worker may be running it
      if (i % 3 === 2) expect(heap.settle(ticket)).toBeGreaterThan(0);
      heap.free(ticket); // drops the job or waits for the worker running it; frees U and the copy
    }
    expect(heap.liveBytes).toBe(live);
  });
});

/** conv → relu → conv (128 channels at 16×16: 1.2 MB of weights, read into the kernel memory). */
function twoConvs(): Uint8Array {
  const b = new GraphBuilder('two-convs');
  const x = b.input('x', tensorType('float32', [1, 128, 16, 16]));
  const w1 = b.param('w1', { dtype: 'float32', shape: [128, 128, 3, 3], data: randomFloats(128 * 128 * 9, 6).map((v) => v / 12) });
  const w2 = b.param('w2', { dtype: 'float32', shape: [128, 128, 3, 3], data: randomFloats(128 * 128 * 9, 7).map((v) => v / 12) });
  const h = b.op1('relu', [b.op1('conv2d', [x, w1, null], { padding: [1, 1, 1, 1] })]);
  b.output('y', b.op1('conv2d', [h, w2, null], { padding: [1, 1, 1, 1] }));
  return encodeTsgraph(b.build());
}

describe('a loaded conv model run at once', () => {
  const file = join(dir, 'two-convs.tsgraph');
  writeFileSync(file, twoConvs());
  const input = { data: randomFloats(128 * 256, 8), shape: [1, 128, 16, 16], dtype: 'float32' as const };

  for (const threads of [1, 2]) {
    it(`gives its later runs' outputs to the Winograd bound on ${threads} thread(s)`, async () => {
      const saved = getNumThreads();
      setNumThreads(threads);
      try {
        const posted = heap.jobStats.posted;
        const model = await loadWith(file, { backend: 'cpu' }, readNodeSource);
        const [first] = await model.run([input]);
        expect(heap.jobStats.posted - posted).toBe(threads > 1 ? 2 : 0);
        const [second] = await model.run([input]);
        const [third] = await model.run([input]);
        expect(third.data).toEqual(second.data);
        let worst = 0;
        for (let i = 0; i < first.data.length; i++) worst = Math.max(worst, Math.abs(first.data[i] - second.data[i]) / (1 + Math.abs(second.data[i])));
        expect(worst).toBeLessThan(1e-4);
      } finally {
        setNumThreads(saved);
      }
    });
  }

  // The built package (what a user runs): a process that loaded a model and ran it once — its
  // transforms then pending on a worker — ends by itself, also when the model was collected.
  const built = fileURLToPath(new URL('../../dist/index.js', import.meta.url));
  it.runIf(existsSync(built))('a process with transforms pending exits by itself', () => {
    const script = `
      const { load, setNumThreads } = await import(${JSON.stringify(built)});
      setNumThreads(2);
      let model = await load(${JSON.stringify(file)}, { backend: 'cpu' });
      const x = { data: new Float32Array(128 * 256).fill(0.5), shape: [1, 128, 16, 16], dtype: 'float32' };
      await model.run([x]);
      if (process.argv.includes('collect')) { model = null; globalThis.gc(); await new Promise((r) => setTimeout(r, 10)); globalThis.gc(); }
      console.log('ran');`;
    // A file, not `--input-type=module -e`: eval'd worker_threads inherit that flag and fail to start.
    const main = join(dir, 'pending.mjs');
    writeFileSync(main, script);
    for (const mode of ['keep', 'collect']) {
      const r = spawnSync(process.execPath, ['--expose-gc', main, mode], { encoding: 'utf8', timeout: 60_000 });
      expect(r.error, `${mode}: ${r.stderr}`).toBeUndefined();
      expect(r.status, `${mode}: ${r.stderr}`).toBe(0);
      expect(r.stdout.trim()).toBe('ran');
    }
  }, 130_000);
});
