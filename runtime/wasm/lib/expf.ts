// AssemblyScript helpers (not an entry): float32 e^x, the logistic function and tanh on four
// lanes. WebAssembly has no exp instruction, so e^x = 2^n·e^r with n = round(x·log2 e) and
// r = x − n·ln 2 (ln 2 split in two so r is exact to float32), e^r from a degree-6 polynomial on
// |r| ≤ ln2/2 (Cephes expf's coefficients), and 2^n built from exponent bits in two halves so
// results in the subnormal range and overflow to +inf come out right.
// Invariant: within 2 ulp of the correctly rounded e^x for every float32 x (tested against
// Math.exp over the whole range in runtime/src/wasm/math.test.ts); NaN stays NaN, e^−inf = 0,
// e^+inf = +inf. sigmoid and tanh follow ir-spec's formulas (no overflow at any |x|).

import { fma } from './simd';

const LOG2E: f32 = 1.44269504088896341;
const LN2_HI: f32 = 0.693359375;
const LN2_LO: f32 = -2.12194440e-4;

/**
 * v·2^n for integer lanes n in [−150, 128]: two factors 2^⌊n/2⌋ and 2^⌈n/2⌉, each a normal
 * float32, applied one after the other (2^128 alone would overflow; a subnormal result is rounded once).
 */
@inline function scale2(v: v128, n: v128): v128 {
  const half = i32x4.shr_s(n, 1), rest = i32x4.sub(n, half);
  const bias = i32x4.splat(127);
  return f32x4.mul(f32x4.mul(v, i32x4.shl(i32x4.add(half, bias), 23)), i32x4.shl(i32x4.add(rest, bias), 23));
}

/** e^x per lane. */
@inline export function expV(x: v128): v128 {
  // Below −104 the result rounds to 0, above 89 to +inf; the clamp keeps n in pow2's range (NaN passes).
  const c = f32x4.max(f32x4.min(x, f32x4.splat(89)), f32x4.splat(-104));
  const nf = f32x4.nearest(f32x4.mul(c, f32x4.splat(LOG2E)));
  const r = fma(nf, f32x4.splat(-LN2_LO), fma(nf, f32x4.splat(-LN2_HI), c));
  let p = f32x4.splat(1.9875691500e-4);
  p = fma(p, r, f32x4.splat(1.3981999507e-3));
  p = fma(p, r, f32x4.splat(8.3334519073e-3));
  p = fma(p, r, f32x4.splat(4.1665795894e-2));
  p = fma(p, r, f32x4.splat(1.6666665459e-1));
  p = fma(p, r, f32x4.splat(5.0000001201e-1));
  const er = f32x4.add(fma(p, f32x4.mul(r, r), r), f32x4.splat(1));
  return scale2(er, i32x4.trunc_sat_f32x4_s(nf));
}

/** 1/(1+e^−x), as ir-spec's sigmoid: e = e^−|x| ≤ 1, then 1/(1+e) for x ≥ 0 and e/(1+e) below. */
@inline export function sigmoidV(x: v128): v128 {
  const e = expV(f32x4.neg(f32x4.abs(x)));
  const neg = f32x4.lt(x, f32x4.splat(0));
  return f32x4.div(v128.bitselect(e, f32x4.splat(1), neg), f32x4.add(e, f32x4.splat(1)));
}

/**
 * tanh per lane: on |x| < 0.625 an odd polynomial (Cephes tanhf's), above it (1 − e)/(1 + e)
 * with e = e^−2|x| (no cancellation there, no overflow anywhere); the sign of x is put back last.
 */
@inline export function tanhV(x: v128): v128 {
  const a = f32x4.abs(x), z = f32x4.mul(a, a);
  let p = f32x4.splat(-5.70498872745e-3);
  p = fma(p, z, f32x4.splat(2.06390887954e-2));
  p = fma(p, z, f32x4.splat(-5.37397155531e-2));
  p = fma(p, z, f32x4.splat(1.33314422036e-1));
  p = fma(p, z, f32x4.splat(-3.33332819422e-1));
  const small = fma(f32x4.mul(p, z), a, a);
  const e = expV(f32x4.mul(a, f32x4.splat(-2)));
  const big = f32x4.div(f32x4.sub(f32x4.splat(1), e), f32x4.add(f32x4.splat(1), e));
  const t = v128.bitselect(small, big, f32x4.lt(a, f32x4.splat(0.625)));
  return v128.or(t, v128.and(x, i32x4.splat(0x80000000)));
}
