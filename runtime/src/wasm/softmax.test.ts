// softmax and logSoftmax on the CPU device's WebAssembly primitives against ir-spec's reference,
// composed as packages/core composes them (amax, sub, exp, sum, then div or log and sub: there is
// no softmax op, DESIGN.md mechanism 2), along the last, a middle and the first dim; random shapes
// with ragged sizes, batch 1, large-magnitude inputs (±1e4: the max subtraction must keep e^x
// finite), rows with −inf entries and a row that is all −inf but one. Results agree within a few
// float32 ulps of the row's largest value: exp is within 2 ulp, sums are float64 in both.

import { describe, expect, it } from 'vitest';
import { getOp, type CpuPrimitives, type CpuTensor } from '@kiln/ir-spec';
import { fastPrimitives } from './primitives.js';
import { wasmKernels } from './heap.js';
import { randomFloats } from './test-helpers.js';

const op = (name: string, inputs: (CpuTensor | null)[], attrs: object, prims?: CpuPrimitives) => getOp(name).cpu(inputs, attrs, prims ? { prims } : undefined)[0];

function softmax(x: CpuTensor, dim: number, log: boolean, prims?: CpuPrimitives): CpuTensor {
  const m = op('amax', [x], { dim: [dim], keepdim: true }, prims);
  const s = op('sub', [x, m], {}, prims);
  const e = op('exp', [s], {}, prims);
  const z = op('sum', [e], { dim: [dim], keepdim: true }, prims);
  return log ? op('sub', [s, op('log', [z], {}, prims)], {}, prims) : op('div', [e, z], {}, prims);
}

function input(shape: number[], seed: number, scale: number, negInf: boolean): CpuTensor {
  const data = randomFloats(shape.reduce((a, d) => a * d, 1), seed).map((v) => v * scale);
  if (negInf) for (let i = 3; i < data.length; i += 7) data[i] = -Infinity;
  return { data, shape, dtype: 'float32' };
}

const CASES: [number[], number, number, boolean][] = [
  [[64, 1000], 1, 8, false], // a classifier's logits
  [[1, 10], 1, 3, false], // batch 1 (below the kernels' sizes: JavaScript)
  [[7, 333], 1, 1e4, false], // large magnitudes
  [[5, 517], -1, 30, true], // −inf entries
  [[3, 129, 17], 1, 20, false], // a middle dim
  [[301, 9], 0, 5, true], // the first dim, −inf entries
  [[2, 4, 31, 37], 3, 50, false],
];

describe('softmax and logSoftmax on the WebAssembly primitives', () => {
  const heap = wasmKernels();
  for (const [shape, dim, scale, negInf] of CASES) {
    for (const log of [false, true]) {
      it(`${log ? 'logSoftmax' : 'softmax'} of [${shape}] along ${dim}, |x| ≤ ${scale}${negInf ? ', −inf entries' : ''}`, () => {
        if (!heap) throw new Error('no WebAssembly SIMD in this engine');
        const x = input(shape, shape[0] + shape.length, scale, negInf), d = dim < 0 ? shape.length + dim : dim;
        const want = softmax(x, d, log).data, got = softmax(x, d, log, fastPrimitives()).data;
        expect(got.length).toBe(want.length);
        for (let i = 0; i < got.length; i++) {
          if (!Number.isFinite(want[i])) { expect(got[i]).toBe(want[i]); continue; }
          // softmax ∈ [0, 1]: a few ulps of 1; logSoftmax: a few ulps of its magnitude.
          const tol = (log ? Math.max(1, Math.abs(want[i])) : 1) * 4 * 2 ** -23;
          if (!(Math.abs(got[i] - want[i]) <= tol)) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
        }
      });
    }
  }

  it('keeps a row that is all −inf but one exact (one-hot softmax, zero logSoftmax at the peak)', () => {
    const data = new Float32Array(4 * 600).fill(-Infinity);
    for (let r = 0; r < 4; r++) data[r * 600 + 17 * r] = 1e30;
    const x: CpuTensor = { data, shape: [4, 600], dtype: 'float32' };
    const p = softmax(x, 1, false, fastPrimitives()).data, l = softmax(x, 1, true, fastPrimitives()).data;
    for (let r = 0; r < 4; r++) {
      expect(p[r * 600 + 17 * r]).toBe(1);
      expect(l[r * 600 + 17 * r]).toBe(0);
      expect(p.subarray(r * 600, r * 600 + 600).reduce((a, v) => a + v, 0)).toBe(1);
    }
  });
});
