// Pass `canonicalize`: local algebraic simplifications from a rule table, run to a fixpoint
// (at most MAX_ROUNDS rounds), then dead nodes are swept. Invariants: each rule matches fully
// (every operand checked) before it builds anything; a rule only fires when the result has
// exactly the type of the value it replaces, so broadcasting (`x * ones[4,4]` with x [4]) is
// never lost.

import { typeEquals, type Graph, type Node, type Value } from '@kiln/ir-spec';
import { rewriteGraph, type RewriteContext } from '../rewrite.js';
import { eliminateDeadCode } from './eliminate-dead-code.js';

/** Rounds of the whole rule table before the pass stops (a rule set that cycles ends here). */
export const MAX_ROUNDS = 8;

/** A matched rewrite: the nodes to emit in place of the matched one. */
type Apply = () => Node[];
interface Rule { readonly name: string; match(n: Node, ctx: RewriteContext): Apply | null }

/** Whether `v` is a constant whose every element equals `k`. */
function isSplat(ctx: RewriteContext, v: Value | null, k: number): boolean {
  const d = ctx.constantData(v);
  if (!d || d.data.length === 0) return false;
  for (let i = 0; i < d.data.length; i++) if (Number(d.data[i]) !== k) return false;
  return true;
}

/** Replaces `n`'s only result by `x` when the types agree. */
function forward(n: Node, ctx: RewriteContext, x: Value | null): Apply | null {
  if (!x || !typeEquals(x.type, n.outputs[0].type)) return null;
  return () => { ctx.replace(n.outputs[0], x); return []; };
}

/** Identity operand `k` on either side (`sides` 'both') or on the right only. */
function identity(op: string, k: number, sides: 'both' | 'right'): Rule['match'] {
  return (n, ctx) => {
    if (n.op !== op) return null;
    const [a, b] = n.inputs;
    if (isSplat(ctx, b, k)) return forward(n, ctx, a);
    if (sides === 'both' && isSplat(ctx, a, k)) return forward(n, ctx, b);
    return null;
  };
}

const dimsOf = (n: Node) => n.attrs.dims as readonly number[];

export const RULES: readonly Rule[] = [
  // x * 1 → x, 1 * x → x
  { name: 'mul-one', match: identity('mul', 1, 'both') },
  // x + 0 → x, 0 + x → x
  { name: 'add-zero', match: identity('add', 0, 'both') },
  // x - 0 → x
  { name: 'sub-zero', match: identity('sub', 0, 'right') },
  // x / 1 → x
  { name: 'div-one', match: identity('div', 1, 'right') },
  // permute(x, [0,1,…]) → x
  {
    name: 'permute-identity',
    match: (n, ctx) => (n.op === 'permute' && dimsOf(n).every((d, i) => d === i) ? forward(n, ctx, n.inputs[0]) : null),
  },
  // permute(permute(x, p), q) → permute(x, p∘q)   (transpose of transpose)
  {
    name: 'permute-permute',
    match: (n, ctx) => {
      const inner = n.op === 'permute' ? ctx.def(n.inputs[0]) : undefined;
      if (!inner || inner.op !== 'permute') return null;
      const p = dimsOf(inner), q = dimsOf(n);
      return () => [ctx.node('permute', [inner.inputs[0]], { dims: q.map((i) => p[i]) }, n.meta, n.outputs)];
    },
  },
  // reshape(x) to x's own type → x
  { name: 'reshape-identity', match: (n, ctx) => (n.op === 'reshape' ? forward(n, ctx, n.inputs[0]) : null) },
  // reshape(reshape(x, s1), s2) → reshape(x, s2)   (reshape chains)
  {
    name: 'reshape-reshape',
    match: (n, ctx) => {
      const inner = n.op === 'reshape' ? ctx.def(n.inputs[0]) : undefined;
      if (!inner || inner.op !== 'reshape') return null;
      return () => [ctx.node('reshape', [inner.inputs[0]], n.attrs, n.meta, n.outputs)];
    },
  },
  // relu(relu(x)) → relu(x)
  {
    name: 'relu-relu',
    match: (n, ctx) => {
      const inner = n.op === 'relu' ? ctx.def(n.inputs[0]) : undefined;
      return inner && inner.op === 'relu' ? forward(n, ctx, inner.outputs[0]) : null;
    },
  },
];

/**
 * Applies RULES until none fires (or MAX_ROUNDS), then removes what they left unused.
 *
 * @example
 * canonicalize(g); // permute(permute(%x, [1,0]), [1,0]) becomes %x
 */
export function canonicalize(g: Graph): Graph {
  let cur = g;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const next = rewriteGraph(cur, (node, ctx) => {
      if (node.outputs.length !== 1 || node.regions.length) return [node];
      for (const rule of RULES) {
        const apply = rule.match(node, ctx);
        if (apply) return apply();
      }
      return [node];
    });
    if (next === cur) break;
    cur = next;
  }
  return cur === g ? g : eliminateDeadCode(cur);
}
