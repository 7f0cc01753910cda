// Parameter-free layers wrapping elementwise functions: ReLU, LeakyReLU, GELU, SiLU, Sigmoid,
// Tanh, Softmax, LogSoftmax, and Dropout. Invariant: each forward is one call of the functional
// form (or Tensor method), so traced graphs show the primitive ops, and `inplace` options use
// the Tensor's in-place methods (version-checked by autograd). Constructors bind their arguments
// as PyTorch's do (positional or by name in a trailing options object; see layer-args.ts):
// `new nn.ReLU(true)`, `new nn.Dropout({ p: 0.2 })`.

import type { Tensor } from '../tensor.js';
import * as F from '../functional/index.js';
import { Module, pyBool, pyFloat } from './module.js';
import { bindLayerArgs, type ArgSpec, type LayerSignature } from './layer-args.js';

const INPLACE: ArgSpec = { name: 'inplace', kind: 'bool' };
const sig = (layer: string, ...positional: ArgSpec[]): LayerSignature => ({ layer, positional });
const RELU = sig('ReLU', INPLACE);
const LEAKY_RELU = sig('LeakyReLU', { name: 'negativeSlope', kind: 'number' }, INPLACE);
const GELU_SIG = sig('GELU', { name: 'approximate', kind: { oneOf: ['none', 'tanh'] } });
const SILU = sig('SiLU', INPLACE);
const SIGMOID = sig('Sigmoid');
const TANH = sig('Tanh');
const SOFTMAX = sig('Softmax', { name: 'dim', kind: 'int', nullable: true });
const LOG_SOFTMAX = sig('LogSoftmax', { name: 'dim', kind: 'int', nullable: true });
const DROPOUT = sig('Dropout', { name: 'p', kind: 'number' }, INPLACE);

type InplaceArgs = [inplace?: boolean] | [opts: { inplace?: boolean }];

const inplaceRepr = (inplace: boolean): string => (inplace ? 'inplace=True' : '');

/** max(0, x). */
export class ReLU extends Module {
  readonly inplace: boolean;
  /** @example new nn.ReLU(); new nn.ReLU(true); new nn.ReLU({ inplace: true }) */
  constructor(...args: InplaceArgs) { super(); this.inplace = bindLayerArgs<{ inplace?: boolean }>(RELU, args).inplace ?? false; }
  forward(x: Tensor): Tensor { return this.inplace ? x.relu_() : x.relu(); }
  override extraRepr(): string { return inplaceRepr(this.inplace); }
}

/** x for x > 0, negativeSlope·x otherwise. */
export class LeakyReLU extends Module {
  readonly negativeSlope: number;
  readonly inplace: boolean;
  /** @example new nn.LeakyReLU(0.2); new nn.LeakyReLU(0.2, true); new nn.LeakyReLU({ negativeSlope: 0.2, inplace: true }) */
  constructor(...args: [negativeSlope?: number, inplace?: boolean] | [negativeSlope: number, opts: { inplace?: boolean }] | [opts: { negativeSlope?: number; inplace?: boolean }]) {
    super();
    const a = bindLayerArgs<{ negativeSlope?: number; inplace?: boolean }>(LEAKY_RELU, args);
    this.negativeSlope = a.negativeSlope ?? 0.01;
    this.inplace = a.inplace ?? false;
  }
  forward(x: Tensor): Tensor {
    const y = F.leakyRelu(x, this.negativeSlope);
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return `negative_slope=${pyFloat(this.negativeSlope)}${this.inplace ? ', inplace=True' : ''}`; }
}

/** Gaussian error linear unit: exact (erf, default) or the tanh approximation. */
export class GELU extends Module {
  readonly approximate: 'none' | 'tanh';
  /** @example new nn.GELU(); new nn.GELU('tanh'); new nn.GELU({ approximate: 'tanh' }) */
  constructor(...args: [approximate?: 'none' | 'tanh'] | [opts: { approximate?: 'none' | 'tanh' }]) {
    super();
    this.approximate = bindLayerArgs<{ approximate?: 'none' | 'tanh' }>(GELU_SIG, args).approximate ?? 'none';
  }
  forward(x: Tensor): Tensor { return x.gelu({ approximate: this.approximate }); }
  override extraRepr(): string { return `approximate='${this.approximate}'`; }
}

/** x·σ(x). */
export class SiLU extends Module {
  readonly inplace: boolean;
  constructor(...args: InplaceArgs) { super(); this.inplace = bindLayerArgs<{ inplace?: boolean }>(SILU, args).inplace ?? false; }
  forward(x: Tensor): Tensor {
    const y = F.silu(x);
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return inplaceRepr(this.inplace); }
}

/** 1 / (1 + e^-x). */
export class Sigmoid extends Module {
  constructor(...args: []) { super(); bindLayerArgs(SIGMOID, args); }
  forward(x: Tensor): Tensor { return x.sigmoid(); }
}

/** Hyperbolic tangent. */
export class Tanh extends Module {
  constructor(...args: []) { super(); bindLayerArgs(TANH, args); }
  forward(x: Tensor): Tensor { return x.tanh(); }
}

/** PyTorch's legacy dim choice when none is given (it warns; so should callers pass one). */
function implicitDim(ndim: number): number { return ndim === 0 || ndim === 1 || ndim === 3 ? 0 : 1; }

/** Softmax along `dim` (entries in [0, 1] summing to 1). */
export class Softmax extends Module {
  readonly dim: number | null;
  constructor(...args: [dim?: number | null] | [opts: { dim?: number | null }]) { super(); this.dim = bindLayerArgs<{ dim?: number | null }>(SOFTMAX, args).dim ?? null; }
  forward(x: Tensor): Tensor { return x.softmax(this.dim ?? implicitDim(x.ndim)); }
  override extraRepr(): string { return `dim=${this.dim ?? 'None'}`; }
}

/** log(softmax(x)) along `dim`, computed stably. */
export class LogSoftmax extends Module {
  readonly dim: number | null;
  constructor(...args: [dim?: number | null] | [opts: { dim?: number | null }]) { super(); this.dim = bindLayerArgs<{ dim?: number | null }>(LOG_SOFTMAX, args).dim ?? null; }
  forward(x: Tensor): Tensor { return x.logSoftmax(this.dim ?? implicitDim(x.ndim)); }
  override extraRepr(): string { return `dim=${this.dim ?? 'None'}`; }
}

/**
 * Zeroes each element with probability p and scales the rest by 1/(1-p) in training mode; the
 * identity in eval mode.
 * @example new nn.Dropout(0.5); new nn.Dropout(0.5, true); new nn.Dropout({ p: 0.5, inplace: true })
 */
export class Dropout extends Module {
  readonly p: number;
  readonly inplace: boolean;
  constructor(...args: [p?: number, inplace?: boolean] | [p: number, opts: { inplace?: boolean }] | [opts: { p?: number; inplace?: boolean }]) {
    super();
    const a = bindLayerArgs<{ p?: number; inplace?: boolean }>(DROPOUT, args);
    const p = a.p ?? 0.5;
    if (!(p >= 0 && p <= 1)) throw new Error(`Dropout: probability has to be between 0 and 1, but got ${p}`);
    this.p = p;
    this.inplace = a.inplace ?? false;
  }
  forward(x: Tensor): Tensor {
    const y = F.dropout(x, { p: this.p, training: this.training });
    return this.inplace && this.training ? x.copy_(y) : y;
  }
  override extraRepr(): string { return `p=${pyFloat(this.p)}, inplace=${pyBool(this.inplace)}`; }
}
