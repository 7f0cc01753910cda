// Parameter-free layers wrapping elementwise functions: ReLU, LeakyReLU, GELU, SiLU, Sigmoid,
// Tanh, Softmax, LogSoftmax, and Dropout. Invariant: each forward is one call of the functional
// form (or Tensor method), so traced graphs show the primitive ops, and `inplace` options use
// the Tensor's in-place methods (version-checked by autograd).

import type { Tensor } from '../tensor.js';
import * as F from '../functional/index.js';
import { Module, pyBool, pyFloat } from './module.js';

const inplaceRepr = (inplace: boolean): string => (inplace ? 'inplace=True' : '');

/** max(0, x). */
export class ReLU extends Module {
  readonly inplace: boolean;
  constructor(opts: { inplace?: boolean } = {}) { super(); this.inplace = opts.inplace ?? false; }
  forward(x: Tensor): Tensor { return this.inplace ? x.relu_() : x.relu(); }
  override extraRepr(): string { return inplaceRepr(this.inplace); }
}

/** x for x > 0, negativeSlope·x otherwise. */
export class LeakyReLU extends Module {
  readonly inplace: boolean;
  constructor(readonly negativeSlope = 0.01, opts: { inplace?: boolean } = {}) { super(); this.inplace = opts.inplace ?? false; }
  forward(x: Tensor): Tensor {
    const y = F.leakyRelu(x, this.negativeSlope);
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return `negative_slope=${pyFloat(this.negativeSlope)}${this.inplace ? ', inplace=True' : ''}`; }
}

/** Gaussian error linear unit: exact (erf, default) or the tanh approximation. */
export class GELU extends Module {
  readonly approximate: 'none' | 'tanh';
  constructor(opts: { approximate?: 'none' | 'tanh' } = {}) {
    super();
    const a = opts.approximate ?? 'none';
    if (a !== 'none' && a !== 'tanh') throw new Error(`GELU: approximate must be 'none' or 'tanh', got '${String(a)}'`);
    this.approximate = a;
  }
  forward(x: Tensor): Tensor { return x.gelu({ approximate: this.approximate }); }
  override extraRepr(): string { return `approximate='${this.approximate}'`; }
}

/** x·σ(x). */
export class SiLU extends Module {
  readonly inplace: boolean;
  constructor(opts: { inplace?: boolean } = {}) { super(); this.inplace = opts.inplace ?? false; }
  forward(x: Tensor): Tensor {
    const y = F.silu(x);
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return inplaceRepr(this.inplace); }
}

/** 1 / (1 + e^-x). */
export class Sigmoid extends Module {
  forward(x: Tensor): Tensor { return x.sigmoid(); }
}

/** Hyperbolic tangent. */
export class Tanh extends Module {
  forward(x: Tensor): Tensor { return x.tanh(); }
}

/** PyTorch's legacy dim choice when none is given (it warns; so should callers pass one). */
function implicitDim(ndim: number): number { return ndim === 0 || ndim === 1 || ndim === 3 ? 0 : 1; }

/** Softmax along `dim` (entries in [0, 1] summing to 1). */
export class Softmax extends Module {
  constructor(readonly dim: number | null = null) { super(); }
  forward(x: Tensor): Tensor { return x.softmax(this.dim ?? implicitDim(x.ndim)); }
  override extraRepr(): string { return `dim=${this.dim ?? 'None'}`; }
}

/** log(softmax(x)) along `dim`, computed stably. */
export class LogSoftmax extends Module {
  constructor(readonly dim: number | null = null) { super(); }
  forward(x: Tensor): Tensor { return x.logSoftmax(this.dim ?? implicitDim(x.ndim)); }
  override extraRepr(): string { return `dim=${this.dim ?? 'None'}`; }
}

/**
 * Zeroes each element with probability p and scales the rest by 1/(1-p) in training mode; the
 * identity in eval mode.
 * @example new nn.Dropout(0.5)
 */
export class Dropout extends Module {
  readonly inplace: boolean;
  constructor(readonly p = 0.5, opts: { inplace?: boolean } = {}) {
    super();
    if (!(p >= 0 && p <= 1)) throw new Error(`Dropout: probability has to be between 0 and 1, but got ${p}`);
    this.inplace = opts.inplace ?? false;
  }
  forward(x: Tensor): Tensor {
    const y = F.dropout(x, { p: this.p, training: this.training });
    return this.inplace && this.training ? x.copy_(y) : y;
  }
  override extraRepr(): string { return `p=${pyFloat(this.p)}, inplace=${pyBool(this.inplace)}`; }
}
