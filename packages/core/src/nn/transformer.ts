// Transformer layers: TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer,
// TransformerDecoder, Transformer — composites of nn.MultiheadAttention, Linear, LayerNorm and
// Dropout. Invariant: submodule names and registration order are PyTorch 1.13's (self_attn,
// [multihead_attn,] linear1, dropout, linear2, norm1, norm2, [norm3,] dropout1, dropout2,
// [dropout3]; stacks as layers.0… and norm), so PyTorch state dicts load unchanged; the
// post-norm (default) and pre-norm (normFirst) residual orders are PyTorch's; a stack's layers
// start as copies of the given layer, as PyTorch's deepcopy; TransformerEncoder reproduces the
// visible effect of PyTorch 1.13's nested-tensor fast path (zeros at padded positions).

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { full } from '../creation.js';
import { triu } from '../ops/indexing.js';
import { expand } from '../ops/shape.js';
import { Module } from './module.js';
import { ModuleList } from './container.js';
import { Linear, checkSize } from './linear.js';
import { LayerNorm } from './norm.js';
import { Dropout } from './activation.js';
import { MultiheadAttention } from './attention.js';
import { xavierUniform_ } from './init.js';
import { isGradEnabled } from '../autograd/grad-mode.js';
import { bindLayerArgs, type ArgSpec, type LayerSignature } from './layer-args.js';

/** 'relu' (default), 'gelu', or a function of a tensor. */
export type TransformerActivation = 'relu' | 'gelu' | ((x: Tensor) => Tensor);

export interface TransformerLayerOptions {
  dimFeedforward?: number;
  dropout?: number;
  activation?: TransformerActivation;
  layerNormEps?: number;
  /** Inputs and outputs are [batch, seq, feature] instead of [seq, batch, feature]. */
  batchFirst?: boolean;
  /** Pre-norm: LayerNorm before attention and feedforward (default false: after the residual add). */
  normFirst?: boolean;
}

const LAYER_ARGS: ArgSpec[] = [{ name: 'dimFeedforward', kind: 'int' }, { name: 'dropout', kind: 'number' },
  { name: 'activation', kind: { oneOf: ['relu', 'gelu'] } }, { name: 'layerNormEps', kind: 'number' }, { name: 'batchFirst', kind: 'bool' }, { name: 'normFirst', kind: 'bool' }];
const layerSig = (layer: string): LayerSignature => ({ layer, required: 2, positional: [{ name: 'dModel', kind: 'int' }, { name: 'nhead', kind: 'int' }, ...LAYER_ARGS] });
const ENC_SIG = layerSig('TransformerEncoderLayer'), DEC_SIG = layerSig('TransformerDecoderLayer');

type LayerArgs = [dModel: number, nhead: number, opts?: TransformerLayerOptions] | [opts: TransformerLayerOptions & { dModel: number; nhead: number }];

/** Binds the arguments; an activation function is taken out first (the binder checks values by kind). */
function bindLayer(sig: LayerSignature, args: readonly unknown[]): TransformerLayerOptions & { dModel: number; nhead: number } {
  const last = args[args.length - 1];
  let fn: ((x: Tensor) => Tensor) | undefined;
  let rest = args;
  if (last && typeof last === 'object' && typeof (last as { activation?: unknown }).activation === 'function') {
    const { activation, ...others } = last as TransformerLayerOptions;
    fn = activation as (x: Tensor) => Tensor;
    rest = [...args.slice(0, -1), others];
  }
  const a = bindLayerArgs<TransformerLayerOptions & { dModel: number; nhead: number }>(sig, rest);
  return fn ? { ...a, activation: fn } : a;
}

function activationFn(a: TransformerActivation): (x: Tensor) => Tensor {
  if (typeof a === 'function') return a;
  return a === 'gelu' ? (x) => x.gelu() : (x) => x.relu();
}

/** A causal mask for sequence length `sz`: 0 on and below the diagonal, -inf above (float32 [sz, sz]). */
export function generateSquareSubsequentMask(sz: number): Tensor {
  checkSize('generateSquareSubsequentMask', 'sz', sz);
  // A dispatched expand of a 0-d constant, not full([sz, sz]): a trace then records ops whose
  // shape follows a dynamic sequence length instead of a constant baked at the example's size.
  return triu(expand(full([], -Infinity), [sz, sz]), 1);
}

export interface EncoderForwardOptions {
  /** [S, S] or [N·nhead, S, S]: bool (true = blocked) or additive float. */
  srcMask?: Tensor | null;
  /** [N, S]: true marks padding. */
  srcKeyPaddingMask?: Tensor | null;
  /** Apply a causal mask (position i attends to positions <= i); replaces srcMask. */
  isCausal?: boolean;
}

/** The sequence length of an input in the layer's layout. */
function seqLen(x: Tensor, batchFirst: boolean): number { return x.ndim === 2 ? x.shape[0] : x.shape[batchFirst ? 1 : 0]; }

/**
 * One encoder block: self-attention and a feedforward network, each with a residual add and
 * LayerNorm (after the add by default; before with normFirst).
 * @example const layer = new nn.TransformerEncoderLayer(32, 4, { dimFeedforward: 64, batchFirst: true, normFirst: true });
 */
export class TransformerEncoderLayer extends Module {
  readonly dModel: number;
  readonly nhead: number;
  readonly options: Required<Omit<TransformerLayerOptions, 'activation'>> & { activation: TransformerActivation };
  self_attn: MultiheadAttention;
  linear1: Linear;
  dropout: Dropout;
  linear2: Linear;
  norm1: LayerNorm;
  norm2: LayerNorm;
  dropout1: Dropout;
  dropout2: Dropout;
  constructor(...args: LayerArgs) {
    super();
    const a = bindLayer(ENC_SIG, args);
    this.dModel = checkSize('TransformerEncoderLayer', 'dModel', a.dModel, 1);
    this.nhead = checkSize('TransformerEncoderLayer', 'nhead', a.nhead, 1);
    const o = this.options = {
      dimFeedforward: a.dimFeedforward ?? 2048, dropout: a.dropout ?? 0.1, activation: a.activation ?? 'relu',
      layerNormEps: a.layerNormEps ?? 1e-5, batchFirst: a.batchFirst ?? false, normFirst: a.normFirst ?? false,
    };
    this.self_attn = new MultiheadAttention(this.dModel, this.nhead, { dropout: o.dropout, batchFirst: o.batchFirst });
    this.linear1 = new Linear(this.dModel, o.dimFeedforward);
    this.dropout = new Dropout(o.dropout);
    this.linear2 = new Linear(o.dimFeedforward, this.dModel);
    this.norm1 = new LayerNorm(this.dModel, { eps: o.layerNormEps });
    this.norm2 = new LayerNorm(this.dModel, { eps: o.layerNormEps });
    this.dropout1 = new Dropout(o.dropout);
    this.dropout2 = new Dropout(o.dropout);
  }
  get batchFirst(): boolean { return this.options.batchFirst; }
  get normFirst(): boolean { return this.options.normFirst; }
  /** A new layer with the same configuration and a copy of this one's weights. */
  clone(): TransformerEncoderLayer {
    const c = new TransformerEncoderLayer(this.dModel, this.nhead, { ...this.options });
    c.loadStateDict(this.stateDict());
    c.train(this.training);
    return c;
  }
  forward(src: Tensor, opts: EncoderForwardOptions = {}): Tensor {
    if (src.ndim !== 2 && src.ndim !== 3) throw new Error(`TransformerEncoderLayer: expected src [S, N, E] (or [N, S, E] with batchFirst, or unbatched [S, E]), got shape ${fmtShape(src.shape)}`);
    const mask = opts.isCausal ? generateSquareSubsequentMask(seqLen(src, this.batchFirst)) : opts.srcMask ?? null;
    const sa = (x: Tensor) => this.dropout1.forward(this.self_attn.forward(x, x, x, { attnMask: mask, keyPaddingMask: opts.srcKeyPaddingMask ?? null, needWeights: false })[0]);
    const act = activationFn(this.options.activation);
    const ff = (x: Tensor) => this.dropout2.forward(this.linear2.forward(this.dropout.forward(act(this.linear1.forward(x)))));
    let x = src;
    if (this.normFirst) {
      x = x.add(sa(this.norm1.forward(x)));
      x = x.add(ff(this.norm2.forward(x)));
    } else {
      x = this.norm1.forward(x.add(sa(x)));
      x = this.norm2.forward(x.add(ff(x)));
    }
    return x;
  }
}

export interface DecoderForwardOptions {
  tgtMask?: Tensor | null;
  memoryMask?: Tensor | null;
  tgtKeyPaddingMask?: Tensor | null;
  memoryKeyPaddingMask?: Tensor | null;
  /** Apply a causal mask to the target self-attention; replaces tgtMask. */
  tgtIsCausal?: boolean;
}

/**
 * One decoder block: masked self-attention, attention over the encoder's memory, and a
 * feedforward network, each with a residual add and LayerNorm.
 * @example new nn.TransformerDecoderLayer(32, 4, { dimFeedforward: 64 })
 */
export class TransformerDecoderLayer extends Module {
  readonly dModel: number;
  readonly nhead: number;
  readonly options: Required<Omit<TransformerLayerOptions, 'activation'>> & { activation: TransformerActivation };
  self_attn: MultiheadAttention;
  multihead_attn: MultiheadAttention;
  linear1: Linear;
  dropout: Dropout;
  linear2: Linear;
  norm1: LayerNorm;
  norm2: LayerNorm;
  norm3: LayerNorm;
  dropout1: Dropout;
  dropout2: Dropout;
  dropout3: Dropout;
  constructor(...args: LayerArgs) {
    super();
    const a = bindLayer(DEC_SIG, args);
    this.dModel = checkSize('TransformerDecoderLayer', 'dModel', a.dModel, 1);
    this.nhead = checkSize('TransformerDecoderLayer', 'nhead', a.nhead, 1);
    const o = this.options = {
      dimFeedforward: a.dimFeedforward ?? 2048, dropout: a.dropout ?? 0.1, activation: a.activation ?? 'relu',
      layerNormEps: a.layerNormEps ?? 1e-5, batchFirst: a.batchFirst ?? false, normFirst: a.normFirst ?? false,
    };
    this.self_attn = new MultiheadAttention(this.dModel, this.nhead, { dropout: o.dropout, batchFirst: o.batchFirst });
    this.multihead_attn = new MultiheadAttention(this.dModel, this.nhead, { dropout: o.dropout, batchFirst: o.batchFirst });
    this.linear1 = new Linear(this.dModel, o.dimFeedforward);
    this.dropout = new Dropout(o.dropout);
    this.linear2 = new Linear(o.dimFeedforward, this.dModel);
    this.norm1 = new LayerNorm(this.dModel, { eps: o.layerNormEps });
    this.norm2 = new LayerNorm(this.dModel, { eps: o.layerNormEps });
    this.norm3 = new LayerNorm(this.dModel, { eps: o.layerNormEps });
    this.dropout1 = new Dropout(o.dropout);
    this.dropout2 = new Dropout(o.dropout);
    this.dropout3 = new Dropout(o.dropout);
  }
  get batchFirst(): boolean { return this.options.batchFirst; }
  get normFirst(): boolean { return this.options.normFirst; }
  clone(): TransformerDecoderLayer {
    const c = new TransformerDecoderLayer(this.dModel, this.nhead, { ...this.options });
    c.loadStateDict(this.stateDict());
    c.train(this.training);
    return c;
  }
  forward(tgt: Tensor, memory: Tensor, opts: DecoderForwardOptions = {}): Tensor {
    if (tgt.ndim !== 2 && tgt.ndim !== 3) throw new Error(`TransformerDecoderLayer: expected tgt [T, N, E] (or [N, T, E] with batchFirst, or unbatched [T, E]), got shape ${fmtShape(tgt.shape)}`);
    const tgtMask = opts.tgtIsCausal ? generateSquareSubsequentMask(seqLen(tgt, this.batchFirst)) : opts.tgtMask ?? null;
    const sa = (x: Tensor) => this.dropout1.forward(this.self_attn.forward(x, x, x, { attnMask: tgtMask, keyPaddingMask: opts.tgtKeyPaddingMask ?? null, needWeights: false })[0]);
    const mha = (x: Tensor) => this.dropout2.forward(this.multihead_attn.forward(x, memory, memory, { attnMask: opts.memoryMask ?? null, keyPaddingMask: opts.memoryKeyPaddingMask ?? null, needWeights: false })[0]);
    const act = activationFn(this.options.activation);
    const ff = (x: Tensor) => this.dropout3.forward(this.linear2.forward(this.dropout.forward(act(this.linear1.forward(x)))));
    let x = tgt;
    if (this.normFirst) {
      x = x.add(sa(this.norm1.forward(x)));
      x = x.add(mha(this.norm2.forward(x)));
      x = x.add(ff(this.norm3.forward(x)));
    } else {
      x = this.norm1.forward(x.add(sa(x)));
      x = this.norm2.forward(x.add(mha(x)));
      x = this.norm3.forward(x.add(ff(x)));
    }
    return x;
  }
}

/**
 * `numLayers` encoder layers applied in turn (copies of `encoderLayer`), then `norm` if given.
 * @example const enc = new nn.TransformerEncoder(new nn.TransformerEncoderLayer(32, 4), 2);
 */
export class TransformerEncoder extends Module {
  readonly numLayers: number;
  /** PyTorch's sparsity fast path (eval, no grad, batchFirst post-norm layers, a left-aligned
   * srcKeyPaddingMask and no mask): padded positions come out as zeros and the output is cut
   * to the longest sequence, as PyTorch 1.13's nested-tensor output. Default true, as PyTorch. */
  readonly enableNestedTensor: boolean;
  layers: ModuleList;
  norm: LayerNorm | null;
  constructor(encoderLayer: TransformerEncoderLayer, numLayers: number, norm: LayerNorm | null = null, opts: { enableNestedTensor?: boolean } = {}) {
    super();
    if (!(encoderLayer instanceof TransformerEncoderLayer)) throw new Error('TransformerEncoder: encoderLayer must be an nn.TransformerEncoderLayer');
    this.numLayers = checkSize('TransformerEncoder', 'numLayers', numLayers);
    this.enableNestedTensor = opts.enableNestedTensor ?? true;
    this.layers = new ModuleList(Array.from({ length: numLayers }, () => encoderLayer.clone()));
    this.norm = norm;
  }
  forward(src: Tensor, opts: EncoderForwardOptions & { mask?: Tensor | null } = {}): Tensor {
    const { mask, ...rest } = opts;
    const layerOpts: EncoderForwardOptions = { ...rest, srcMask: mask ?? rest.srcMask ?? null };
    let x = src;
    for (const layer of this.layers) x = (layer as TransformerEncoderLayer).forward(x, layerOpts);
    const valid = this.#nestedLengths(src, layerOpts);
    if (valid) {
      // What PyTorch's nested-tensor path returns: each sequence's own positions, zeros after
      // them, cut to the longest sequence.
      const kpm = layerOpts.srcKeyPaddingMask as Tensor;
      x = x.maskedFill(kpm.unsqueeze(-1), 0).slice(1, 0, Math.max(...valid));
    }
    return this.norm ? this.norm.forward(x) : x;
  }
  /** The valid lengths when PyTorch 1.13 would take its nested-tensor fast path, else null. */
  #nestedLengths(src: Tensor, o: EncoderForwardOptions): number[] | null {
    const first = this.layers.get(0) as TransformerEncoderLayer | undefined;
    const kpm = o.srcKeyPaddingMask;
    if (!first || !this.enableNestedTensor || !kpm || kpm.dtype !== 'bool' || o.srcMask || o.isCausal) return null;
    if (first.training || first.normFirst || !first.batchFirst || typeof first.options.activation === 'function') return null;
    if (src.ndim !== 3 || first.nhead % 2 === 1 || first.norm1.eps !== first.norm2.eps) return null;
    if (isGradEnabled() && first.parameters().some((p) => p.requiresGrad)) return null;
    // Left-aligned: each row is valid positions then padding.
    const [N, S] = kpm.shape;
    const m = kpm.toArray() as ArrayLike<number | boolean>;
    const lengths: number[] = [];
    for (let n = 0; n < N; n++) {
      let len = 0;
      while (len < S && !m[n * S + len]) len++;
      for (let k = len; k < S; k++) if (!m[n * S + k]) return null;
      lengths.push(len);
    }
    return lengths;
  }
}

/** `numLayers` decoder layers applied in turn (copies of `decoderLayer`), then `norm` if given. */
export class TransformerDecoder extends Module {
  readonly numLayers: number;
  layers: ModuleList;
  norm: LayerNorm | null;
  constructor(decoderLayer: TransformerDecoderLayer, numLayers: number, norm: LayerNorm | null = null) {
    super();
    if (!(decoderLayer instanceof TransformerDecoderLayer)) throw new Error('TransformerDecoder: decoderLayer must be an nn.TransformerDecoderLayer');
    this.numLayers = checkSize('TransformerDecoder', 'numLayers', numLayers);
    this.layers = new ModuleList(Array.from({ length: numLayers }, () => decoderLayer.clone()));
    this.norm = norm;
  }
  forward(tgt: Tensor, memory: Tensor, opts: DecoderForwardOptions = {}): Tensor {
    let x = tgt;
    for (const layer of this.layers) x = (layer as TransformerDecoderLayer).forward(x, memory, opts);
    return this.norm ? this.norm.forward(x) : x;
  }
}

export interface TransformerOptions extends TransformerLayerOptions {
  dModel?: number;
  nhead?: number;
  numEncoderLayers?: number;
  numDecoderLayers?: number;
}

const TRANSFORMER_SIG: LayerSignature = {
  layer: 'Transformer',
  positional: [{ name: 'dModel', kind: 'int' }, { name: 'nhead', kind: 'int' }, { name: 'numEncoderLayers', kind: 'int' }, { name: 'numDecoderLayers', kind: 'int' }, ...LAYER_ARGS],
};

export interface TransformerForwardOptions {
  srcMask?: Tensor | null;
  tgtMask?: Tensor | null;
  memoryMask?: Tensor | null;
  srcKeyPaddingMask?: Tensor | null;
  tgtKeyPaddingMask?: Tensor | null;
  memoryKeyPaddingMask?: Tensor | null;
}

/**
 * The encoder–decoder transformer (Vaswani et al.): encoder and decoder stacks, each ending in
 * a LayerNorm; every parameter with more than one dim is Xavier-uniform initialised, as PyTorch.
 * @example const t = new nn.Transformer({ dModel: 32, nhead: 4, numEncoderLayers: 2, numDecoderLayers: 2, dimFeedforward: 64 });
 */
export class Transformer extends Module {
  readonly dModel: number;
  readonly nhead: number;
  readonly batchFirst: boolean;
  encoder: TransformerEncoder;
  decoder: TransformerDecoder;
  constructor(...args: [opts?: TransformerOptions] | [dModel: number, nhead: number, opts?: TransformerOptions]
    | [dModel: number, nhead: number, numEncoderLayers: number, numDecoderLayers?: number, opts?: TransformerLayerOptions]) {
    super();
    const a = bindLayer(TRANSFORMER_SIG, args) as TransformerOptions & { dModel?: number; nhead?: number };
    this.dModel = a.dModel ?? 512;
    this.nhead = a.nhead ?? 8;
    this.batchFirst = a.batchFirst ?? false;
    const layerOpts: TransformerLayerOptions = {
      dimFeedforward: a.dimFeedforward, dropout: a.dropout, activation: a.activation, layerNormEps: a.layerNormEps, batchFirst: a.batchFirst, normFirst: a.normFirst,
    };
    for (const k of Object.keys(layerOpts) as (keyof TransformerLayerOptions)[]) if (layerOpts[k] === undefined) delete layerOpts[k];
    const eps = a.layerNormEps ?? 1e-5;
    this.encoder = new TransformerEncoder(new TransformerEncoderLayer(this.dModel, this.nhead, layerOpts), a.numEncoderLayers ?? 6, new LayerNorm(this.dModel, { eps }));
    this.decoder = new TransformerDecoder(new TransformerDecoderLayer(this.dModel, this.nhead, layerOpts), a.numDecoderLayers ?? 6, new LayerNorm(this.dModel, { eps }));
    for (const p of this.parameters()) if (p.ndim > 1) xavierUniform_(p);
  }
  forward(src: Tensor, tgt: Tensor, opts: TransformerForwardOptions = {}): Tensor {
    const batchDim = this.batchFirst ? 0 : 1;
    if (src.ndim === 3 && tgt.ndim === 3 && src.shape[batchDim] !== tgt.shape[batchDim]) {
      throw new Error(`Transformer: the batch size of src ${fmtShape(src.shape)} and tgt ${fmtShape(tgt.shape)} must be equal`);
    }
    if (src.shape[src.ndim - 1] !== this.dModel || tgt.shape[tgt.ndim - 1] !== this.dModel) {
      throw new Error(`Transformer: the feature size of src ${fmtShape(src.shape)} and tgt ${fmtShape(tgt.shape)} must be dModel=${this.dModel}`);
    }
    const memory = this.encoder.forward(src, { srcMask: opts.srcMask, srcKeyPaddingMask: opts.srcKeyPaddingMask });
    return this.decoder.forward(tgt, memory, {
      tgtMask: opts.tgtMask, memoryMask: opts.memoryMask, tgtKeyPaddingMask: opts.tgtKeyPaddingMask, memoryKeyPaddingMask: opts.memoryKeyPaddingMask,
    });
  }
  /** A causal mask: 0 on and below the diagonal, -inf above (PyTorch's static method). */
  static generateSquareSubsequentMask(sz: number): Tensor { return generateSquareSubsequentMask(sz); }
}
