// Elementwise ops: binary arithmetic with broadcasting, comparisons, unary maps, where, cast.
// Each table row below is the single entry of one op (name, formula, gradient rule).

import { z } from 'zod';
import { defineOp, type GradDef, type OpDef } from '../op-def.js';
import { broadcastShapes, OpError, type TensorType } from '../shape.js';
import { promoteTypes, type DType } from '../dtype.js';
import { mapBinary, mapTernary, mapUnary, castArray } from '../kernels/broadcast.js';
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
  f: (x: number, y: number) => number;
  /** Result dtype from the promoted input dtype (default: the promoted dtype). */
  outDtype?: (promoted: DType) => DType;
  grad: GradDef<Record<string, never>> | null;
}

function defineBinary(spec: BinarySpec): OpDef {
  const outDtype = spec.outDtype ?? ((d: DType) => d);
  return defineOp({
    name: spec.name, doc: spec.doc, inputs: ['a', 'b'], attrs: noAttrs, elementwise: true,
    infer([a, b]) {
      const ta = need(spec.name, a, 'a'), tb = need(spec.name, b, 'b');
      return [{ dtype: outDtype(promoteTypes(ta.dtype, tb.dtype)), shape: broadcastShapes(spec.name, ta.shape, tb.shape) }];
    },
    cpu([a, b]) {
      const shape = broadcastShapes(spec.name, a!.shape, b!.shape) as number[];
      return [mapBinary(a!, b!, shape, outDtype(promoteTypes(a!.dtype, b!.dtype)), spec.f)];
    },
    grad: spec.grad,
  });
}

const floatOut = (d: DType): DType => (d === 'float32' ? d : 'float32');

export const add = defineBinary({
  name: 'add', doc: 'a + b with broadcasting', f: (x, y) => x + y,
  grad: { rule: (_b, { gradOutputs: [g] }) => [g, g] },
});
export const sub = defineBinary({
  name: 'sub', doc: 'a - b with broadcasting', f: (x, y) => x - y,
  grad: { rule: (b, { gradOutputs: [g] }) => [g, g && b.neg(g)] },
});
export const mul = defineBinary({
  name: 'mul', doc: 'a * b with broadcasting', f: (x, y) => x * y,
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, y], needsInputGrad: [nx, ny] }) =>
      g ? [nx ? b.mul(g, y!) : null, ny ? b.mul(g, x!) : null] : [null, null],
  },
});
export const div = defineBinary({
  name: 'div', doc: 'true division a / b (integer inputs give float32, as in PyTorch)', f: (x, y) => x / y,
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

// ---- comparisons (bool results, not differentiable) --------------------------------------

const toBool = (): DType => 'bool';
export const eq = defineBinary({ name: 'eq', doc: 'a == b', f: (x, y) => (x === y ? 1 : 0), outDtype: toBool, grad: null });
export const ne = defineBinary({ name: 'ne', doc: 'a != b', f: (x, y) => (x !== y ? 1 : 0), outDtype: toBool, grad: null });
export const lt = defineBinary({ name: 'lt', doc: 'a < b', f: (x, y) => (x < y ? 1 : 0), outDtype: toBool, grad: null });
export const le = defineBinary({ name: 'le', doc: 'a <= b', f: (x, y) => (x <= y ? 1 : 0), outDtype: toBool, grad: null });
export const gt = defineBinary({ name: 'gt', doc: 'a > b', f: (x, y) => (x > y ? 1 : 0), outDtype: toBool, grad: null });
export const ge = defineBinary({ name: 'ge', doc: 'a >= b', f: (x, y) => (x >= y ? 1 : 0), outDtype: toBool, grad: null });

// ---- unary maps ----------------------------------------------------------------------------

interface UnarySpec {
  name: string;
  doc: string;
  f: (x: number) => number;
  /** Float-only ops turn int inputs into float32 (exp of an int tensor is float, as in PyTorch). */
  float?: boolean;
  grad: GradDef<Record<string, never>> | null;
}

function defineUnary(spec: UnarySpec): OpDef {
  const out = (d: DType): DType => (spec.float ? floatOut(d) : d);
  return defineOp({
    name: spec.name, doc: spec.doc, inputs: ['x'], attrs: noAttrs, elementwise: true,
    infer([x]) { const t = need(spec.name, x, 'x'); return [{ dtype: out(t.dtype), shape: t.shape }]; },
    cpu([x]) { return [mapUnary(x!, out(x!.dtype), spec.f)]; },
    grad: spec.grad,
  });
}

/** Gradient rule g * f'(x) where f' is written with ops on the saved input. */
function viaInput(dfdx: <T>(b: GradBuilder<T>, x: T) => T): GradDef<Record<string, never>> {
  return {
    saveInputs: [0],
    rule: (b, { gradOutputs: [g], inputs: [x] }) => [g && b.mul(g, dfdx(b, x!))],
  };
}
/** Gradient rule g * f'(y) written on the saved output y = f(x). */
function viaOutput(dfdy: <T>(b: GradBuilder<T>, y: T) => T): GradDef<Record<string, never>> {
  return {
    saveOutputs: [0],
    rule: (b, { gradOutputs: [g], outputs: [y] }) => [g && b.mul(g, dfdy(b, y!))],
  };
}

export const clone = defineUnary({ name: 'clone', doc: 'a copy with its own buffer', f: (x) => x, grad: { rule: (_b, { gradOutputs: [g] }) => [g] } });
export const neg = defineUnary({ name: 'neg', doc: '-x', f: (x) => -x, grad: { rule: (b, { gradOutputs: [g] }) => [g && b.neg(g)] } });
export const exp = defineUnary({ name: 'exp', doc: 'e^x', f: Math.exp, float: true, grad: viaOutput((_b, y) => y) });
export const log = defineUnary({ name: 'log', doc: 'natural logarithm', f: Math.log, float: true, grad: viaInput((b, x) => b.div(b.scalar(1), x)) });
export const relu = defineUnary({
  name: 'relu', doc: 'max(x, 0)', f: (x) => (x > 0 ? x : 0),
  grad: viaOutput((b, y) => b.cast(b.compare('gt', y, b.scalar(0, b.dtype(y))), b.dtype(y))),
});

// ---- where, cast ------------------------------------------------------------------------

export const where = defineOp({
  name: 'where', doc: 'cond ? a : b elementwise, with broadcasting', inputs: ['cond', 'a', 'b'], attrs: noAttrs, elementwise: true,
  infer([c, a, b]) {
    const tc = need('where', c, 'cond'), ta = need('where', a, 'a'), tb = need('where', b, 'b');
    if (tc.dtype !== 'bool') throw new OpError('where', `condition must be bool, got ${tc.dtype}`);
    const shape = broadcastShapes('where', broadcastShapes('where', tc.shape, ta.shape), tb.shape);
    return [{ dtype: promoteTypes(ta.dtype, tb.dtype), shape }];
  },
  cpu([c, a, b]) {
    const shape = broadcastShapes('where', broadcastShapes('where', c!.shape, a!.shape), b!.shape) as number[];
    return [mapTernary(c!, a!, b!, shape, promoteTypes(a!.dtype, b!.dtype), (p, x, y) => (p ? x : y))];
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
  inputs: ['x'], attrs: z.object({ dtype: z.enum(['float32', 'int32', 'bool']) }).strict(), elementwise: true,
  infer([x], { dtype }) { return [{ dtype, shape: need('cast', x, 'x').shape }]; },
  cpu([x], { dtype }) { return [{ data: castArray(x!.data, dtype), shape: x!.shape, dtype }]; },
  grad: {
    rule: (b, { gradOutputs: [g], inputTypes: [t] }) =>
      [g && t!.dtype === 'float32' ? b.cast(g, 'float32') : null],
  },
});
