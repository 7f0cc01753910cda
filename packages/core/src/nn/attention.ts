// nn.MultiheadAttention: softmax(Q Kᵀ / √d + mask) V per head, with PyTorch's parameter names
// (in_proj_weight / q,k,v_proj_weight, in_proj_bias, out_proj.*), init and layouts. Invariant:
// built from primitive ops only (linear, matmul, softmax, masks as additive -inf), so it traces
// and differentiates like any composite.

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { zeros } from '../creation.js';
import { linear } from '../ops/linalg.js';
import { expand } from '../ops/shape.js';
import * as F from '../functional/index.js';
import { Module, Parameter } from './module.js';
import { Linear, checkSize } from './linear.js';
import { constant_, xavierUniform_ } from './init.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

/** PyTorch's name for MultiheadAttention's output projection (a plain Linear); kept so the
 * module prints as PyTorch's does. */
export class NonDynamicallyQuantizableLinear extends Linear {}

const MHA: LayerSignature = {
  layer: 'MultiheadAttention', required: 2,
  positional: [{ name: 'embedDim', kind: 'int' }, { name: 'numHeads', kind: 'int' }, { name: 'dropout', kind: 'number' }, { name: 'bias', kind: 'bool' }],
  keywordOnly: [{ name: 'kdim', kind: 'int', nullable: true }, { name: 'vdim', kind: 'int', nullable: true }, { name: 'batchFirst', kind: 'bool' }],
};

export interface MultiheadAttentionOptions {
  /** Dropout on the attention weights in training mode (default 0). */
  dropout?: number;
  /** Biases on the input and output projections (default true). */
  bias?: boolean;
  /** Inputs and output are [batch, seq, feature] instead of [seq, batch, feature]. */
  batchFirst?: boolean;
  /** Feature size of key (default embedDim). */
  kdim?: number | null;
  /** Feature size of value (default embedDim). */
  vdim?: number | null;
}

export interface AttentionForwardOptions {
  /** [N, S] (or [S] unbatched): true (bool) marks keys to ignore; a float mask is added. */
  keyPaddingMask?: Tensor | null;
  /** Return the attention weights (default true). */
  needWeights?: boolean;
  /** [L, S] or [N·numHeads, L, S]: true (bool) forbids attending; a float mask is added. */
  attnMask?: Tensor | null;
  /** Average the returned weights over heads (default true); else per head. */
  averageAttnWeights?: boolean;
}

/** A bool mask becomes an additive float mask (-inf where true); a float mask is used as is. */
function additiveMask(what: string, m: Tensor): Tensor {
  // A dispatched expand of a 0-d zero, not zeros(m.shape): a trace then records an op whose
  // shape follows a dynamic batch instead of a constant baked at the example's size.
  if (m.dtype === 'bool') return expand(zeros([]), m.shape).maskedFill(m, -Infinity);
  if (m.dtype === 'float32') return m;
  throw new Error(`MultiheadAttention: ${what} must be a bool or float32 tensor, got ${m.dtype}`);
}

/**
 * Multi-head attention (Vaswani et al.). Inputs [L, N, E] query, [S, N, kdim] key, [S, N, vdim]
 * value ([N, L, E]… with batchFirst; unbatched [L, E]… too). `forward` returns
 * `[output [L, N, E], weights [N, L, S] (averaged over heads) | [N, heads, L, S] | null]`.
 * @example const mha = new nn.MultiheadAttention(16, 4); const [y, w] = mha.forward(q, k, v, { attnMask: causal });
 */
export class MultiheadAttention extends Module {
  readonly embedDim: number;
  readonly kdim: number;
  readonly vdim: number;
  readonly numHeads: number;
  readonly headDim: number;
  readonly dropout: number;
  readonly batchFirst: boolean;
  // PyTorch's names: one packed [3E, E] projection when kdim = vdim = E, else three.
  in_proj_weight: Tensor | null;
  q_proj_weight: Tensor | null;
  k_proj_weight: Tensor | null;
  v_proj_weight: Tensor | null;
  in_proj_bias: Tensor | null;
  out_proj: NonDynamicallyQuantizableLinear;

  constructor(...args: [embedDim: number, numHeads: number, opts?: MultiheadAttentionOptions]
    | [opts: MultiheadAttentionOptions & { embedDim: number; numHeads: number }]
    | [embedDim: number, numHeads: number, dropout: number, bias?: boolean]) {
    super();
    const opts = bindLayerArgs<MultiheadAttentionOptions & { embedDim: number; numHeads: number }>(MHA, args);
    const { embedDim, numHeads } = opts;
    this.embedDim = checkSize('MultiheadAttention', 'embedDim', embedDim, 1);
    this.numHeads = checkSize('MultiheadAttention', 'numHeads', numHeads, 1);
    if (embedDim % numHeads !== 0) throw new Error(`MultiheadAttention: embedDim (${embedDim}) must be divisible by numHeads (${numHeads})`);
    this.headDim = embedDim / numHeads;
    this.kdim = checkSize('MultiheadAttention', 'kdim', opts.kdim ?? embedDim, 1);
    this.vdim = checkSize('MultiheadAttention', 'vdim', opts.vdim ?? embedDim, 1);
    this.dropout = opts.dropout ?? 0;
    if (!(this.dropout >= 0 && this.dropout <= 1)) throw new Error(`MultiheadAttention: dropout must be in [0, 1], got ${this.dropout}`);
    this.batchFirst = opts.batchFirst ?? false;
    const packed = this.kdim === embedDim && this.vdim === embedDim;
    this.in_proj_weight = packed ? new Parameter(zeros([3 * embedDim, embedDim])) : null;
    this.q_proj_weight = packed ? null : new Parameter(zeros([embedDim, embedDim]));
    this.k_proj_weight = packed ? null : new Parameter(zeros([embedDim, this.kdim]));
    this.v_proj_weight = packed ? null : new Parameter(zeros([embedDim, this.vdim]));
    const bias = opts.bias ?? true;
    this.in_proj_bias = bias ? new Parameter(zeros([3 * embedDim])) : null;
    this.out_proj = new NonDynamicallyQuantizableLinear(embedDim, embedDim, { bias });
    this.resetParameters();
  }

  /** Xavier-uniform projections, zero biases (out_proj.weight keeps Linear's init), as PyTorch. */
  resetParameters(): void {
    if (this.in_proj_weight) xavierUniform_(this.in_proj_weight);
    for (const w of [this.q_proj_weight, this.k_proj_weight, this.v_proj_weight]) if (w) xavierUniform_(w);
    if (this.in_proj_bias) constant_(this.in_proj_bias, 0);
    if (this.out_proj.bias) constant_(this.out_proj.bias, 0);
  }

  /** The q, k, v projection weights and biases. */
  #projections(): [Tensor, Tensor, Tensor, (Tensor | null)[]] {
    const E = this.embedDim;
    const b = this.in_proj_bias ? this.in_proj_bias.split(E, 0) : [null, null, null];
    if (this.in_proj_weight) {
      const [wq, wk, wv] = this.in_proj_weight.split(E, 0);
      return [wq, wk, wv, b];
    }
    const { q_proj_weight: wq, k_proj_weight: wk, v_proj_weight: wv } = this;
    if (!wq || !wk || !wv) throw new Error('MultiheadAttention: q/k/v_proj_weight are missing (in_proj_weight is null)');
    return [wq, wk, wv, b];
  }

  forward(query: Tensor, key: Tensor, value: Tensor, opts: AttentionForwardOptions = {}): [Tensor, Tensor | null] {
    const needWeights = opts.needWeights ?? true;
    const batched = query.ndim === 3;
    if (query.ndim !== 2 && !batched) throw new Error(`MultiheadAttention: query must be 2-D (unbatched) or 3-D, got shape ${fmtShape(query.shape)}`);
    if (key.ndim !== query.ndim || value.ndim !== query.ndim) {
      throw new Error(`MultiheadAttention: query ${fmtShape(query.shape)}, key ${fmtShape(key.shape)} and value ${fmtShape(value.shape)} must all be batched (3-D) or all unbatched (2-D)`);
    }
    // To [seq, batch, feature].
    const layout = (t: Tensor) => (!batched ? t.unsqueeze(1) : this.batchFirst ? t.transpose(0, 1) : t);
    const q = layout(query), k = layout(key), v = layout(value);
    const [L, N, E] = q.shape, S = k.shape[0], H = this.numHeads, hd = this.headDim;
    if (E !== this.embedDim) throw new Error(`MultiheadAttention: query has ${E} features, expected embedDim=${this.embedDim}`);
    if (k.shape[2] !== this.kdim || v.shape[2] !== this.vdim) {
      throw new Error(`MultiheadAttention: key/value have ${k.shape[2]}/${v.shape[2]} features, expected kdim=${this.kdim}, vdim=${this.vdim}`);
    }
    if (k.shape[1] !== N || v.shape[1] !== N || v.shape[0] !== S) {
      throw new Error(`MultiheadAttention: query ${fmtShape(query.shape)}, key ${fmtShape(key.shape)} and value ${fmtShape(value.shape)} disagree on batch or sequence sizes`);
    }

    const mask = this.#mask(opts, batched, N, L, S);

    const [wq, wk, wv, [bq, bk, bv]] = this.#projections();
    // [seq, N, E] → [N·H, seq, hd]: batch n, head h is row n·H + h.
    const heads = (t: Tensor, len: number) => t.reshape([len, N * H, hd]).transpose(0, 1);
    const qh = heads(linear(q, wq, bq), L);
    const kh = heads(linear(k, wk, bk), S);
    const vh = heads(linear(v, wv, bv), S);
    let scores = qh.mul(1 / Math.sqrt(hd)).matmul(kh.transpose(1, 2)); // [N·H, L, S]
    if (mask) scores = scores.add(mask);
    let attn = scores.softmax(-1);
    if (this.dropout > 0 && this.training) attn = F.dropout(attn, { p: this.dropout, training: true });
    const ctx = attn.matmul(vh).transpose(0, 1).reshape([L * N, E]); // [L, N·H, hd] → [L·N, E]
    let out = linear(ctx, this.out_proj.weight, this.out_proj.bias).reshape([L, N, E]);
    out = !batched ? out.squeeze(1) : this.batchFirst ? out.transpose(0, 1) : out;

    if (!needWeights) return [out, null];
    let w = attn.reshape([N, H, L, S]);
    if (opts.averageAttnWeights ?? true) w = w.mean(1);
    return [out, batched ? w : w.squeeze(0)];
  }

  /** The combined additive mask, broadcastable to [N·H, L, S], or null. */
  #mask(opts: AttentionForwardOptions, batched: boolean, N: number, L: number, S: number): Tensor | null {
    const H = this.numHeads;
    let mask: Tensor | null = null;
    if (opts.attnMask) {
      const m = opts.attnMask;
      if (m.ndim === 2) {
        if (m.shape[0] !== L || m.shape[1] !== S) throw new Error(`MultiheadAttention: attnMask of shape ${fmtShape(m.shape)} should be [L, S] = [${L},${S}]`);
        mask = additiveMask('attnMask', m).unsqueeze(0);
      } else if (m.ndim === 3) {
        if (m.shape[0] !== N * H || m.shape[1] !== L || m.shape[2] !== S) {
          throw new Error(`MultiheadAttention: attnMask of shape ${fmtShape(m.shape)} should be [N·numHeads, L, S] = [${N * H},${L},${S}]`);
        }
        mask = additiveMask('attnMask', m);
      } else {
        throw new Error(`MultiheadAttention: attnMask must be 2-D or 3-D, got shape ${fmtShape(m.shape)}`);
      }
    }
    if (opts.keyPaddingMask) {
      const m = opts.keyPaddingMask;
      const want = batched ? [N, S] : [S];
      if (m.ndim !== want.length || m.shape.some((d, i) => d !== want[i])) {
        throw new Error(`MultiheadAttention: keyPaddingMask of shape ${fmtShape(m.shape)} should be ${fmtShape(want)} (batch, source length)`);
      }
      // [N, S] → [N·H, 1, S], one copy per head.
      const kpm = additiveMask('keyPaddingMask', m).reshape([N, 1, 1, S]).expand([N, H, 1, S]).reshape([N * H, 1, S]);
      mask = mask ? mask.add(kpm) : kpm;
    }
    return mask;
  }
}
