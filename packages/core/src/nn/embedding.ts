// nn.Embedding: a lookup table of numEmbeddings vectors of size embeddingDim. Invariant: the
// weight is initialised N(0, 1) with the paddingIdx row zeroed (as PyTorch), and that row gets
// no gradient (F.embedding's rule).

import { fmtShape } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { zeros, arange } from '../creation.js';
import { noGrad } from '../autograd/grad-mode.js';
import * as F from '../functional/index.js';
import { Module, Parameter } from './module.js';
import { normal_ } from './init.js';
import { checkSize } from './linear.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

const EMBEDDING: LayerSignature = {
  layer: 'Embedding', required: 2,
  positional: [{ name: 'numEmbeddings', kind: 'int' }, { name: 'embeddingDim', kind: 'int' }, { name: 'paddingIdx', kind: 'int', nullable: true }],
  keywordOnly: [{ name: 'weight', kind: 'tensor' }],
};

export interface EmbeddingOptions {
  /** Row that stays fixed (no gradient) and starts at zero; negative counts from the end. */
  paddingIdx?: number | null;
  /** Use this [numEmbeddings, embeddingDim] tensor as the weight instead of a fresh one. */
  weight?: Tensor;
}

/**
 * Maps int32 indices of any shape to rows of `weight` ([numEmbeddings, embeddingDim]).
 * @example const emb = new nn.Embedding(10, 3, { paddingIdx: 0 }); emb.forward(tensor([[1, 2]], { dtype: 'int32' }))
 */
export class Embedding extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly paddingIdx: number | null;
  weight: Tensor;
  constructor(...args: [numEmbeddings: number, embeddingDim: number, opts?: EmbeddingOptions]
    | [opts: EmbeddingOptions & { numEmbeddings: number; embeddingDim: number }]
    | [numEmbeddings: number, embeddingDim: number, paddingIdx: number | null]) {
    super();
    const opts = bindLayerArgs<EmbeddingOptions & { numEmbeddings: number; embeddingDim: number }>(EMBEDDING, args);
    const { numEmbeddings, embeddingDim } = opts;
    this.numEmbeddings = checkSize('Embedding', 'numEmbeddings', numEmbeddings);
    this.embeddingDim = checkSize('Embedding', 'embeddingDim', embeddingDim);
    const p = opts.paddingIdx ?? null;
    if (p !== null && (!Number.isInteger(p) || p < -numEmbeddings || p >= numEmbeddings)) {
      throw new Error(`Embedding: paddingIdx ${p} must be within numEmbeddings (${-numEmbeddings}..${numEmbeddings - 1})`);
    }
    this.paddingIdx = p === null ? null : p < 0 ? p + numEmbeddings : p;
    if (opts.weight) {
      const w = opts.weight;
      if (w.ndim !== 2 || w.shape[0] !== numEmbeddings || w.shape[1] !== embeddingDim) {
        throw new Error(`Embedding: weight of shape ${fmtShape(w.shape)} does not match [numEmbeddings, embeddingDim] = [${numEmbeddings},${embeddingDim}]`);
      }
      this.weight = w instanceof Parameter ? w : new Parameter(w);
    } else {
      this.weight = new Parameter(zeros([numEmbeddings, embeddingDim]));
      this.resetParameters();
    }
  }

  /**
   * An Embedding whose weight is `embeddings` (frozen unless `freeze: false`).
   * @example nn.Embedding.fromPretrained(vectors, { freeze: false })
   */
  static fromPretrained(embeddings: Tensor, opts: { freeze?: boolean; paddingIdx?: number | null } = {}): Embedding {
    if (embeddings.ndim !== 2) throw new Error(`Embedding.fromPretrained: embeddings must be 2-D, got shape ${fmtShape(embeddings.shape)}`);
    const [n, d] = embeddings.shape;
    const e = new Embedding(n, d, { paddingIdx: opts.paddingIdx, weight: new Parameter(embeddings, !(opts.freeze ?? true)) });
    return e;
  }

  /** N(0, 1), with the padding row set to zero. */
  resetParameters(): void {
    normal_(this.weight);
    const p = this.paddingIdx;
    if (p !== null) {
      const w = this.weight;
      const isPad = arange(this.numEmbeddings).eq(p).unsqueeze(1);
      noGrad(() => w.maskedFill_(isPad, 0));
    }
  }

  forward(input: Tensor): Tensor {
    return F.embedding(input, this.weight, { paddingIdx: this.paddingIdx });
  }

  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}${this.paddingIdx === null ? '' : `, padding_idx=${this.paddingIdx}`}`;
  }
}
