// The WebAssembly batch_norm_backward primitive against ir-spec's reference loops, through the op
// entry (batch_norm_backward, which jit.compile's training graphs use): with and without the
// relu mask and the weight, spatial sizes that are not a multiple of four (the scalar tails),
// inner 1 (BatchNorm1d over [N, C]), batch 1, and a size below MIN_ELEMENTS (the reference runs).
// dx agrees to float32 rounding (the float64 sums add in another order), dweight and dbias too.

import { describe, expect, it } from 'vitest';
import { getOp, type CpuTensor, type TypedArray } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

const f32 = (shape: number[], seed: number, offset = 0): CpuTensor => {
  const data = randomFloats(shape.reduce((a, d) => a * d, 1), seed);
  for (let i = 0; i < data.length; i++) data[i] += offset;
  return { data, shape, dtype: 'float32' };
};

function expectClose(got: TypedArray, want: TypedArray, what: string): void {
  expect(got.length).toBe(want.length);
  const scale = want.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
  for (let i = 0; i < got.length; i++) {
    const tol = 4 * 2 ** -23 * (Math.abs(want[i]) + 1e-6 * scale);
    if (!(Math.abs(got[i] - want[i]) <= tol)) throw new Error(`${what}[${i}] = ${got[i]}, want ${want[i]} (±${tol})`);
  }
}

const CASES: { shape: number[]; relu: boolean; weight: boolean }[] = [
  { shape: [32, 16, 8, 8], relu: true, weight: true }, // the digits CNN's first batch norm
  { shape: [5, 7, 9, 11], relu: true, weight: true }, // inner 99: scalar tail of 3
  { shape: [3, 6, 5, 5], relu: false, weight: true }, // inner 25, no relu
  { shape: [1, 13, 17, 19], relu: true, weight: false }, // batch 1, no weight
  { shape: [600, 9], relu: true, weight: true }, // inner 1: tails only
  { shape: [2, 3, 4, 4], relu: true, weight: true }, // below MIN_ELEMENTS: the reference
];

describe('WebAssembly batch_norm_backward primitive', () => {
  const heap = wasmKernels();
  it.skipIf(!heap)('matches the reference loops', () => {
    const op = getOp('batch_norm_backward');
    const fast = { prims: fastPrimitives() };
    const before = heap!.liveBytes;
    for (const [i, c] of CASES.entries()) {
      const C = c.shape[1];
      const g = f32(c.shape, 10 + i), x = f32(c.shape, 20 + i, 0.3), r = c.relu ? f32(c.shape, 30 + i) : null;
      const mean = f32([C], 40 + i), variance = f32([C], 50 + i, 1.5), w = c.weight ? f32([C], 60 + i, 1) : null;
      const args = [g, x, mean, variance, w, r];
      const want = op.cpu(args, { eps: 1e-5 }) as CpuTensor[];
      const got = op.cpu(args, { eps: 1e-5 }, fast as never) as CpuTensor[];
      const name = `${JSON.stringify(c.shape)}${c.relu ? ' relu' : ''}${c.weight ? ' weight' : ''}`;
      expectClose(got[0].data, want[0].data, `${name} dx`);
      expectClose(got[1].data, want[1].data, `${name} dweight`);
      expectClose(got[2].data, want[2].data, `${name} dbias`);
      expect(got[0].data.some((v) => v !== 0)).toBe(true);
    }
    expect(heap!.liveBytes).toBe(before);
  });

  it.skipIf(!heap)('writes dx into the offered buffer', () => {
    const op = getOp('batch_norm_backward');
    const shape = [4, 8, 10, 10];
    const out = new Float32Array(4 * 8 * 100);
    const args = [f32(shape, 1), f32(shape, 2), f32([8], 3), f32([8], 4, 1.5), f32([8], 5), f32(shape, 6)];
    const got = op.cpu(args, { eps: 1e-5 }, { prims: fastPrimitives(), out: [out] } as never) as CpuTensor[];
    expect(got[0].data).toBe(out);
  });
});
