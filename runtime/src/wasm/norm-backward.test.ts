// The WebAssembly batch_norm backward against ir-spec's reference through the op entry
// (batch_norm_backward), in both of its uses: batch norm in training ([N, C, H, W], odd channel
// counts, ragged planes, batch 1, with and without weight, with a relu output mask) and layer
// norm (packages/core normalizes [1, rows, D] with batch_norm: C = rows, ragged D), plus layer
// norm's forward in that layout (batch_norm_stats + batch_norm) with a large offset. Sums are
// float64 in another order than the reference's, so dx, dweight and dbias agree within one ulp.

import { describe, expect, it } from 'vitest';
import { getOp, type CpuTensor, type TypedArray } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

const f32 = (shape: number[], seed: number, scale = 1, offset = 0): CpuTensor =>
  ({ data: randomFloats(shape.reduce((a, d) => a * d, 1), seed).map((v) => v * scale + offset), shape, dtype: 'float32' });

/** Within `ulps` float32 ulps of the larger of |want| and `floor` (dx terms cancel: the floor is the terms' scale). */
function expectClose(got: TypedArray, want: TypedArray, ulps: number, floor: number, what: string): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < got.length; i++) {
    const tol = ulps * 2 ** -23 * Math.max(Math.abs(want[i]), floor);
    if (!(Math.abs(got[i] - want[i]) <= tol)) throw new Error(`${what}[${i}] = ${got[i]}, want ${want[i]} (±${tol})`);
  }
}

const CASES: { shape: number[]; weight: boolean; relu: boolean; what: string }[] = [
  { shape: [8, 16, 14, 14], weight: true, relu: false, what: 'batch norm' },
  { shape: [1, 13, 17, 19], weight: true, relu: true, what: 'batch norm, batch 1, relu mask' },
  { shape: [5, 3, 31, 29], weight: false, relu: false, what: 'batch norm without weight' },
  { shape: [1, 256, 768], weight: false, relu: false, what: 'layer norm rows' },
  { shape: [1, 37, 131], weight: false, relu: true, what: 'layer norm rows, ragged D, relu mask' },
  { shape: [300, 17], weight: true, relu: false, what: 'batch norm 1d' },
];

describe('WebAssembly batch_norm backward (batch norm and layer norm gradients)', () => {
  const heap = wasmKernels();
  for (const t of CASES) {
    it(`${t.what} [${t.shape}]`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const prims = fastPrimitives(), C = t.shape[1];
      const x = f32(t.shape, 1, 2, 0.5), g = f32(t.shape, 2);
      const [mean, variance] = getOp('batch_norm_stats').cpu([x], {});
      const w = t.weight ? f32([C], 3) : null;
      const relu = t.relu ? f32(t.shape, 4) : null;
      const inputs = [g, x, mean, variance, w, relu];
      const before = heap.liveBytes;
      const want = getOp('batch_norm_backward').cpu(inputs, { eps: 1e-5 });
      const got = getOp('batch_norm_backward').cpu(inputs, { eps: 1e-5 }, { prims });
      expect(heap.liveBytes).toBe(before);
      expectClose(got[0].data, want[0].data, 2, 1, 'dx');
      expectClose(got[1].data, want[1].data, 1, 0, 'dweight');
      expectClose(got[2].data, want[2].data, 1, 0, 'dbias');
    });
  }

  it('layer norm forward in the [1, rows, D] layout equals the reference', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const prims = fastPrimitives();
    const x = f32([1, 129, 515], 7, 3, 1e3); // an offset mean: the two-pass variance must not cancel
    const [wm, wv] = getOp('batch_norm_stats').cpu([x], {});
    const [gm, gv] = getOp('batch_norm_stats').cpu([x], {}, { prims });
    expectClose(gm.data, wm.data, 1, 0, 'mean');
    expectClose(gv.data, wv.data, 1, 0, 'var');
    const [want] = getOp('batch_norm').cpu([x, wm, wv, null, null], { eps: 1e-5 });
    const [got] = getOp('batch_norm').cpu([x, wm, wv, null, null], { eps: 1e-5 }, { prims });
    expectClose(got.data, want.data, 0, 0, 'y');
  });
});
