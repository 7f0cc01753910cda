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

/** A compiled formula over up to three operands (no array per element). */
type Fn = (x0: number, x1: number, x2: number) => number;

/** Each primitive's meaning in JS (select is compiled lazily: only the taken branch runs). */
const PRIM_JS: Readonly<Record<Exclude<Prim, 'select'>, (a: number, b: number) => number>> = {
  add: (a, b) => a + b, sub: (a, b) => a - b, mul: (a, b) => a * b, div: (a, b) => a / b, neg: (a) => -a,
  min: (a, b) => Math.min(a, b), max: (a, b) => Math.max(a, b),
  eq: (a, b) => (a === b ? 1 : 0), ne: (a, b) => (a !== b ? 1 : 0), lt: (a, b) => (a < b ? 1 : 0),
  le: (a, b) => (a <= b ? 1 : 0), gt: (a, b) => (a > b ? 1 : 0), ge: (a, b) => (a >= b ? 1 : 0),
};

const OPERANDS: readonly Fn[] = [(x0) => x0, (_x0, x1) => x1, (_x0, _x1, x2) => x2];

/** Compiles `e` (over at most three operands) to a closure; `lookup` resolves called entries. */
export function compileExpr(e: Expr, lookup: (op: string) => OpDef): Fn {
  switch (e.kind) {
    case 'arg': {
      const f = OPERANDS[e.index];
      if (!f) throw new Error(`a scalar formula reads operand ${e.index}; formulas take at most ${OPERANDS.length}`);
      return f;
    }
    case 'num': { const v = e.value; return () => v; }
    case 'prim': {
      const [a, b, c] = e.args.map((x) => compileExpr(x, lookup));
      if (e.prim === 'select') return (x0, x1, x2) => (a(x0, x1, x2) !== 0 ? b(x0, x1, x2) : c(x0, x1, x2));
      const f = PRIM_JS[e.prim];
      // A primitive straight over the operands (add, maximum, …) is its own function: no closures.
      if (e.args.every((x, i) => x.kind === 'arg' && x.index === i)) return f as Fn;
      if (e.args.length === 1) return (x0, x1, x2) => f(a(x0, x1, x2), 0);
      return (x0, x1, x2) => f(a(x0, x1, x2), b(x0, x1, x2));
    }
    case 'call': {
      const g = scalarFn(lookup(e.op), e.attrs, lookup) as (a: number, b: number, c: number) => number;
      const [a, b = a, c = a] = e.args.map((x) => compileExpr(x, lookup));
      if (e.args.length === 1) return (x0, x1, x2) => g(a(x0, x1, x2), 0, 0);
      if (e.args.length === 2) return (x0, x1, x2) => g(a(x0, x1, x2), b(x0, x1, x2), 0);
      return (x0, x1, x2) => g(a(x0, x1, x2), b(x0, x1, x2), c(x0, x1, x2));
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
  const f = compileExpr(s.formula(argsOf(def.inputs.length), def.attrs.parse(attrs)), lookup) as (...xs: number[]) => number;
  if (plain) cache.set(def, f);
  return f;
}

/** Elements per block of formula evaluation: the buffers of all nodes stay in cache. */
const BLOCK = 1024;

/** out[i] = p(A[i], B[i], C[i]) for i < n, as one tight loop (one switch per node and block). */
function primLoop(p: Prim, A: Float64Array, B: Float64Array, C: Float64Array, out: Float64Array, n: number): void {
  switch (p) {
    case 'add': for (let i = 0; i < n; i++) out[i] = A[i] + B[i]; break;
    case 'sub': for (let i = 0; i < n; i++) out[i] = A[i] - B[i]; break;
    case 'mul': for (let i = 0; i < n; i++) out[i] = A[i] * B[i]; break;
    case 'div': for (let i = 0; i < n; i++) out[i] = A[i] / B[i]; break;
    case 'neg': for (let i = 0; i < n; i++) out[i] = -A[i]; break;
    case 'select': for (let i = 0; i < n; i++) out[i] = A[i] !== 0 ? B[i] : C[i]; break;
    default: { const f = PRIM_JS[p]; for (let i = 0; i < n; i++) out[i] = f(A[i], B[i]); }
  }
}

/** One node of a formula flattened for block evaluation: it fills `out` from its operands' buffers. */
type Step = (n: number) => void;

/**
 * Compiles formula `e` over `arity` operands into a whole-buffer loop: the default CPU kernel of
 * a composite entry. It runs block by block, one tight loop per node (a closure per element is
 * several times slower); every node computes in double precision, as compileExpr does.
 */
export function compileFormulaLoop(e: Expr, arity: number, lookup: (op: string) => OpDef): (srcs: readonly ArrayLike<number>[], out: { [i: number]: number }, n: number) => void {
  const inputs = Array.from({ length: arity }, () => new Float64Array(BLOCK));
  const steps: Step[] = [];
  const flatten = (x: Expr, args: readonly Float64Array[], memo: Map<Expr, Float64Array>): Float64Array => {
    const hit = memo.get(x);
    if (hit) return hit;
    let buf: Float64Array;
    if (x.kind === 'arg') buf = args[x.index];
    else if (x.kind === 'num') buf = new Float64Array(BLOCK).fill(x.value);
    else if (x.kind === 'prim') {
      const [A, B = A, C = A] = x.args.map((a) => flatten(a, args, memo));
      const out = buf = new Float64Array(BLOCK), p = x.prim;
      steps.push((n) => primLoop(p, A, B, C, out, n));
    } else {
      const def = lookup(x.op), s = def.scalar;
      if (!s) throw new Error(`op '${x.op}' has no scalar formula`);
      const ins = x.args.map((a) => flatten(a, args, memo));
      if ('formula' in s) buf = flatten(s.formula(argsOf(def.inputs.length), def.attrs.parse(x.attrs)), ins, new Map());
      else {
        const g = s.primitive, [A, B = A] = ins, out = buf = new Float64Array(BLOCK);
        steps.push(ins.length === 1 ? (n) => { for (let i = 0; i < n; i++) out[i] = g(A[i]); } : (n) => { for (let i = 0; i < n; i++) out[i] = g(A[i], B[i]); });
      }
    }
    memo.set(x, buf);
    return buf;
  };
  const result = flatten(e, inputs, new Map());
  return (srcs, out, total) => {
    for (let start = 0; start < total; start += BLOCK) {
      const n = Math.min(BLOCK, total - start);
      for (let k = 0; k < arity; k++) { const src = srcs[k], dst = inputs[k]; for (let i = 0; i < n; i++) dst[i] = src[start + i]; }
      for (const step of steps) step(n);
      for (let i = 0; i < n; i++) out[start + i] = result[i];
    }
  };
}
