// Elementwise ops: one expression template per op, all run by one kernel shell with
// broadcasting index math (one output element per thread). Invariant: a template computes in
// the op's compute type from operands already converted to it, and `store` converts the
// result to the output's storage type; templates hold no index math.

import type { DType } from '@kiln/ir-spec';
import { broadcastOffset, literal, product, storageType, unflatten, type KernelBody, type KernelGen, type KernelSig } from './shell.js';

type Wt = 'f32' | 'i32' | 'u32';

interface Template {
  /** Compute type of the operands, from the input dtypes and the output dtype. */
  readonly operand: (ins: readonly DType[], out: DType) => Wt;
  /** The result expression over operand expressions (in the operand type) and attrs. */
  readonly expr: (a: readonly string[], attrs: Readonly<Record<string, unknown>>, t: Wt) => string;
  /** Helper functions the expression calls. */
  readonly helpers?: string;
}

const numericOf = (d: DType): Wt => (d === 'float32' ? 'f32' : 'i32');
/** The promoted type of the inputs (bool + bool stays integer-valued). */
const promoted = (ins: readonly DType[]): Wt => (ins.includes('float32') ? 'f32' : 'i32');
const asOut = (_ins: readonly DType[], out: DType): Wt => (out === 'bool' ? 'i32' : numericOf(out));
const asFloat = (): Wt => 'f32';

const ERF = `fn k_erf(x: f32) -> f32 {
  let a = abs(x);
  if (a < 1.0) {
    // Maclaurin series: relative accuracy near 0, where the rational fit is poor.
    let x2 = x * x;
    var term = x;
    var sum = x;
    for (var n = 1; n < 14; n++) {
      let fn_ = f32(n);
      term = -term * x2 / fn_;
      sum += term / (2.0 * fn_ + 1.0);
    }
    return sum * 1.1283791670955126;
  }
  // Abramowitz-Stegun 7.1.26 for the tail (absolute error 1.5e-7 on values >= 0.84).
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return select(-y, y, x >= 0.0);
}`;

const TANH = `fn k_tanh(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.3) {
    let x2 = x * x;
    return x * (1.0 + x2 * (-0.3333333333 + x2 * (0.1333333333 + x2 * (-0.0539682540 + x2 * 0.0218694885))));
  }
  let e = exp(-2.0 * min(a, 20.0));
  return sign(x) * (1.0 - e) / (1.0 + e);
}`;

const SIGMOID = `fn k_sigmoid(x: f32) -> f32 {
  if (x >= 0.0) { return 1.0 / (1.0 + exp(-x)); }
  let e = exp(x);
  return e / (1.0 + e);
}`;

const NAN = 'fn k_nan() -> f32 { return bitcast<f32>(0x7fc00000u | (dims.w[0].x & 0u)); }';

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

const NAN_MAX = NAN + `
fn k_max(a: f32, b: f32) -> f32 { if (a != a || b != b) { return k_nan(); } return max(a, b); }
fn k_min(a: f32, b: f32) -> f32 { if (a != a || b != b) { return k_nan(); } return min(a, b); }`;

const cmp = (op: string): Template => ({ operand: (ins) => promoted(ins), expr: ([a, b]) => `${a} ${op} ${b}` });
const unaryF = (f: (x: string) => string, helpers?: string): Template => ({ operand: asFloat, expr: ([x]) => f(x), helpers });

/** The expression template of every elementwise op with WGSL (one entry per op). */
export const ELEMENTWISE: Readonly<Record<string, Template>> = {
  add: { operand: asOut, expr: ([a, b]) => `${a} + ${b}` },
  sub: { operand: asOut, expr: ([a, b]) => `${a} - ${b}` },
  mul: { operand: asOut, expr: ([a, b]) => `${a} * ${b}` },
  div: { operand: asFloat, expr: ([a, b]) => `${a} / ${b}` },
  pow: { operand: asFloat, expr: ([a, b]) => `k_pow(${a}, ${b})`, helpers: `${NAN}\n${POW}` },
  maximum: { operand: asOut, expr: ([a, b], _, t) => (t === 'f32' ? `k_max(${a}, ${b})` : `max(${a}, ${b})`), helpers: NAN_MAX },
  minimum: { operand: asOut, expr: ([a, b], _, t) => (t === 'f32' ? `k_min(${a}, ${b})` : `min(${a}, ${b})`), helpers: NAN_MAX },
  eq: cmp('=='), ne: cmp('!='), lt: cmp('<'), le: cmp('<='), gt: cmp('>'), ge: cmp('>='),
  clone: { operand: asOut, expr: ([x]) => x },
  neg: { operand: asOut, expr: ([x]) => `-${x}` },
  exp: unaryF((x) => `exp(${x})`),
  log: unaryF((x) => `log(${x})`),
  relu: { operand: asOut, expr: ([x], _, t) => `max(${x}, ${t}(0))` },
  sqrt: unaryF((x) => `sqrt(${x})`),
  rsqrt: unaryF((x) => `1.0 / sqrt(${x})`),
  sin: unaryF((x) => `k_sincos(${x}, 0)`, TRIG),
  cos: unaryF((x) => `k_sincos(${x}, 1)`, TRIG),
  abs: { operand: asOut, expr: ([x]) => `abs(${x})` },
  sign: { operand: asOut, expr: ([x]) => `sign(${x})` },
  logical_not: { operand: (ins) => numericOf(ins[0]), expr: ([x], _, t) => `${x} == ${t}(0)` },
  erf: unaryF((x) => `k_erf(${x})`, ERF),
  sigmoid: unaryF((x) => `k_sigmoid(${x})`, SIGMOID),
  tanh: unaryF((x) => `k_tanh(${x})`, TANH),
  clamp: {
    operand: asOut,
    expr: ([x], attrs, t) => {
      let e = x;
      // PyTorch: min(max(x, lo), hi), so lo > hi gives hi everywhere.
      if (typeof attrs.min === 'number') e = `max(${e}, ${literal(attrs.min, t)})`;
      if (typeof attrs.max === 'number') e = `min(${e}, ${literal(attrs.max, t)})`;
      return e;
    },
  },
  where: { operand: asOut, expr: ([c, a, b]) => `select(${b}, ${a}, ${c} != 0u)` },
  cast: { operand: (ins) => numericOf(ins[0]), expr: ([x]) => x },
};

/** The helper functions of these ops, each once, in a fixed order. */
export function helpersOf(ops: readonly string[]): string {
  const seen: string[] = [];
  for (const op of [...new Set(ops)].sort()) {
    for (const h of (ELEMENTWISE[op]?.helpers ?? '').split(/\n(?=fn )/)) if (h && !seen.includes(h)) seen.push(h);
  }
  return seen.join('\n');
}

/** Converts `e` of type `from` to the stored type of `to`. */
function convert(e: string, from: Wt, to: DType, boolResult: boolean): string {
  if (boolResult) return `select(0u, 1u, ${e})`;
  if (to === 'bool') return `select(0u, 1u, ${e} != ${from}(0))`;
  const st = storageType(to);
  return st === from ? e : `${st}(${e})`;
}

const BOOL_OPS = new Set(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logical_not']);

/** The elementwise kernel of `sig` (one thread per output element, 64 per workgroup). */
export const elementwiseKernel: KernelGen = (sig: KernelSig, d) => {
  const tpl = ELEMENTWISE[sig.op];
  const out = sig.outputs[0];
  const ins = sig.inputs.map((t) => t!);
  const t = tpl.operand(ins.map((x) => x.dtype), out.dtype);
  const R = out.rank;
  const lines = [
    'let i = wg * 64u + lid;',
    `if (i >= ${product(Array.from({ length: R }, (_, k) => d.outDim(0, k)))}) { return; }`,
    unflatten('i', R, (k) => d.outDim(0, k)),
  ];
  const operands = ins.map((x, j) => {
    lines.push(broadcastOffset(`p${j}`, d, j, x.rank, R));
    const raw = `in${j}[p${j}]`;
    if (sig.op === 'where' && j === 0) return raw; // the condition stays u32
    return storageType(x.dtype) === t ? raw : `${t}(${raw})`;
  });
  const e = tpl.expr(operands, sig.attrs, t);
  lines.push(`out0[i] = ${convert(e, t, out.dtype, BOOL_OPS.has(sig.op))};`);
  const body: KernelBody = { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 }, decls: helpersOf([sig.op]) };
  return body;
};
