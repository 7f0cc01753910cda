// More activation layers: PReLU, ELU, Softplus, Hardswish, Mish, and Dropout2d (whole-channel
// dropout). Invariant: each forward is the functional form (F.*) or a composite of existing
// tensor ops, parameters carry PyTorch's names (PReLU's `weight`), constructors bind arguments
// as PyTorch's do (layer-args.ts).

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { full, rand } from '../creation.js';
import * as F from '../functional/index.js';
import { Module, Parameter, pyBool, pyFloat } from './module.js';
import { checkSize } from './linear.js';
import { bindLayerArgs, type ArgSpec, type LayerSignature } from './layer-args.js';

const INPLACE: ArgSpec = { name: 'inplace', kind: 'bool' };
const PRELU: LayerSignature = { layer: 'PReLU', positional: [{ name: 'numParameters', kind: 'int' }, { name: 'init', kind: 'number' }] };
const ELU_SIG: LayerSignature = { layer: 'ELU', positional: [{ name: 'alpha', kind: 'number' }, INPLACE] };
const SOFTPLUS: LayerSignature = { layer: 'Softplus', positional: [{ name: 'beta', kind: 'number' }, { name: 'threshold', kind: 'number' }] };
const HARDSWISH: LayerSignature = { layer: 'Hardswish', positional: [INPLACE] };
const MISH: LayerSignature = { layer: 'Mish', positional: [INPLACE] };
const DROPOUT2D: LayerSignature = { layer: 'Dropout2d', positional: [{ name: 'p', kind: 'number' }, INPLACE] };

type InplaceArgs = [inplace?: boolean] | [opts: { inplace?: boolean }];

/**
 * max(0, x) + a·min(0, x) with a learnable slope `weight` (one, or one per channel of dim 1).
 * @example new nn.PReLU(); new nn.PReLU(64, 0.1); new nn.PReLU({ numParameters: 64 })
 */
export class PReLU extends Module {
  readonly numParameters: number;
  weight: Tensor;
  constructor(...args: [numParameters?: number, init?: number] | [numParameters: number, opts: { init?: number }] | [opts: { numParameters?: number; init?: number }]) {
    super();
    const a = bindLayerArgs<{ numParameters?: number; init?: number }>(PRELU, args);
    this.numParameters = checkSize('PReLU', 'numParameters', a.numParameters ?? 1, 1);
    this.weight = new Parameter(full([this.numParameters], a.init ?? 0.25));
  }
  forward(x: Tensor): Tensor { return F.prelu(x, this.weight); }
  override extraRepr(): string { return `num_parameters=${this.numParameters}`; }
}

/** x for x > 0, alpha·(eˣ − 1) otherwise. */
export class ELU extends Module {
  readonly alpha: number;
  readonly inplace: boolean;
  constructor(...args: [alpha?: number, inplace?: boolean] | [alpha: number, opts: { inplace?: boolean }] | [opts: { alpha?: number; inplace?: boolean }]) {
    super();
    const a = bindLayerArgs<{ alpha?: number; inplace?: boolean }>(ELU_SIG, args);
    this.alpha = a.alpha ?? 1;
    this.inplace = a.inplace ?? false;
  }
  forward(x: Tensor): Tensor {
    const y = F.elu(x, this.alpha);
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return `alpha=${pyFloat(this.alpha)}${this.inplace ? ', inplace=True' : ''}`; }
}

/** log(1 + e^(βx)) / β, and x itself where βx > threshold. */
export class Softplus extends Module {
  readonly beta: number;
  readonly threshold: number;
  constructor(...args: [beta?: number, threshold?: number] | [beta: number, opts: { threshold?: number }] | [opts: { beta?: number; threshold?: number }]) {
    super();
    const a = bindLayerArgs<{ beta?: number; threshold?: number }>(SOFTPLUS, args);
    this.beta = a.beta ?? 1;
    this.threshold = a.threshold ?? 20;
  }
  forward(x: Tensor): Tensor { return F.softplus(x, { beta: this.beta, threshold: this.threshold }); }
  override extraRepr(): string { return `beta=${pyFloat(this.beta)}, threshold=${pyFloat(this.threshold)}`; }
}

/** x · relu6(x + 3) / 6. */
export class Hardswish extends Module {
  readonly inplace: boolean;
  constructor(...args: InplaceArgs) { super(); this.inplace = bindLayerArgs<{ inplace?: boolean }>(HARDSWISH, args).inplace ?? false; }
  forward(x: Tensor): Tensor {
    const y = F.hardswish(x);
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return this.inplace ? 'inplace=True' : ''; }
}

/** x · tanh(softplus(x)). */
export class Mish extends Module {
  readonly inplace: boolean;
  constructor(...args: InplaceArgs) { super(); this.inplace = bindLayerArgs<{ inplace?: boolean }>(MISH, args).inplace ?? false; }
  forward(x: Tensor): Tensor {
    const y = F.mish(x);
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return this.inplace ? 'inplace=True' : ''; }
}

/**
 * Zeroes whole channels: in training mode each (sample, channel) plane of an [N, C, H, W]
 * input is dropped with probability p and the kept ones are scaled by 1/(1-p); the identity in
 * eval mode. A 3-D input is taken as [N, C, L] (channel-wise 1-D dropout), as PyTorch 1.13 does.
 */
export class Dropout2d extends Module {
  readonly p: number;
  readonly inplace: boolean;
  constructor(...args: [p?: number, inplace?: boolean] | [p: number, opts: { inplace?: boolean }] | [opts: { p?: number; inplace?: boolean }]) {
    super();
    const a = bindLayerArgs<{ p?: number; inplace?: boolean }>(DROPOUT2D, args);
    const p = a.p ?? 0.5;
    if (!(p >= 0 && p <= 1)) throw new Error(`Dropout2d: probability has to be between 0 and 1, but got ${p}`);
    this.p = p;
    this.inplace = a.inplace ?? false;
  }
  forward(x: Tensor): Tensor {
    if (x.ndim !== 3 && x.ndim !== 4) throw new Error(`Dropout2d: expected a 4-D [N, C, H, W] (or 3-D [N, C, L]) input, got shape ${fmtShape(x.shape)}`);
    if (!this.training || this.p === 0) return x;
    // One uniform draw per (sample, channel), broadcast over the spatial dims.
    const maskShape = [x.shape[0], x.shape[1], ...x.shape.slice(2).map(() => 1)];
    const y = this.p === 1
      ? x.mul(0)
      : x.mul(rand(maskShape).ge(this.p).float().mul(1 / (1 - this.p)));
    return this.inplace ? x.copy_(y) : y;
  }
  override extraRepr(): string { return `p=${pyFloat(this.p)}, inplace=${pyBool(this.inplace)}`; }
}
