// Pass `canonicalize`: local algebraic simplifications and canonical forms, as a rule table run
// by the pattern driver to a fixpoint (at most MAX_ROUNDS sweeps); what the rules leave unused
// is swept by the pipeline. Invariants: each rule matches fully (every operand checked) before
// it builds anything; a forwarding rule only fires when the value it forwards has exactly the
// type of the value it replaces, so broadcasting (`x * ones[4,4]` with x [4]) is never lost;
// a rule that reads a producer outside the visited block (`.outer()`) replaces one op with at
// most one op, so a loop body never computes more per trip.

import { floatData, type RewriteContext } from '../rewrite.js';
import { any, applyRules, constant, op, sameType, splat, type Match, type Rule } from '../patterns.js';
import type { Graph, Node, Value } from '@kiln/ir-spec';

/** Rounds of the whole rule table before the pass stops (a rule set that cycles ends here). */
export const MAX_ROUNDS = 8;

/** Replaces the root's only result by `x` (the pattern checked the types). */
function forward(m: Match, ctx: RewriteContext, x: Value): Node[] {
  ctx.replace(m.root.outputs[0], x);
  return [];
}
const forwardX = (m: Match, ctx: RewriteContext) => forward(m, ctx, m.value('x'));
const keepsType = (m: Match) => sameType(m.value('x'), m.root.outputs[0]);
const dimsOf = (n: Node) => n.attrs.dims as readonly number[];

/** matmul(x, constant W [K, N]) as linear(x, Wᵀ): linear's weight layout is [N, K]. */
export const MATMUL_AS_LINEAR: Rule = {
  name: 'matmul-linear',
  pattern: op('matmul', any('x'), constant('w')).where((m) => {
    const x = m.value('x'), w = m.data('w');
    return !!floatData(w) && w.shape.length === 2 && x.type.kind === 'tensor' && x.type.shape.length >= 2;
  }),
  rewrite: (m, ctx) => {
    const w = m.data('w'), data = floatData(w)!, root = m.root;
    const [K, N] = w.shape;
    const t = new Float32Array(K * N);
    for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) t[n * K + k] = data[k * N + n];
    const c = ctx.constant(`${root.meta.scope ?? 'matmul'}.weight_t`, { dtype: 'float32', shape: [N, K], data: t }, root.meta);
    return [c, ctx.node('linear', [m.value('x'), c.outputs[0]], {}, root.meta, root.outputs)];
  },
};

export const RULES: readonly Rule[] = [
  // x * 1 → x, 1 * x → x
  { name: 'mul-one', pattern: op('mul', any('x'), splat(1)).commutative().where(keepsType), rewrite: forwardX },
  // x + 0 → x, 0 + x → x
  { name: 'add-zero', pattern: op('add', any('x'), splat(0)).commutative().where(keepsType), rewrite: forwardX },
  // x - 0 → x
  { name: 'sub-zero', pattern: op('sub', any('x'), splat(0)).where(keepsType), rewrite: forwardX },
  // x / 1 → x
  { name: 'div-one', pattern: op('div', any('x'), splat(1)).where(keepsType), rewrite: forwardX },
  // permute(x, [0,1,…]) → x
  {
    name: 'permute-identity',
    pattern: op('permute', any('x')).where((m) => dimsOf(m.root).every((d, i) => d === i) && keepsType(m)),
    rewrite: forwardX,
  },
  // permute(permute(x, p), q) → permute(x, p∘q)   (transpose of transpose; one permute for one)
  {
    name: 'permute-permute',
    pattern: op('permute', op('permute', any('x')).as('inner').outer()),
    rewrite: (m, ctx) => {
      const p = dimsOf(m.node('inner')), q = dimsOf(m.root);
      return [ctx.node('permute', [m.value('x')], { dims: q.map((i) => p[i]) }, m.root.meta, m.root.outputs)];
    },
  },
  // reshape(x) to x's own type → x
  { name: 'reshape-identity', pattern: op('reshape', any('x')).where(keepsType), rewrite: forwardX },
  // reshape(reshape(x, s1), s2) → reshape(x, s2)   (reshape chains; one reshape for one)
  {
    name: 'reshape-reshape',
    pattern: op('reshape', op('reshape', any('x')).outer()),
    rewrite: (m, ctx) => [ctx.node('reshape', [m.value('x')], m.root.attrs, m.root.meta, m.root.outputs)],
  },
  // relu(relu(x)) → relu(x)   (the inner relu is read, not recomputed)
  {
    name: 'relu-relu',
    pattern: op('relu', op('relu').as('inner').outer()),
    rewrite: (m, ctx) => forward(m, ctx, m.node('inner').outputs[0]),
  },
  // matmul(x, W) → linear(x, Wᵀ)   (W constant 2-D: the form fold-channel-affine and fuse-epilogue read)
  MATMUL_AS_LINEAR,
];

/**
 * Applies RULES until none fires (or MAX_ROUNDS sweeps).
 *
 * @example
 * canonicalize(g); // permute(permute(%x, [1,0]), [1,0]) becomes %x
 */
export function canonicalize(g: Graph): Graph {
  return applyRules(g, RULES, { maxRounds: MAX_ROUNDS, label: 'canonicalize' }).graph;
}
