// Elementwise ops: binary arithmetic with broadcasting, comparisons, unary maps, clamp, where,
// cast. Each table row below is the single entry of one op (name, scalar, gradient rule): the
// scalar (../scalar.ts) is a formula over primitives and other entries, or a primitive JS
// function, and it is all fusion and code generation know about the op. Hot ops (add/sub/mul/
// div, comparisons, relu) carry closure-free loops next to their scalar; both must compute the
// same thing (tests/op-entries.test.ts checks it). The helpers defineUnary/viaInput/viaOutput
// are shared with the activation family (sigmoid, tanh, erf, hardswish).

import * as z from 'zod';
import { defineOp, getOp, offeredBuffer, type GradDef, type OpDef } from '../op-def.js';
import { argsOf, compileFormulaLoop, S, scalarFn, type ScalarDef } from '../scalar.js';
import { broadcastShapes, numel, OpError, type TensorType } from '../shape.js';
import { isFloating, promoteTypes, scalarDType, type DType, type TypedArray } from '../dtype.js';
import { primitivesOf } from '../kernels/primitives.js';
import { mapUnary, castArray, type BinaryRow, type UnaryLoop } from '../kernels/broadcast.js';
import type { GradBuilder } from '../grad-builder.js';

const noAttrs = z.object({}).strict();

function need(op: string, t: TensorType | null, name: string): TensorType {
  if (!t) throw new OpError(op, `input '${name}' is required`);
  return t;
}

// ---- binary arithmetic -------------------------------------------------------------------

interface BinarySpec {
  name: string;
  doc: string;
  scalar: ScalarDef<Record<string, never>>;
  /** The same map as a closure-free row loop, for ops on every training step. */
  row?: BinaryRow;
  /** Result dtype from the promoted input dtype (default: the promoted dtype). */
  outDtype?: (promoted: DType) => DType;
  grad: GradDef<Record<string, never>> | null;
}

function defineBinary(spec: BinarySpec): OpDef {
  const outDtype = spec.outDtype ?? ((d: DType) => d);
  return defineOp({
    name: spec.name, doc: spec.doc, inputs: ['a', 'b'], attrs: noAttrs, elementwise: true, scalar: spec.scalar,
    infer([a, b]) {
      const ta = need(spec.name, a, 'a'), tb = need(spec.name, b, 'b');
      return [{ dtype: outDtype(promoteTypes(ta.dtype, tb.dtype)), shape: broadcastShapes(spec.name, ta.shape, tb.shape) }];
    },
    cpu([a, b], _attrs, ctx) {
      const shape = broadcastShapes(spec.name, a!.shape, b!.shape) as number[];
      const dtype = outDtype(promoteTypes(a!.dtype, b!.dtype));
      return [primitivesOf(ctx).mapBinary(spec.name, a!, b!, shape, dtype, scalarOfEntry(spec.name), spec.row, offeredBuffer(ctx, 0, dtype, numel(shape)))];
    },
    grad: spec.grad,
  });
}

const floatOut = (d: DType): DType => (isFloating(d) ? d : 'float32');

/** The JS function of an attribute-free entry's scalar (compiled once, on first use). */
export const scalarOfEntry = (name: string) => scalarFn(getOp(name), {}, getOp);

export const add = defineBinary({
  name: 'add', doc: 'a + b with broadcasting', scalar: { formula: ([a, b]) => S.add(a, b) },
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] + B[ib + k * sb]; },
  grad: { rule: (_b, { gradOutputs: [g] }) => [g, g] },
});
export const sub = defineBinary({
  name: 'sub', doc: 'a - b with broadcasting', scalar: { formula: ([a, b]) => S.sub(a, b) },
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] - B[ib + k * sb]; },
  grad: { rule: (b, { gradOutputs: [g] }) => [g, g && b.neg(g)] },
});
export const mul = defineBinary({
  name: 'mul', doc: 'a * b with broadcasting', scalar: { formula: ([a, b]) => S.mul(a, b) },
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] * B[ib + k * sb]; },
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, y], needsInputGrad: [nx, ny] }) =>
      g ? [nx ? b.mul(g, y!) : null, ny ? b.mul(g, x!) : null] : [null, null],
  },
});
export const div = defineBinary({
  name: 'div', doc: 'true division a / b (integer inputs give float32, as in PyTorch)', scalar: { formula: ([a, b]) => S.div(a, b) },
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] / B[ib + k * sb]; },
  outDtype: floatOut,
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, y], needsInputGrad: [nx, ny] }) => {
      if (!g) return [null, null];
      const gx = b.div(g, y!);
      return [nx ? gx : null, ny ? b.neg(b.div(b.mul(gx, x!), y!)) : null];
    },
  },
});
export const pow = defineBinary({
  name: 'pow', doc: 'a ** b with broadcasting (PyTorch pow; int ** int stays int)', scalar: { primitive: Math.pow },
  grad: {
    // The output is recomputed rather than saved, so an in-place op on it (x.pow(2).mul_(2),
    // common in user code) does not invalidate the gradient of the base.
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, y], needsInputGrad: [nx, ny] }) => {
      if (!g) return [null, null];
      const zero = b.scalar(0, b.dtype(g));
      // d/da = b * a^(b-1), defined as 0 where b == 0 (PyTorch; avoids 0 * inf at a == 0).
      const gx = nx
        ? b.mul(g, b.where(b.compare('eq', y!, b.scalar(0, b.dtype(y!))), zero,
          b.mul(y!, b.op('pow', [x!, b.sub(y!, b.scalar(1, b.dtype(y!)))]))))
        : null;
      // d/db = a^b * log(a), defined as 0 where a == 0 and b >= 0 (PyTorch: 0^b is constant there).
      const flat = ny && b.where(b.compare('eq', x!, b.scalar(0, b.dtype(x!))), b.compare('ge', y!, b.scalar(0, b.dtype(y!))), b.scalar(0, 'bool'));
      const gy = flat ? b.mul(g, b.where(flat, zero, b.mul(b.op('pow', [x!, y!]), b.unary('log', x!)))) : null;
      return [gx, gy];
    },
  },
});

/** Weight of input `hi` in the gradient of max(hi, lo): 1 where it wins, 1/2 on a tie (as PyTorch). */
function winnerShare<T>(b: GradBuilder<T>, hi: T, lo: T, dt: DType): T {
  return b.mulScalar(b.add(b.cast(b.compare('gt', hi, lo), dt), b.cast(b.compare('ge', hi, lo), dt)), 0.5);
}
function extremumGrad(max: boolean): GradDef<Record<string, never>> {
  return {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, y], needsInputGrad: [nx, ny] }) => {
      if (!g) return [null, null];
      const dt = b.dtype(g);
      const [xHi, xLo] = max ? [x!, y!] : [y!, x!];
      return [
        nx ? b.mul(g, winnerShare(b, xHi, xLo, dt)) : null,
        ny ? b.mul(g, winnerShare(b, xLo, xHi, dt)) : null,
      ];
    },
  };
}
// Math.max/min propagate NaN, as torch.maximum/minimum do.
export const maximum = defineBinary({ name: 'maximum', doc: 'elementwise max(a, b) with broadcasting (NaN propagates)', scalar: { formula: ([a, b]) => S.max(a, b) }, grad: extremumGrad(true) });
export const minimum = defineBinary({ name: 'minimum', doc: 'elementwise min(a, b) with broadcasting (NaN propagates)', scalar: { formula: ([a, b]) => S.min(a, b) }, grad: extremumGrad(false) });

// ---- comparisons (bool results, not differentiable) --------------------------------------

const toBool = (): DType => 'bool';
export const eq = defineBinary({
  name: 'eq', doc: 'a == b', scalar: { formula: ([a, b]) => S.eq(a, b) }, outDtype: toBool, grad: null,
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] === B[ib + k * sb] ? 1 : 0; },
});
export const ne = defineBinary({
  name: 'ne', doc: 'a != b', scalar: { formula: ([a, b]) => S.ne(a, b) }, outDtype: toBool, grad: null,
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] !== B[ib + k * sb] ? 1 : 0; },
});
export const lt = defineBinary({
  name: 'lt', doc: 'a < b', scalar: { formula: ([a, b]) => S.lt(a, b) }, outDtype: toBool, grad: null,
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] < B[ib + k * sb] ? 1 : 0; },
});
export const le = defineBinary({
  name: 'le', doc: 'a <= b', scalar: { formula: ([a, b]) => S.le(a, b) }, outDtype: toBool, grad: null,
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] <= B[ib + k * sb] ? 1 : 0; },
});
export const gt = defineBinary({
  name: 'gt', doc: 'a > b', scalar: { formula: ([a, b]) => S.gt(a, b) }, outDtype: toBool, grad: null,
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] > B[ib + k * sb] ? 1 : 0; },
});
export const ge = defineBinary({
  name: 'ge', doc: 'a >= b', scalar: { formula: ([a, b]) => S.ge(a, b) }, outDtype: toBool, grad: null,
  row: (A, ia, sa, B, ib, sb, out, o, n) => { for (let k = 0; k < n; k++) out[o + k] = A[ia + k * sa] >= B[ib + k * sb] ? 1 : 0; },
});

// ---- unary maps ----------------------------------------------------------------------------

export interface UnarySpec {
  name: string;
  doc: string;
  scalar: ScalarDef<Record<string, never>>;
  /** The same map as a closure-free loop over the whole buffer, for hot ops. */
  loop?: UnaryLoop;
  /** Float-only ops turn int inputs into float32 (exp of an int tensor is float, as in PyTorch). */
  float?: boolean;
  /** Result dtype regardless of the input (logical_not gives bool). */
  dtype?: DType;
  grad: GradDef<Record<string, never>> | null;
  /** May be a fused_conv2d / fused_linear activation epilogue (see OpDef.epilogue). */
  epilogue?: { readonly nonDecreasing: boolean };
}

/** Defines a one-input, attribute-free elementwise op. */
export function defineUnary(spec: UnarySpec): OpDef {
  const out = (d: DType): DType => spec.dtype ?? (spec.float ? floatOut(d) : d);
  return defineOp({
    name: spec.name, doc: spec.doc, inputs: ['x'], attrs: noAttrs, elementwise: true, scalar: spec.scalar,
    ...(spec.epilogue ? { epilogue: spec.epilogue } : {}),
    infer([x]) { const t = need(spec.name, x, 'x'); return [{ dtype: out(t.dtype), shape: t.shape }]; },
    cpu([x], _attrs, ctx) {
      const dtype = out(x!.dtype);
      return [primitivesOf(ctx).mapUnary(spec.name, x!, dtype, scalarOfEntry(spec.name), spec.loop ?? formulaLoop(spec), offeredBuffer(ctx, 0, dtype, x!.data.length))];
    },
    grad: spec.grad,
  });
}

/** A formula entry's default loop: the formula over the whole buffer, one tight loop per node. */
function formulaLoop(spec: UnarySpec): UnaryLoop | undefined {
  const s = spec.scalar;
  if (!('formula' in s)) return undefined;
  let run: ReturnType<typeof compileFormulaLoop> | undefined; // compiled on first use (entries may call later ones)
  return (src, out) => {
    run ??= compileFormulaLoop(s.formula(argsOf(1), {}), 1, getOp);
    run([src], out, src.length);
  };
}

/** Gradient rule g * f'(x) where f' is written with ops on the saved input. */
export function viaInput(dfdx: <T>(b: GradBuilder<T>, x: T) => T): GradDef<Record<string, never>> {
  return {
    saveInputs: [0],
    rule: (b, { gradOutputs: [g], inputs: [x] }) => [g && b.mul(g, dfdx(b, x!))],
  };
}
/** Gradient rule g * f'(y) written on the saved output y = f(x). */
export function viaOutput(dfdy: <T>(b: GradBuilder<T>, y: T) => T): GradDef<Record<string, never>> {
  return {
    saveOutputs: [0],
    rule: (b, { gradOutputs: [g], outputs: [y] }) => [g && b.mul(g, dfdy(b, y!))],
  };
}

export const clone = defineUnary({
  name: 'clone', doc: 'a copy with its own buffer', scalar: { formula: ([x]) => x },
  loop: (src, out) => out.set(src),
  grad: { rule: (_b, { gradOutputs: [g] }) => [g] },
});
export const neg = defineUnary({
  name: 'neg', doc: '-x', scalar: { formula: ([x]) => S.neg(x) },
  loop: (src, out) => { for (let i = 0; i < src.length; i++) out[i] = -src[i]; },
  grad: { rule: (b, { gradOutputs: [g] }) => [g && b.neg(g)] },
});
export const exp = defineUnary({ name: 'exp', doc: 'e^x', scalar: { primitive: Math.exp }, float: true, grad: viaOutput((_b, y) => y) });
export const log = defineUnary({ name: 'log', doc: 'natural logarithm', scalar: { primitive: Math.log }, float: true, grad: viaInput((b, x) => b.div(b.scalar(1), x)) });
export const relu = defineUnary({
  // `v < 0 ? 0 : v` keeps NaN (as PyTorch); the gradient is 0 at x == 0 (PyTorch's threshold_backward).
  name: 'relu', doc: 'max(x, 0)', scalar: { primitive: (x) => (x < 0 ? 0 : x) }, epilogue: { nonDecreasing: true },
  loop: reluLoop,
  grad: viaOutput((b, y) => b.cast(b.compare('gt', y, b.scalar(0, b.dtype(y))), b.dtype(y))),
});
/**
 * relu on the bit patterns: with signs mixed at random a `v < 0` branch mispredicts half the
 * time (measured 3x slower). A float32 with the sign bit set becomes +0 unless it is a NaN
 * (|bits| > 0x7f800000), which passes through; int32 just clears negatives; bool is a copy.
 */
export function reluLoop(src: TypedArray, out: TypedArray): void {
  if (src instanceof Uint8Array) { out.set(src); return; }
  const s = src instanceof Int32Array ? src : new Int32Array(src.buffer, src.byteOffset, src.length);
  const o = out instanceof Int32Array ? out : new Int32Array(out.buffer, out.byteOffset, out.length);
  const n = s.length;
  if (src instanceof Int32Array) for (let i = 0; i < n; i++) { const b = s[i]; o[i] = b & ~(b >> 31); }
  else for (let i = 0; i < n; i++) { const b = s[i]; o[i] = b & ~((b >> 31) & ~((0x7f800000 - (b & 0x7fffffff)) >> 31)); }
}
export const sqrt = defineUnary({
  name: 'sqrt', doc: 'square root (NaN for x < 0)', scalar: { primitive: Math.sqrt }, float: true,
  grad: viaOutput((b, y) => b.div(b.scalar(0.5), y)),
});
export const rsqrt = defineUnary({
  name: 'rsqrt', doc: '1 / sqrt(x)', scalar: { formula: ([x]) => S.div(1, S.call('sqrt', [x])) }, float: true,
  // d/dx x^(-1/2) = -1/2 * y^3
  grad: viaOutput((b, y) => b.mulScalar(b.mul(b.mul(y, y), y), -0.5)),
});
export const sin = defineUnary({ name: 'sin', doc: 'sine (radians)', scalar: { primitive: Math.sin }, float: true, grad: viaInput((b, x) => b.unary('cos', x)) });
export const cos = defineUnary({ name: 'cos', doc: 'cosine (radians)', scalar: { primitive: Math.cos }, float: true, grad: viaInput((b, x) => b.neg(b.unary('sin', x))) });
export const abs = defineUnary({ name: 'abs', doc: '|x|', scalar: { primitive: Math.abs }, grad: viaInput((b, x) => b.unary('sign', x)) });
export const sign = defineUnary({
  // Math.sign keeps -0 and NaN as PyTorch does; the gradient is zero everywhere (PyTorch's choice).
  name: 'sign', doc: '-1, 0 or 1 by the sign of x', scalar: { primitive: Math.sign },
  grad: { rule: (b, { gradOutputs: [g] }) => [g && b.zerosLike(g)] },
});
export const logicalNot = defineUnary({
  name: 'logical_not', doc: 'x == 0, as bool (any input dtype)', scalar: { formula: ([x]) => S.eq(x, 0) }, dtype: 'bool', grad: null,
});

// ---- clamp ----------------------------------------------------------------------------------

const clampAttrs = z.object({
  min: z.number().nullable().default(null),
  max: z.number().nullable().default(null),
}).strict();

/** An int tensor clamped to a fractional bound becomes float32 (PyTorch's scalar promotion). */
function clampDtype(d: DType, min: number | null, max: number | null): DType {
  let out = d;
  for (const v of [min, max]) if (v !== null) out = promoteTypes(out, scalarDType(v, d));
  return out;
}

export const clamp = defineOp({
  name: 'clamp', doc: 'min(max(x, min), max); a null bound is absent; min > max gives max everywhere (as PyTorch)',
  inputs: ['x'], attrs: clampAttrs, elementwise: true,
  // Comparisons are false for NaN, so NaN passes through (as PyTorch); min > max gives max.
  scalar: {
    formula: ([x], { min, max }) => {
      let e = x;
      if (min !== null) e = S.select(S.lt(e, min), min, e);
      if (max !== null) e = S.select(S.gt(e, max), max, e);
      return e;
    },
  },
  infer([x], { min, max }) {
    const t = need('clamp', x, 'x');
    return [{ dtype: clampDtype(t.dtype, min, max), shape: t.shape }];
  },
  cpu([x], { min, max }) {
    const lo = min ?? -Infinity, hi = max ?? Infinity;
    // The scalar formula as a closure-free loop.
    const loop: UnaryLoop = (src, out) => {
      for (let i = 0; i < src.length; i++) {
        let v = src[i];
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        out[i] = v;
      }
    };
    return [mapUnary(x!, clampDtype(x!.dtype, min, max), (v) => v, loop)];
  },
  grad: {
    // The gradient passes where min <= x <= max, bounds included (PyTorch's clamp_backward).
    saveInputs: [0],
    rule: (b, { gradOutputs: [g], inputs: [x], attrs: { min, max } }) => {
      if (!g) return [null];
      const zero = b.scalar(0, b.dtype(g));
      const lo = min === null ? g : b.where(b.compare('ge', x!, b.scalar(min, 'float32')), g, zero);
      return [max === null ? lo : b.where(b.compare('le', x!, b.scalar(max, 'float32')), lo, zero)];
    },
  },
});

// ---- where, cast ------------------------------------------------------------------------

export const where = defineOp({
  name: 'where', doc: 'cond ? a : b elementwise, with broadcasting', inputs: ['cond', 'a', 'b'], attrs: noAttrs, elementwise: true,
  scalar: { primitive: (c, a, b) => (c !== 0 ? a : b) },
  infer([c, a, b]) {
    const tc = need('where', c, 'cond'), ta = need('where', a, 'a'), tb = need('where', b, 'b');
    if (tc.dtype !== 'bool') throw new OpError('where', `condition must be bool, got ${tc.dtype}`);
    const shape = broadcastShapes('where', broadcastShapes('where', tc.shape, ta.shape), tb.shape);
    return [{ dtype: promoteTypes(ta.dtype, tb.dtype), shape }];
  },
  cpu([c, a, b], _attrs, ctx) {
    const shape = broadcastShapes('where', broadcastShapes('where', c!.shape, a!.shape), b!.shape) as number[];
    const dtype = promoteTypes(a!.dtype, b!.dtype);
    return [primitivesOf(ctx).mapTernary('where', c!, a!, b!, shape, dtype, scalarOfEntry('where'), offeredBuffer(ctx, 0, dtype, numel(shape)))];
  },
  grad: {
    saveInputs: [0],
    rule: (b, { gradOutputs: [g], inputs: [c], needsInputGrad: [, na, nb] }) => {
      if (!g) return [null, null, null];
      const zero = b.zerosLike(g);
      return [null, na ? b.where(c!, g, zero) : null, nb ? b.where(c!, zero, g) : null];
    },
  },
});

export const cast = defineOp({
  name: 'cast', doc: 'converts to another dtype (float→int truncates toward zero, nonzero→true)',
  inputs: ['x'], attrs: z.object({ dtype: z.enum(['float32', 'float16', 'bfloat16', 'int32', 'bool']) }).strict(), elementwise: true,
  // The value itself: storing it in the result's dtype is the conversion (as every elementwise
  // kernel stores its result).
  scalar: { primitive: (x) => x },
  infer([x], { dtype }) { return [{ dtype, shape: need('cast', x, 'x').shape }]; },
  cpu([x], { dtype }) { return [{ data: castArray(x!.data, dtype), shape: x!.shape, dtype }]; },
  grad: {
    rule: (b, { gradOutputs: [g], inputTypes: [t] }) =>
      [g && isFloating(t!.dtype) ? b.cast(g, t!.dtype) : null],
  },
});

// ---- rounding, log1p/expm1, NaN tests ------------------------------------------------------

/** Rounds half to even (torch.round, WGSL round): Math.round rounds half up. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
// The rounding ops are flat, so their gradient is zero (PyTorch's choice); int inputs stay int.
const zeroGrad: GradDef<Record<string, never>> = { rule: (b, { gradOutputs: [g] }) => [g && b.zerosLike(g)] };
export const floor = defineUnary({ name: 'floor', doc: 'largest integer <= x', scalar: { primitive: Math.floor }, grad: zeroGrad });
export const ceil = defineUnary({ name: 'ceil', doc: 'smallest integer >= x', scalar: { primitive: Math.ceil }, grad: zeroGrad });
export const round = defineUnary({ name: 'round', doc: 'nearest integer, halves to even (torch.round)', scalar: { primitive: roundHalfEven }, grad: zeroGrad });
export const trunc = defineUnary({ name: 'trunc', doc: 'x rounded toward zero', scalar: { primitive: Math.trunc }, grad: zeroGrad });
export const log1p = defineUnary({
  name: 'log1p', doc: 'log(1 + x), accurate for small x', scalar: { primitive: Math.log1p }, float: true,
  grad: viaInput((b, x) => b.div(b.scalar(1), b.addScalar(x, 1))),
});
export const expm1 = defineUnary({
  name: 'expm1', doc: 'e^x - 1, accurate for small x', scalar: { primitive: Math.expm1 }, float: true,
  grad: viaOutput((b, y) => b.addScalar(y, 1)),
});
// Primitives, not formulas: code generators may assume x == x (WGSL compilers do), so the
// generated kernels test the bits instead.
export const isnan = defineUnary({ name: 'isnan', doc: 'x is NaN, as bool', scalar: { primitive: (x) => (x !== x ? 1 : 0) }, dtype: 'bool', grad: null }); // eslint-disable-line no-self-compare
export const isfinite = defineUnary({ name: 'isfinite', doc: 'x is neither ±inf nor NaN, as bool', scalar: { primitive: (x) => (Number.isFinite(x) ? 1 : 0) }, dtype: 'bool', grad: null });
