// WGSL templates of the primitive entries of ir-spec's 'elementwise' family (ir-spec/src/ops/
// elementwise.ts): the ops whose scalar is a JS function. Composite entries there (add, mul,
// maximum, comparisons, clamp, rsqrt, …) are compiled from their formulas and have no template.

import { isFloating, type DType } from '@kiln/ir-spec';
import { NAN, unaryF, type Template } from './template.js';

// sin/cos: the builtins are too coarse on some drivers (SwiftShader: ~2e-5), so reduce to
// [-π/4, π/4] (Cody-Waite, two-part π/2) and use Taylor polynomials there.
const TRIG = `fn k_sincos(x: f32, shift: i32) -> f32 {
  let k = round(x * 0.6366197723675814);
  let r = (x - k * 1.5707963705062866) + k * 4.37113900018624e-8;
  let r2 = r * r;
  let s = r * (1.0 + r2 * (-0.16666666666666666 + r2 * (0.008333333333333333 + r2 * (-0.0001984126984126984 + r2 * 2.7557319223985893e-6))));
  let c = 1.0 + r2 * (-0.5 + r2 * (0.041666666666666664 + r2 * (-0.001388888888888889 + r2 * (2.48015873015873e-5 - r2 * 2.755731922398589e-7))));
  let q = (i32(k) + shift) & 3;
  if (q == 0) { return s; }
  if (q == 1) { return c; }
  if (q == 2) { return -s; }
  return -c;
}`;

const POW = `fn k_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (a >= 0.0) { return pow(a, b); }
  if (b != round(b)) { return k_nan(); }
  let r = pow(-a, b);
  return select(r, -r, (abs(b) % 2.0) == 1.0);
}`;

// log1p/expm1 (no WGSL builtins): the correction u - 1 vs x (Goldberg / Kahan) recovers the
// digits 1 + x or e^x loses near 0.
const LOG1P = `fn k_log1p(x: f32) -> f32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return x; } // NaN
  if (x < -1.0) { return k_nan(); } // log of a negative is unspecified in WGSL
  let u = 1.0 + x;
  if (u == 1.0 || abs(x) > 1e30) { return select(log(u), x, u == 1.0); }
  return log(u) * x / (u - 1.0);
}`;
const EXPM1 = `fn k_expm1(x: f32) -> f32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return x; } // NaN
  if (abs(x) >= 0.5) { return exp(x) - 1.0; }
  let u = exp(x);
  if (u == 1.0) { return x; }
  return (u - 1.0) * x / log(u);
}`;

/** A test of the exponent bits of an f32 (|bits| against those of +inf); integers give `int`. */
const bitTest = (cmp: string, int: 0 | 1): Template => ({
  expr: ([x], _, t) => (t === 'f32' ? `select(0.0, 1.0, (bitcast<u32>(${x}) & 0x7fffffffu) ${cmp} 0x7f800000u)` : `${t}(${int})`),
});

/** A rounding builtin on floats; integers are already whole. */
const rounding = (fn: string): Template => ({ expr: ([x], _, t) => (t === 'f32' ? `${fn}(${x})` : x) });

const numericOf = (d: DType) => (isFloating(d) ? 'f32' : 'i32');

export const TEMPLATES: Readonly<Record<string, Template>> = {
  // Computed in f32 even for int ** int (the store converts back, as before).
  pow: { expr: ([a, b]) => `k_pow(${a}, ${b})`, helpers: `${NAN}\n${POW}`, operand: () => 'f32' },
  exp: unaryF((x) => `exp(${x})`),
  log: unaryF((x) => `log(${x})`),
  relu: { expr: ([x], _, t) => `max(${x}, ${t}(0))` },
  sqrt: unaryF((x) => `sqrt(${x})`),
  sin: unaryF((x) => `k_sincos(${x}, 0)`, TRIG),
  cos: unaryF((x) => `k_sincos(${x}, 1)`, TRIG),
  floor: rounding('floor'),
  ceil: rounding('ceil'),
  round: rounding('round'), // WGSL rounds halves to even, as torch.round
  trunc: rounding('trunc'),
  isnan: bitTest('>', 0),
  isfinite: bitTest('<', 1),
  log1p: unaryF((x) => `k_log1p(${x})`, `${NAN}\n${LOG1P}`),
  expm1: unaryF((x) => `k_expm1(${x})`, EXPM1),
  abs: { expr: ([x]) => `abs(${x})` },
  sign: { expr: ([x]) => `sign(${x})` },
  // The condition stays the stored u32 (bool) value.
  where: { expr: ([c, a, b]) => `select(${b}, ${a}, ${c} != 0u)`, raw: [0] },
  // The value itself, in the input's type; the store converts it to the result dtype.
  cast: { expr: ([x]) => x, operand: (ins) => numericOf(ins[0]) },
};
