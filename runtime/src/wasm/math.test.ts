// The WebAssembly e^x, sigmoid and tanh against ir-spec's reference (float64 Math functions
// rounded to float32), measured in ulps: dense sweeps of the whole float32 range that matters
// (e^x from underflow through the subnormals to overflow), random inputs, lengths that are not a
// multiple of 4, and the special values NaN, ±inf, ±0; plus the op entries through the fast
// primitives and the small-input fallback.

import { describe, expect, it } from 'vitest';
import { getOp, REFERENCE_PRIMITIVES, type CpuTensor } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { MIN_MATH_ELEMENTS, wasmMapMath } from './math.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

/** Distance in float32 steps (ulps at the scale of the values; crosses zero). */
const bits = new Float32Array(1), asInt = new Int32Array(bits.buffer);
function ulps(a: number, b: number): number {
  const ord = (v: number) => { bits[0] = v; const i = asInt[0]; return i < 0 ? -(i & 0x7fffffff) : i; };
  return Math.abs(ord(a) - ord(b));
}

const sweep = (lo: number, hi: number, n: number) => Float32Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));
const SPECIAL = [NaN, Infinity, -Infinity, 0, -0, 1e-30, -1e-30, 88.72283, 88.7229, 89, -87.33655, -103.9, -104, -150, 1e30, -1e30];

/** The largest ulp distance of `op` over `x` between the fast and reference kernels (NaN positions must agree). */
function worst(op: string, x: Float32Array): number {
  const heap = wasmKernels();
  if (!heap) throw new Error('no WebAssembly SIMD in this engine');
  const t: CpuTensor = { data: x, shape: [x.length], dtype: 'float32' };
  const [want] = getOp(op).cpu([t], {});
  const fast = wasmMapMath(heap, () => { throw new Error('fell back'); });
  const before = heap.liveBytes;
  const got = fast(op, t, 'float32', () => 0, () => {}).data as Float32Array;
  expect(heap.liveBytes).toBe(before);
  let m = 0;
  for (let i = 0; i < x.length; i++) {
    if (Number.isNaN(want.data[i]) || Number.isNaN(got[i])) {
      if (!(Number.isNaN(want.data[i]) && Number.isNaN(got[i]))) throw new Error(`${op}(${x[i]}) = ${got[i]}, want ${want.data[i]}`);
      continue;
    }
    if (Object.is(want.data[i], -0) !== Object.is(got[i], -0)) throw new Error(`${op}(${x[i]}) = ${got[i]}, want ${want.data[i]}`);
    const d = ulps(got[i], want.data[i]);
    if (d > m) m = d;
    if (d > 2) throw new Error(`${op}(${x[i]}) = ${got[i]}, want ${want.data[i]} (${d} ulp)`);
  }
  return m;
}

const padTo = (x: Float32Array, n: number) => { const y = new Float32Array(Math.max(n, x.length)); y.set(x); return y; };

describe('WebAssembly exp, sigmoid and tanh', () => {
  it('e^x is within 2 ulp from underflow to overflow', () => {
    worst('exp', sweep(-110, 95, 400_001));
    worst('exp', sweep(-1, 1, 100_003));
    worst('exp', randomFloats(10_001, 3).map((v) => v * 80));
    worst('exp', padTo(Float32Array.from(SPECIAL), MIN_MATH_ELEMENTS + 3));
  });

  it('sigmoid is within 2 ulp, saturating without overflow', () => {
    worst('sigmoid', sweep(-120, 40, 200_001));
    worst('sigmoid', sweep(-2, 2, 100_001));
    worst('sigmoid', padTo(Float32Array.from(SPECIAL), MIN_MATH_ELEMENTS + 1));
  });

  it('tanh is within 2 ulp, odd, and exact at 0 and the ends', () => {
    worst('tanh', sweep(-12, 12, 200_001));
    worst('tanh', sweep(-0.7, 0.7, 100_001));
    worst('tanh', sweep(-1e-3, 1e-3, 10_001));
    worst('tanh', padTo(Float32Array.from(SPECIAL), MIN_MATH_ELEMENTS + 2));
  });

  it('gives every element the same value whatever its position or the length', () => {
    const heap = wasmKernels()!;
    const fast = wasmMapMath(heap, REFERENCE_PRIMITIVES.mapUnary);
    const x = randomFloats(1003, 7).map((v) => v * 10);
    for (const op of ['exp', 'sigmoid', 'tanh']) {
      const whole = fast(op, { data: x, shape: [1003], dtype: 'float32' }, 'float32', () => 0, () => {}).data;
      const part = fast(op, { data: x.subarray(1, 1000), shape: [999], dtype: 'float32' }, 'float32', () => 0, () => {}).data;
      expect(Array.from(part)).toEqual(Array.from(whole.subarray(1, 1000)));
    }
  });

  it('runs the op entries through the fast primitives, small inputs in JavaScript', () => {
    const prims = fastPrimitives();
    for (const op of ['exp', 'sigmoid', 'tanh']) {
      const big: CpuTensor = { data: randomFloats(3 * 517, 9).map((v) => v * 6), shape: [3, 517], dtype: 'float32' };
      const [want] = getOp(op).cpu([big], {});
      const [got] = getOp(op).cpu([big], {}, { prims });
      expect(got.shape).toEqual([3, 517]);
      for (let i = 0; i < want.data.length; i++) expect(ulps(got.data[i], want.data[i])).toBeLessThanOrEqual(2);
      const small: CpuTensor = { data: randomFloats(MIN_MATH_ELEMENTS - 1, 10), shape: [MIN_MATH_ELEMENTS - 1], dtype: 'float32' };
      expect(Array.from(getOp(op).cpu([small], {}, { prims })[0].data)).toEqual(Array.from(getOp(op).cpu([small], {})[0].data));
    }
  });
});
