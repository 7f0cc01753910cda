// A file loaded from a path is read straight into the kernel memory (heap.residentBlock): its
// weights are views there, the conv kernel reads them in place, results match a load of the same
// bytes (copied the old way), and a refused file gives its block back.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeTsgraph, GraphBuilder, tensorType, TsgraphError, xxh32, xxh32StripesJs } from '@kiln/ir-spec';
import { wasmXxh32Stripes } from './checksum.js';
import { loadWith } from '../load.js';
import { readNodeSource } from '../source-node.js';
import { getNumThreads, setNumThreads, wasmKernels } from './heap.js';
import { randomFloats } from './test-helpers.js';
import { setThreadHost } from './threads.js';
import { nodeThreadHost } from './node-threads.js';

setThreadHost(nodeThreadHost); // as the Node entry point does

const dir = mkdtempSync(join(tmpdir(), 'kiln-resident-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** conv2d(x, w) + relu with a 1.2 MB weight: big enough to be read into the kernel memory. */
function convFile(): Uint8Array {
  const b = new GraphBuilder('conv');
  const x = b.input('x', tensorType('float32', [1, 128, 12, 12]));
  const w = b.param('w', { dtype: 'float32', shape: [256, 128, 3, 3], data: randomFloats(256 * 128 * 9, 1) });
  b.output('y', b.op1('relu', [b.op1('conv2d', [x, w, null], { padding: [1, 1, 1, 1] })]));
  return encodeTsgraph(b.build());
}

const heap = wasmKernels();
const shared = heap?.residentBlock(64);
if (heap && shared) heap.free(shared.byteOffset);

describe.runIf(shared)('files read into the kernel memory', () => {
  const bytes = convFile();
  const file = join(dir, 'conv.tsgraph');
  writeFileSync(file, bytes);
  const input = { data: randomFloats(128 * 144, 2), shape: [1, 128, 12, 12], dtype: 'float32' as const };

  // First (a fresh kernel instance, no worker yet).
  it('reading a big file starts the worker threads before the first run, a small one does not', async () => {
    const saved = getNumThreads();
    setNumThreads(2);
    try {
      await loadWith(file, { backend: 'cpu' }, readNodeSource); // 1.2 MB: workers wait for a split call
      expect(heap!.workersStarted).toBe(0);
      const b = new GraphBuilder('big');
      const x = b.input('x', tensorType('float32', [4]));
      const w = b.param('w', { dtype: 'float32', shape: [3 << 20], data: randomFloats(3 << 20, 3) });
      b.output('y', b.op1('add', [x, b.op1('sum', [w])]));
      const big = join(dir, 'big.tsgraph');
      writeFileSync(big, encodeTsgraph(b.build()));
      await loadWith(big, { backend: 'cpu' }, readNodeSource); // 12 MB
      expect(heap!.workersStarted).toBe(1);
    } finally {
      setNumThreads(saved);
    }
  });

  it('weights are views of the kernel memory, used in place, with the results of a copied load', async () => {
    const fromFile = await loadWith(file, { backend: 'cpu' }, readNodeSource);
    const fromBytes = await loadWith(bytes, { backend: 'cpu' }, readNodeSource);
    const w = fromFile.graph.tensors.get('w')!.data;
    expect(heap!.addressOf(w)).toBe(w.byteOffset);
    expect(heap!.addressOf(fromBytes.graph.tensors.get('w')!.data)).toBeUndefined();
    const [a] = await fromFile.run([input]);
    const [b] = await fromBytes.run([input]);
    expect(a.data).toEqual(b.data);
    expect(a.data.some((v) => v > 0)).toBe(true);
  });

  it('the WebAssembly checksum loop gives the JavaScript one\'s accumulators and hash', () => {
    const stripes = wasmXxh32Stripes(heap!);
    for (const n of [0, 15, 16, 17, 1000, 65_537, 1 << 20]) {
      const block = heap!.residentBlock(n + 3)!;
      try {
        const bytes = block.subarray(3 * (n % 2)); // aligned and unaligned starts
        const data = randomFloats(Math.ceil(bytes.length / 4), n);
        bytes.set(new Uint8Array(data.buffer, 0, bytes.length));
        const plain = bytes.slice();
        expect(stripes(bytes, bytes.length >>> 4), `${n} bytes`).toEqual(xxh32StripesJs(plain, plain.length >>> 4));
        expect(xxh32(bytes, stripes), `${n} bytes`).toBe(xxh32(plain));
      } finally {
        heap!.free(block.byteOffset);
      }
    }
  });

  it('a corrupt file is refused before use and its block is freed', async () => {
    const bad = bytes.slice();
    bad[bad.length - 5] ^= 0xff;
    const badFile = join(dir, 'bad.tsgraph');
    writeFileSync(badFile, bad);
    const before = heap!.liveBytes;
    const err = await loadWith(badFile, { backend: 'cpu' }, readNodeSource).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TsgraphError);
    expect((err as TsgraphError).code).toBe('CHECKSUM_MISMATCH');
    // Not more than before (an earlier test's block may be collected meanwhile): this one was freed.
    expect(heap!.liveBytes).toBeLessThanOrEqual(before);
  });
});
