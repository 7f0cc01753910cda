// Number and boolean arithmetic: folded at compile time when both sides are static (with
// JavaScript's own semantics), lowered to `scalar_op` when a side is a run-time scalar, and
// refused where the IR's meaning would differ from JavaScript's (`%` on negative values,
// tensors with operators). Invariant: a folded result equals what eager JavaScript computes.

import { dimAdd, dimMul, dimSub, type Dim, type DType, type Value } from '@kiln/ir-spec';
import type { Node as TsNode } from 'ts-morph';
import type { ScriptContext } from './context.js';
import type { SourceInfo } from './source.js';
import { describe, stat, type SValue } from './values.js';

const OPS: Record<string, string> = {
  '+': 'add', '-': 'sub', '*': 'mul', '/': 'div', '**': 'pow',
  '<': 'lt', '<=': 'le', '>': 'gt', '>=': 'ge', '===': 'eq', '!==': 'ne', '==': 'eq', '!=': 'ne',
};

function dtypeOf(v: Value): DType { return v.type.kind === 'scalar' ? v.type.dtype : 'float32'; }

/** The dtype a static operand takes next to a run-time scalar of dtype `other`. */
function staticAs(value: number | boolean, other: DType): DType {
  if (typeof value === 'boolean') return 'bool';
  if (other === 'float32' || !Number.isInteger(value)) return 'float32';
  return 'int32';
}

/** `a op b` for scalars (static or run-time). */
export function scalarBinary(ctx: ScriptContext, src: SourceInfo, at: TsNode, op: string, a: SValue, b: SValue): SValue {
  if (a.k === 'static' && b.k === 'static') return stat(foldBinary(src, at, op, a.value, b.value));
  const same = identity(op, a, b);
  if (same !== undefined) return stat(same);
  if (a.k === 'tensor' || b.k === 'tensor') {
    throw src.error(at, `the operator '${op}' on a Tensor is not supported (JavaScript has no operator overloading); ` +
      'use the tensor methods (x.add(y), x.mul(2), x.gt(0)) instead');
  }
  const fn = OPS[op];
  if (op === '%') {
    throw src.error(at, "'%' on a run-time number is not supported: JavaScript's remainder and the IR's modulo differ for negative values; " +
      'write a - Math.floor(a / b) * b for a floored modulo');
  }
  if (!fn) throw src.error(at, `the operator '${op}' is not supported by jit.script on run-time numbers`);
  const va = operand(ctx, src, at, a, b, op), vb = operand(ctx, src, at, b, a, op);
  const out = ctx.b.op('scalar_op', [va, vb], { fn })[0];
  return { k: 'scalar', v: out, dim: dimOf(op, a, b) };
}

/**
 * `===`/`!==` (and `==`/`!=`) known when compiling: two modules (same instance or not), a module
 * and a static value (`node.left !== null`), and any value that exists at run time (a tensor, a
 * run-time number, an array) against null or undefined (`t !== undefined` after a find).
 */
function identity(op: string, a: SValue, b: SValue): boolean | undefined {
  if (!['===', '!==', '==', '!='].includes(op)) return undefined;
  const nullish = (v: SValue) => v.k === 'static' && (v.value === null || v.value === undefined);
  let equal: boolean;
  if (a.k === 'module' && b.k === 'module') equal = a.mod === b.mod;
  else if ((a.k === 'module' && b.k === 'static') || (a.k === 'static' && b.k === 'module')) equal = false;
  else if ((nullish(a) && b.k !== 'static') || (nullish(b) && a.k !== 'static')) equal = false;
  else return undefined;
  return op.startsWith('!') ? !equal : equal;
}

function operand(ctx: ScriptContext, src: SourceInfo, at: TsNode, v: SValue, other: SValue, op: string): Value {
  if (v.k === 'scalar') return v.v;
  if (v.k === 'static' && (typeof v.value === 'number' || typeof v.value === 'boolean')) {
    const o = other.k === 'scalar' ? dtypeOf(other.v) : 'float32';
    return ctx.scalar(v.value, staticAs(v.value, o));
  }
  throw src.error(at, `the operator '${op}' cannot take ${describe(v)} together with a run-time number`);
}

/** The symbolic size a shape-derived scalar result stands for (used to size later calls). */
function dimOf(op: string, a: SValue, b: SValue): Dim | undefined {
  const d = (v: SValue): Dim | undefined =>
    v.k === 'scalar' ? v.dim : v.k === 'static' && typeof v.value === 'number' && Number.isInteger(v.value) ? v.value : undefined;
  const x = d(a), y = d(b);
  if (x === undefined || y === undefined) return undefined;
  if (op === '+') return dimAdd(x, y);
  if (op === '-') return dimSub(x, y);
  if (op === '*') return dimMul(x, y);
  return undefined;
}

function foldBinary(src: SourceInfo, at: TsNode, op: string, a: unknown, b: unknown): number | boolean | string {
  const num = (v: unknown): number => {
    if (typeof v === 'number' || typeof v === 'boolean') return Number(v);
    throw src.error(at, `the operator '${op}' on ${typeof v} values is not supported by jit.script; use numbers, or tensors and their methods`);
  };
  switch (op) {
    case '+': return typeof a === 'string' || typeof b === 'string' ? String(a) + String(b) : num(a) + num(b);
    case '-': return num(a) - num(b);
    case '*': return num(a) * num(b);
    case '/': return num(a) / num(b);
    case '%': return num(a) % num(b);
    case '**': return num(a) ** num(b);
    case '<': return num(a) < num(b);
    case '<=': return num(a) <= num(b);
    case '>': return num(a) > num(b);
    case '>=': return num(a) >= num(b);
    case '===': case '==': return a === b;
    case '!==': case '!=': return a !== b;
    default: throw src.error(at, `the operator '${op}' is not supported by jit.script; use the tensor methods or Math functions instead`);
  }
}

/** `-a`, `+a`, `!a`. */
export function scalarUnary(ctx: ScriptContext, src: SourceInfo, at: TsNode, op: string, a: SValue): SValue {
  if (a.k === 'static') {
    if (op === '!') return stat(!a.value);
    if (typeof a.value !== 'number') throw src.error(at, `the operator '${op}' on ${describe(a)} is not supported`);
    return stat(op === '-' ? -a.value : a.value);
  }
  if (a.k !== 'scalar') throw src.error(at, `the operator '${op}' on ${describe(a)} is not supported; use the tensor methods (x.neg(), x.logicalNot())`);
  if (op === '+') return a;
  if (op === '-') return { k: 'scalar', v: ctx.b.op('scalar_op', [a.v], { fn: 'neg' })[0] };
  if (dtypeOf(a.v) !== 'bool') throw src.error(at, "'!' on a run-time number is not supported; compare it explicitly (n === 0)");
  return { k: 'scalar', v: ctx.b.op('scalar_op', [a.v], { fn: 'not' })[0] };
}

/** `a && b`, `a || b` with JavaScript's short-circuit when `a` is static. */
export function logical(ctx: ScriptContext, src: SourceInfo, at: TsNode, op: '&&' | '||', a: SValue, rhs: () => SValue): SValue {
  if (a.k === 'static') return (op === '&&') === !!a.value ? rhs() : a;
  const b = rhs();
  const va = boolOperand(ctx, src, at, a), vb = boolOperand(ctx, src, at, b);
  return { k: 'scalar', v: ctx.b.op('scalar_op', [va, vb], { fn: op === '&&' ? 'and' : 'or' })[0] };
}

function boolOperand(ctx: ScriptContext, src: SourceInfo, at: TsNode, v: SValue): Value {
  if (v.k === 'static' && typeof v.value === 'boolean') return ctx.scalar(v.value, 'bool');
  if (v.k === 'scalar' && dtypeOf(v.v) === 'bool') return v.v;
  throw src.error(at, `'&&' and '||' on run-time values need booleans on both sides, got ${describe(v)}; compare explicitly`);
}

/** A condition: static truthiness, or a run-time bool scalar. */
export function condition(ctx: ScriptContext, src: SourceInfo, at: TsNode, v: SValue): boolean | Value {
  if (v.k === 'static') return !!v.value;
  if (v.k === 'scalar') {
    const dt = dtypeOf(v.v);
    if (dt === 'bool') return v.v;
    return ctx.b.op('scalar_op', [v.v, ctx.scalar(0, dt)], { fn: 'ne' })[0];
  }
  if (v.k === 'tensor') {
    throw src.error(at, 'a Tensor used as a condition is always true in JavaScript; ' +
      'read its value with .item() (e.g. x.sum().item() > 0) or compare it (x.gt(0).all().item())');
  }
  return true;
}

const MATH_STATIC = new Set(['abs', 'floor', 'ceil', 'round', 'trunc', 'sqrt', 'exp', 'log', 'min', 'max', 'pow', 'sin', 'cos', 'tanh', 'sign', 'log2', 'log10', 'hypot', 'atan2']);

/** `Math.fn(args)`: folded when static; min/max/pow/floor lowered on run-time scalars. */
export function mathCall(ctx: ScriptContext, src: SourceInfo, at: TsNode, fn: string, args: SValue[]): SValue {
  if (args.every((a) => a.k === 'static')) {
    if (!MATH_STATIC.has(fn)) throw src.error(at, `Math.${fn} is not supported by jit.script; use one of Math.${[...MATH_STATIC].join(', Math.')}, or compute it outside the model`);
    const f = (Math as unknown as Record<string, (...xs: number[]) => number>)[fn];
    return stat(f(...args.map((a) => Number((a as { value: unknown }).value))));
  }
  if ((fn === 'min' || fn === 'max') && args.length >= 2) {
    return args.slice(1).reduce((acc, x) => {
      const va = operand(ctx, src, at, acc, x, fn), vb = operand(ctx, src, at, x, acc, fn);
      return { k: 'scalar', v: ctx.b.op('scalar_op', [va, vb], { fn })[0] } as SValue;
    }, args[0]);
  }
  if (fn === 'pow' && args.length === 2) return scalarBinary(ctx, src, at, '**', args[0], args[1]);
  if ((fn === 'floor') && args.length === 1 && args[0].k === 'scalar') {
    const a = args[0];
    if (dtypeOf(a.v) === 'int32') return a;
    return { k: 'scalar', v: ctx.b.op('scalar_op', [a.v, ctx.scalar(1, 'int32')], { fn: 'floordiv' })[0] };
  }
  throw src.error(at, `Math.${fn} on a run-time number is not supported by jit.script (only min, max, pow and floor are); ` +
    'keep the value in a tensor and use the tensor methods instead');
}

/** `Math.floor(a / b)` on run-time numbers: Python-style floor division (exact for integers). */
export function floorDiv(ctx: ScriptContext, src: SourceInfo, at: TsNode, a: SValue, b: SValue): SValue {
  if (a.k === 'static' && b.k === 'static') return stat(Math.floor(Number(a.value) / Number(b.value)));
  const va = operand(ctx, src, at, a, b, '/'), vb = operand(ctx, src, at, b, a, '/');
  return { k: 'scalar', v: ctx.b.op('scalar_op', [va, vb], { fn: 'floordiv' })[0] };
}
