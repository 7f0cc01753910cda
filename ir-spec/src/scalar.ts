// Scalar formulas: what an elementwise op computes for one output element, written ONCE in its
// entry (op-def.ts `scalar`) and compiled from there — to a JS closure here (the default CPU
// kernel, fused_elementwise, fused epilogues) and to WGSL in the compiler (codegen/scalar.ts).
// Invariant: an expression is plain data built from operands, number literals, the fixed
// primitive set PRIMS and calls of other entries' scalars; every backend gives each primitive
// one meaning (JS computes in double precision, 0/1 for comparisons; min/max propagate NaN;
// select(c, a, b) is c ? a : b). An entry with a `primitive` scalar has a JS function and needs a
// WGSL template; an entry with a `formula` needs nothing else.

import type { OpDef } from './op-def.js';

/** The scalar primitives every backend implements. */
export const PRIMS = ['add', 'sub', 'mul', 'div', 'neg', 'min', 'max', 'select', 'eq', 'ne', 'lt', 'le', 'gt', 'ge'] as const;
export type Prim = typeof PRIMS[number];
/** Primitives whose result is a truth value (1/0 in JS, `bool` in WGSL). */
export const COMPARISONS: ReadonlySet<Prim> = new Set(['eq', 'ne', 'lt', 'le', 'gt', 'ge']);

export type Expr =
  | { readonly kind: 'arg'; readonly index: number }
  | { readonly kind: 'num'; readonly value: number }
  | { readonly kind: 'prim'; readonly prim: Prim; readonly args: readonly Expr[] }
  | { readonly kind: 'call'; readonly op: string; readonly args: readonly Expr[]; readonly attrs: Readonly<Record<string, unknown>> };

/**
 * How an entry computes one element: a JS function of the input elements (a primitive: each
 * code generator has its own template for it), or a formula over other entries (a composite:
 * compiled everywhere from the formula, attributes known at compile time).
 */
export type ScalarDef<A> =
  | { readonly primitive: (...xs: number[]) => number }
  | { readonly formula: (xs: readonly Expr[], attrs: A) => Expr };

type Operand = Expr | number;
const ex = (a: Operand): Expr => (typeof a === 'number' ? { kind: 'num', value: a } : a);
const prim = (p: Prim) => (...args: Operand[]): Expr => ({ kind: 'prim', prim: p, args: args.map(ex) });

/**
 * Builders for formulas (a number operand is a literal).
 *
 * @example
 * // hardswish: x · clamp(x + 3, 0, 6) / 6
 * formula: ([x]) => S.div(S.mul(x, S.call('clamp', [S.add(x, 3)], { min: 0, max: 6 })), 6)
 */
export const S = {
  add: prim('add'), sub: prim('sub'), mul: prim('mul'), div: prim('div'), neg: prim('neg'),
  /** NaN-propagating minimum / maximum (torch.minimum / torch.maximum). */
  min: prim('min'), max: prim('max'),
  /** cond ? a : b, with cond a comparison. */
  select: prim('select'),
  eq: prim('eq'), ne: prim('ne'), lt: prim('lt'), le: prim('le'), gt: prim('gt'), ge: prim('ge'),
  /** Another entry's scalar applied to `args` with `attrs` (parsed by its schema). */
  call: (op: string, args: readonly Operand[], attrs: Readonly<Record<string, unknown>> = {}): Expr => ({ kind: 'call', op, args: args.map(ex), attrs }),
};

/** The operands x0 … x(n-1) a formula is written over. */
export function argsOf(n: number): Expr[] {
  return Array.from({ length: n }, (_, index) => ({ kind: 'arg', index }) as const);
}

type Fn = (xs: readonly number[]) => number;

const PRIM_JS: Readonly<Record<Prim, (a: number, b: number, c: number) => number>> = {
  add: (a, b) => a + b, sub: (a, b) => a - b, mul: (a, b) => a * b, div: (a, b) => a / b, neg: (a) => -a,
  min: Math.min, max: Math.max, select: (c, a, b) => (c !== 0 ? a : b),
  eq: (a, b) => (a === b ? 1 : 0), ne: (a, b) => (a !== b ? 1 : 0), lt: (a, b) => (a < b ? 1 : 0),
  le: (a, b) => (a <= b ? 1 : 0), gt: (a, b) => (a > b ? 1 : 0), ge: (a, b) => (a >= b ? 1 : 0),
};

/** Compiles `e` to a closure over the operand vector; `lookup` resolves called entries. */
export function compileExpr(e: Expr, lookup: (op: string) => OpDef): Fn {
  switch (e.kind) {
    case 'arg': { const i = e.index; return (xs) => xs[i]; }
    case 'num': { const v = e.value; return () => v; }
    case 'prim': {
      const f = PRIM_JS[e.prim];
      const [a, b = () => 0, c = () => 0] = e.args.map((x) => compileExpr(x, lookup));
      if (e.prim === 'select') return (xs) => (a(xs) !== 0 ? b(xs) : c(xs));
      return (xs) => f(a(xs), b(xs), c(xs));
    }
    case 'call': {
      const g = scalarFn(lookup(e.op), e.attrs, lookup);
      const args = e.args.map((x) => compileExpr(x, lookup));
      if (args.length === 1) { const [a] = args; return (xs) => g(a(xs)); }
      return (xs) => g(...args.map((a) => a(xs)));
    }
  }
}

const cache = new WeakMap<OpDef, (...xs: number[]) => number>();

/**
 * The JS function of `def`'s scalar with `attrs`: the primitive itself, or its compiled formula
 * (compiled once per entry when the formula reads no attributes).
 */
export function scalarFn(def: OpDef, attrs: Readonly<Record<string, unknown>>, lookup: (op: string) => OpDef): (...xs: number[]) => number {
  const s = def.scalar;
  if (!s) throw new Error(`op '${def.name}' has no scalar formula; only elementwise entries with a 'scalar' can be fused or compiled per element`);
  if ('primitive' in s) return s.primitive;
  const plain = Object.keys(attrs).length === 0;
  const hit = plain ? cache.get(def) : undefined;
  if (hit) return hit;
  const body = compileExpr(s.formula(argsOf(def.inputs.length), def.attrs.parse(attrs)), lookup);
  const n = def.inputs.length;
  const f = n === 1 ? (x: number) => body([x]) : n === 2 ? (x: number, y: number) => body([x, y]) : (...xs: number[]) => body(xs);
  if (plain) cache.set(def, f);
  return f;
}
