// Models the jit.trace tests (tests/trace*.test.ts) capture: recurrent, attention, weight
// sharing and a recursive tree, each small enough that eager and traced runs take milliseconds.
// Every model is deterministic in eval mode, so traced == eager is a fair check.

import { cat, nn, type Tensor } from 'kiln';

/** nn.LSTM (batchFirst) returning PyTorch's `[output, [h, c]]` unchanged; input [N, 5, 6]. */
export class LstmModel extends nn.Module {
  lstm = new nn.LSTM(6, 8, { batchFirst: true, numLayers: 2 });
  forward(x: Tensor): [Tensor, [Tensor, Tensor]] {
    return this.lstm.forward(x);
  }
}

/** The additive causal mask of a length-`n` sequence: 0 on and below the diagonal, -inf above. */
export function causalMask(n: number): number[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (j > i ? -Infinity : 0)));
}

/**
 * A pre-norm self-attention block over [N, L, 16]: LayerNorm, MultiheadAttention (4 heads,
 * batchFirst) with a causal float mask and an optional bool key-padding mask [N, L], a residual
 * and a feed-forward layer. Returns `{ y, weights }` (weights null without needWeights).
 */
export class AttentionBlock extends nn.Module {
  norm = new nn.LayerNorm(16);
  attn = new nn.MultiheadAttention(16, 4, { batchFirst: true });
  ff = new nn.Sequential(new nn.Linear(16, 32), new nn.GELU(), new nn.Linear(32, 16));
  constructor(private readonly mask: Tensor, private readonly needWeights: boolean) { super(); }
  forward(x: Tensor, padding?: Tensor): { y: Tensor; weights: Tensor } | Tensor {
    const h = this.norm.forward(x);
    const [a, w] = this.attn.forward(h, h, h, { attnMask: this.mask, keyPaddingMask: padding ?? null, needWeights: this.needWeights });
    const y = x.add(a);
    const out = y.add(this.ff.forward(y));
    return w ? { y: out, weights: w } : out;
  }
}

/** Calls one Linear twice (weight sharing): the graph has one `shared.weight` used by two nodes. */
export class SharedModel extends nn.Module {
  shared = new nn.Linear(8, 8);
  head = new nn.Linear(8, 3);
  forward(x: Tensor): Tensor {
    return this.head.forward(this.shared.forward(this.shared.forward(x).tanh()).tanh());
  }
}

/** A binary tree: a leaf holds an index into the input's leaf features; a node has two children. */
export type Tree = number | [Tree, Tree];

/** Nodes of a tree: [leaves, inner nodes]. */
export function countTree(t: Tree): [number, number] {
  if (typeof t === 'number') return [1, 0];
  const [a, b] = [countTree(t[0]), countTree(t[1])];
  return [a[0] + b[0], a[1] + b[1] + 1];
}

/**
 * A recursive tree network over a fixed tree: leaf i embeds x[:, i] (slice + reshape + linear
 * `leaf`), an inner node combines its children as tanh(compose(cat(l, r))). Recursion is plain
 * JavaScript, so a trace unrolls it: per leaf slice, reshape, linear; per inner node cat,
 * linear, tanh; then the linear `out`.
 */
export class TreeModel extends nn.Module {
  leaf = new nn.Linear(4, 8);
  compose = new nn.Linear(16, 8);
  out = new nn.Linear(8, 2);
  constructor(readonly tree: Tree) { super(); }
  forward(x: Tensor): Tensor {
    return this.out.forward(this.encode(x, this.tree));
  }
  private encode(x: Tensor, t: Tree): Tensor {
    if (typeof t === 'number') return this.leaf.forward(x.slice(1, t, t + 1).reshape([x.shape[0], 4]));
    const l = this.encode(x, t[0]), r = this.encode(x, t[1]);
    return this.compose.forward(cat([l, r], 1)).tanh();
  }
}
