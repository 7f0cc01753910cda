// Under a run's deadline the WebAssembly kernels cut a big call into chunks they can stop
// between (heap.ts, conv.ts, depthwise.ts, winograd.ts); far from the deadline those chunks must
// give the unsplit call's results bit for bit, on 1 thread and on 2: GEMM by rows and by panels,
// the direct convolution (by blocks of output rows when a plane is too big), the packed one in
// blocks of output rows, the depthwise one by channel blocks and planes, and Winograd F(4×4)
// tile chunk by tile chunk. Past the deadline a call throws
// KernelDeadline and returns its kernel memory.

import { afterEach, describe, expect, it } from 'vitest';
import { KernelDeadline, setKernelDeadline, type Conv2dFn } from '@kiln/ir-spec';
import { getNumThreads, setNumThreads, wasmKernels } from './heap.js';
import { WasmGemm } from './gemm.js';
import { wasmConv2d } from './conv.js';
import { wasmDepthwiseConv2d } from './depthwise.js';
import { wasmWinograd4 } from './winograd.js';
import { PinnedArrays } from './pinned.js';
import { setThreadHost } from './threads.js';
import { nodeThreadHost } from './node-threads.js';
import { randomFloats } from './test-helpers.js';

setThreadHost(nodeThreadHost);
const saved = getNumThreads();
afterEach(() => { setKernelDeadline(Infinity); setNumThreads(saved); });

/** f() without a deadline, then with one an hour away: the same bits. */
function sameUnderDeadline(f: () => Float32Array): void {
  setKernelDeadline(Infinity);
  const want = f();
  setKernelDeadline(performance.now() + 3_600_000);
  const got = f();
  setKernelDeadline(Infinity);
  expect(got.length).toBe(want.length);
  let diff = 0;
  for (let i = 0; i < got.length; i++) if (!Object.is(got[i], want[i])) diff++;
  expect(diff, 'elements that differ').toBe(0);
}

type Dims = Parameters<Conv2dFn>[3];
const conv = (N: number, C: number, H: number, W: number, Cout: number, G: number, k: number, s: number, p: number): Dims => {
  const O = (n: number) => Math.floor((n + 2 * p - k) / s) + 1;
  return { N, C, H, W, Cout, G, OH: O(H), OW: O(W), win: { kh: k, kw: k, sh: s, sw: s, pt: p, pl: p, dh: 1, dw: 1 } };
};

for (const threads of [1, 2]) {
  describe(`kernel chunks under a deadline, ${threads} thread(s)`, () => {
    const heap = wasmKernels()!;
    it('GEMM by rows and by panels', () => {
      setNumThreads(threads);
      const g = new WasmGemm(heap);
      for (const [M, N, K] of [[512, 256, 600], [8, 4096, 1100]]) {
        const a = randomFloats(M * K, 1), b = randomFloats(K * N, 2);
        sameUnderDeadline(() => { const c = new Float32Array(M * N); g.gemm(M, N, K, a, 0, K, 1, b, 0, N, 1, c, 0, N); return c; });
      }
    });
    it('direct and packed convolutions', () => {
      setNumThreads(threads);
      for (const d of [conv(2, 16, 64, 64, 32, 1, 5, 1, 2), conv(1, 2, 150, 150, 8, 1, 25, 2, 3), conv(1, 1, 200, 200, 4, 1, 40, 1, 0), conv(2, 2, 300, 300, 8, 2, 31, 1, 15)]) {
        const x = randomFloats(d.N * d.C * d.H * d.W, 3), w = randomFloats(d.Cout * (d.C / d.G) * d.win.kh * d.win.kw, 4), b = randomFloats(d.Cout, 5);
        sameUnderDeadline(() => wasmConv2d(heap)(x, w, b, d));
      }
    });
    it('depthwise convolution by blocks of channels and by planes', () => {
      setNumThreads(threads);
      // 64 channels of 1 plane each; 2 channels of 16 planes (each channel past the chunk).
      for (const d of [conv(2, 64, 96, 96, 64, 64, 9, 1, 4), conv(1, 2, 200, 200, 32, 2, 21, 1, 10)]) {
        const x = randomFloats(d.N * d.C * d.H * d.W, 6), w = randomFloats(d.Cout * d.win.kh * d.win.kw, 7), b = randomFloats(d.Cout, 8);
        const dw = wasmDepthwiseConv2d(heap, undefined, () => { throw new Error('not depthwise'); });
        sameUnderDeadline(() => dw(x, w, b, d, { relu: true }));
      }
    });
    it('Winograd F(4×4) tile chunk by tile chunk', () => {
      setNumThreads(threads);
      const d = conv(1, 96, 64, 64, 64, 1, 3, 1, 1);
      const x = randomFloats(d.N * d.C * d.H * d.W, 9), w = randomFloats(d.Cout * d.C * 9, 10), b = randomFloats(d.Cout, 11);
      const pins = new PinnedArrays(heap);
      pins.pin(w);
      sameUnderDeadline(() => wasmWinograd4(heap, pins)(x, w, b, d));
    });
    it('past the deadline a call throws KernelDeadline and frees its memory', () => {
      setNumThreads(threads);
      const g = new WasmGemm(heap);
      const [M, N, K] = [1024, 1024, 1024];
      const a = randomFloats(M * K, 1), b = randomFloats(K * N, 2), c = new Float32Array(M * N);
      g.gemm(M, N, K, a, 0, K, 1, b, 0, N, 1, c, 0, N); // packs and keeps nothing it needs later
      const before = heap.liveBytes;
      setKernelDeadline(performance.now() - 1);
      expect(() => g.gemm(M, N, K, a, 0, K, 1, b, 0, N, 1, c, 0, N)).toThrow(KernelDeadline);
      setKernelDeadline(Infinity);
      expect(heap.liveBytes).toBe(before);
    });
  });
}
