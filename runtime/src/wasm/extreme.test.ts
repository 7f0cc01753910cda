// The WebAssembly amax/amin against ir-spec's reference through the op entries: the last dim
// (softmax's usual max), a middle dim, the first dim, leading dims, every dim, size-1 dims in
// between, ragged sizes, batch 1, −inf entries and NaN (which must propagate to its whole group),
// plus a dim pattern the kernel leaves to JavaScript. Values are equal (exact).

import { describe, expect, it } from 'vitest';
import { getOp, type CpuTensor } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

function input(shape: number[], seed: number, nans: boolean): CpuTensor {
  const data = randomFloats(shape.reduce((a, d) => a * d, 1), seed).map((v) => v * 100);
  for (let i = 5; i < data.length; i += 13) data[i] = -Infinity;
  if (nans) for (let i = 11; i < data.length; i += 997) data[i] = NaN;
  return { data, shape, dtype: 'float32' };
}

const CASES: [number[], number[] | null, boolean][] = [
  [[64, 1000], [1], false], // softmax over the last dim
  [[37, 131], [1], true],
  [[8, 1000, 16], [1], false], // a middle dim (column reduction)
  [[301, 45], [0], true], // the first dim, odd column count
  [[1, 7, 33, 29], [2, 3], false], // batch 1, trailing dims
  [[6, 5, 1, 7, 41], [0, 1], true], // leading dims
  [[3, 1, 9, 11, 14], [3, 4], false], // a size-1 dim before
  [[17, 23, 19], null, true], // every dim
  [[9, 10, 11, 12], [0, 2], false], // [R, K, R, K]: JavaScript
];

describe('WebAssembly amax and amin', () => {
  const heap = wasmKernels();
  for (const [shape, dim, nans] of CASES) {
    for (const name of ['amax', 'amin']) {
      it(`${name} of [${shape}] over ${JSON.stringify(dim)}${nans ? ' with NaN' : ''}`, () => {
        if (!heap) throw new Error('no WebAssembly SIMD in this engine');
        const x = input(shape, shape.length + shape[0], nans), before = heap.liveBytes;
        const [want] = getOp(name).cpu([x], { dim, keepdim: true });
        const [got] = getOp(name).cpu([x], { dim, keepdim: true }, { prims: fastPrimitives() });
        expect(got.shape).toEqual(want.shape);
        for (let i = 0; i < want.data.length; i++) {
          if (Number.isNaN(want.data[i])) expect(got.data[i]).toBeNaN();
          else if (got.data[i] !== want.data[i]) throw new Error(`out[${i}] = ${got.data[i]}, want ${want.data[i]}`);
        }
        expect(heap.liveBytes).toBe(before);
      });
    }
  }

  it('still refuses to reduce an empty dim', () => {
    const x: CpuTensor = { data: new Float32Array(0), shape: [3, 0], dtype: 'float32' };
    expect(() => getOp('amax').cpu([x], { dim: [1], keepdim: false }, { prims: fastPrimitives() })).toThrow(/cannot reduce an empty dimension/);
  });
});
