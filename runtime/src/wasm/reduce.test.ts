// The WebAssembly sum and batch-norm primitives against ir-spec's reference loops, through the
// op entries (sum, batch_norm_stats, batch_norm): every reduced-dim pattern the kernel takes
// (last dim, per channel of NCHW, leading dims, all dims, size-1 dims between) and one it leaves
// to JavaScript, ragged sizes, batch 1, odd channel counts. Sums accumulate in float64 in another
// order than the reference, so they agree to float32 rounding (one ulp); batch_norm bit for bit,
// also when it writes into an offered result buffer.

import { describe, expect, it } from 'vitest';
import { getOp, type CpuTensor, type TypedArray } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { sumPattern } from './reduce.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

const f32 = (shape: number[], seed: number, offset = 0): CpuTensor => {
  const data = randomFloats(shape.reduce((a, d) => a * d, 1), seed);
  for (let i = 0; i < data.length; i++) data[i] += offset;
  return { data, shape, dtype: 'float32' };
};

function expectClose(got: TypedArray, want: TypedArray, ulps: number): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < got.length; i++) {
    const tol = ulps * 2 ** -23 * Math.abs(want[i]);
    if (!(Math.abs(got[i] - want[i]) <= tol)) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]} (±${tol})`);
  }
}

const SUMS: [number[], number[] | null, boolean][] = [
  [[37, 131], [1], false], // last dim
  [[2, 19, 15, 15], [0, 2, 3], true], // per channel (batch-norm backward), keepdim
  [[1, 7, 33, 29], [0, 2, 3], false], // batch 1
  [[301, 45], [0], false], // column sums (odd count of columns)
  [[6, 5, 1, 7, 41], [0, 1], false], // leading dims
  [[3, 1, 9, 11, 14], [3, 4], false], // trailing dims with a size-1 dim before
  [[17, 23, 19], null, false], // every dim
  [[9, 10, 11, 12], [0, 2], false], // [R, K, R, K]: falls back to JavaScript
];

describe('WebAssembly sum and batch-norm primitives', () => {
  const heap = wasmKernels();
  it('reads reduced-dim patterns as [K0, R1, K1, R2]', () => {
    expect(sumPattern([2, 19, 15, 15], [0, 2, 3])).toEqual([1, 2, 19, 225]);
    expect(sumPattern([37, 131], [1])).toEqual([37, 131, 1, 1]);
    expect(sumPattern([301, 45], [0])).toEqual([1, 301, 45, 1]);
    expect(sumPattern([3, 1, 9, 11, 14], [3, 4])).toEqual([27, 154, 1, 1]);
    expect(sumPattern([9, 10, 11, 12], [0, 2])).toBeNull();
  });

  for (const [shape, dim, keepdim] of SUMS) {
    it(`sum of [${shape}] over ${JSON.stringify(dim)} agrees with the float64 reference`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const x = f32(shape, shape.length + shape[1]);
      const before = heap.liveBytes;
      const [want] = getOp('sum').cpu([x], { dim, keepdim });
      const [got] = getOp('sum').cpu([x], { dim, keepdim }, { prims: fastPrimitives() });
      expect(got.shape).toEqual(want.shape);
      expectClose(got.data, want.data, 1);
      expect(heap.liveBytes).toBe(before);
    });
  }

  for (const shape of [[32, 32, 8, 8], [1, 13, 17, 19], [5, 3, 31, 29], [300, 17]]) {
    it(`batch_norm_stats and batch_norm of [${shape}] agree with the reference`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const x = f32(shape, 7, 3); // an offset mean: the two-pass variance must not cancel
      const C = shape[1], prims = fastPrimitives();
      const [wm, wv] = getOp('batch_norm_stats').cpu([x], {});
      const [gm, gv] = getOp('batch_norm_stats').cpu([x], {}, { prims });
      expectClose(gm.data, wm.data, 1);
      expectClose(gv.data, wv.data, 1);
      const inputs = [x, wm, wv, f32([C], 8), f32([C], 9)];
      const [want] = getOp('batch_norm').cpu(inputs, { eps: 1e-5 });
      const [got] = getOp('batch_norm').cpu(inputs, { eps: 1e-5 }, { prims });
      expectClose(got.data, want.data, 0);
      // Into the buffer the runtime offers (a compiled graph's slot), by both kernels: no copy.
      for (const ctx of [{}, { prims }]) {
        const slot = new Float32Array(x.data.length).fill(Number.NaN); // stale contents
        const [into] = getOp('batch_norm').cpu(inputs, { eps: 1e-5 }, { ...ctx, out: [slot] });
        expect(into.data).toBe(slot);
        expectClose(into.data, want.data, 0);
      }
    });
  }
});
