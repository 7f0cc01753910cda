// Normalisation layers: BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm. Invariant: fields are
// declared in PyTorch's registration order with PyTorch's names (weight, bias, running_mean,
// running_var, num_batches_tracked), so state dicts load unchanged; num_batches_tracked is int32.

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { ones, zeros } from '../creation.js';
import { noGrad } from '../autograd/grad-mode.js';
import * as F from '../functional/index.js';
import { Module, Parameter, pyBool, pyFloat, pyVal } from './module.js';
import { ones_, zeros_ } from './init.js';
import { checkSize } from './linear.js';
import * as E from '../ops/elementwise.js';
import { bindLayerArgs, type ArgSpec, type LayerSignature } from './layer-args.js';

const EPS: ArgSpec = { name: 'eps', kind: 'number' };
const bnSig = (layer: string): LayerSignature => ({
  layer, required: 1,
  positional: [{ name: 'numFeatures', kind: 'int' }, EPS, { name: 'momentum', kind: 'number', nullable: true }, { name: 'affine', kind: 'bool' }, { name: 'trackRunningStats', kind: 'bool' }],
});
const BN_SIGS = new Map([['BatchNorm1d', bnSig('BatchNorm1d')], ['BatchNorm2d', bnSig('BatchNorm2d')]]);
const LAYER_NORM: LayerSignature = {
  layer: 'LayerNorm', required: 1,
  positional: [{ name: 'normalizedShape', kind: 'size' }, EPS, { name: 'elementwiseAffine', kind: 'bool' }, { name: 'bias', kind: 'bool' }],
};
const GROUP_NORM: LayerSignature = {
  layer: 'GroupNorm', required: 2,
  positional: [{ name: 'numGroups', kind: 'int' }, { name: 'numChannels', kind: 'int' }, EPS, { name: 'affine', kind: 'bool' }],
};

/** BatchNorm's constructor forms: PyTorch's positional order or names in a trailing options object. */
export type BatchNormArgs =
  | [numFeatures: number, opts?: BatchNormOptions]
  | [opts: BatchNormOptions & { numFeatures: number }]
  | [numFeatures: number, eps: number, momentum?: number | null, affine?: boolean, trackRunningStats?: boolean];

export interface BatchNormOptions {
  eps?: number;
  /** Weight of the new batch statistic in the running average; null = cumulative average. */
  momentum?: number | null;
  /** Learnable per-channel scale and shift (default true). */
  affine?: boolean;
  /** Keep running statistics for eval mode (default true). */
  trackRunningStats?: boolean;
}

export interface LayerNormOptions { eps?: number; elementwiseAffine?: boolean; bias?: boolean }
export interface GroupNormOptions { eps?: number; affine?: boolean }

/** Shared logic of BatchNorm1d/2d (PyTorch's _BatchNorm). */
abstract class BatchNormBase extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: Tensor | null;
  bias: Tensor | null;
  // Buffer names are PyTorch's state dict keys (camelCase aliases below).
  running_mean: Tensor | null;
  running_var: Tensor | null;
  num_batches_tracked: Tensor | null;

  constructor(protected readonly layerName: string, args: readonly unknown[]) {
    super();
    const sig = BN_SIGS.get(layerName);
    if (!sig) throw new Error(`${layerName}: internal error: no constructor signature`);
    const opts = bindLayerArgs<BatchNormOptions & { numFeatures: number }>(sig, args);
    const numFeatures = opts.numFeatures;
    this.numFeatures = checkSize(layerName, 'numFeatures', numFeatures, 1);
    this.eps = opts.eps ?? 1e-5;
    this.momentum = opts.momentum === undefined ? 0.1 : opts.momentum;
    this.affine = opts.affine ?? true;
    this.trackRunningStats = opts.trackRunningStats ?? true;
    this.weight = this.affine ? new Parameter(ones([numFeatures])) : null;
    this.bias = this.affine ? new Parameter(zeros([numFeatures])) : null;
    // Registered as buffers explicitly: they must stay buffers whatever requiresGrad says.
    this.running_mean = null;
    this.running_var = null;
    this.num_batches_tracked = null;
    this.registerBuffer('running_mean', this.trackRunningStats ? zeros([numFeatures]) : null);
    this.registerBuffer('running_var', this.trackRunningStats ? ones([numFeatures]) : null);
    this.registerBuffer('num_batches_tracked', this.trackRunningStats ? zeros([], { dtype: 'int32' }) : null);
  }

  get runningMean(): Tensor | null { return this.running_mean; }
  get runningVar(): Tensor | null { return this.running_var; }
  get numBatchesTracked(): Tensor | null { return this.num_batches_tracked; }

  /** Running mean 0, variance 1, count 0. */
  resetRunningStats(): void {
    if (this.running_mean) zeros_(this.running_mean);
    if (this.running_var) ones_(this.running_var);
    if (this.num_batches_tracked) zeros_(this.num_batches_tracked);
  }
  resetParameters(): void {
    this.resetRunningStats();
    if (this.weight) ones_(this.weight);
    if (this.bias) zeros_(this.bias);
  }

  protected abstract checkInputDim(x: Tensor): void;

  forward(x: Tensor): Tensor {
    this.checkInputDim(x);
    const c = x.shape[1];
    if (c !== this.numFeatures) throw new Error(`${this.layerName}: input of shape ${fmtShape(x.shape)} has ${c} channels (dim 1), expected numFeatures=${this.numFeatures}`);
    let factor: number | Tensor = this.momentum ?? 0;
    const nbt = this.num_batches_tracked;
    if (this.training && this.trackRunningStats && nbt) {
      noGrad(() => nbt.add_(1));
      // Cumulative moving average: 1/num_batches_tracked as an op, never read with .item(), so a
      // compiled train-mode graph computes it from its own (updated) count at run time.
      if (this.momentum === null) factor = noGrad(() => E.div(1, nbt));
    }
    // Batch statistics in training mode, or when there are no running statistics to use.
    const useBatchStats = this.training || (this.running_mean === null && this.running_var === null);
    // Running stats are passed (and updated) only when they are tracked or used for eval.
    const passStats = !this.training || this.trackRunningStats;
    return F.batchNorm(x, passStats ? this.running_mean : null, passStats ? this.running_var : null, {
      weight: this.weight, bias: this.bias, training: useBatchStats, momentum: factor, eps: this.eps,
    });
  }

  override extraRepr(): string {
    return `${this.numFeatures}, eps=${pyFloat(this.eps)}, momentum=${this.momentum === null ? 'None' : pyFloat(this.momentum)}, affine=${pyBool(this.affine)}, track_running_stats=${pyBool(this.trackRunningStats)}`;
  }
}

/**
 * Batch normalisation over [N, C] or [N, C, L] inputs, per channel C.
 * @example new nn.BatchNorm1d(100, { momentum: 0.05 })
 */
export class BatchNorm1d extends BatchNormBase {
  constructor(...args: BatchNormArgs) { super('BatchNorm1d', args); }
  protected checkInputDim(x: Tensor): void {
    if (x.ndim !== 2 && x.ndim !== 3) throw new Error(`BatchNorm1d: expected 2D or 3D input (got ${x.ndim}D input of shape ${fmtShape(x.shape)})`);
  }
}

/**
 * Batch normalisation over [N, C, H, W] inputs, per channel C.
 * @example new nn.BatchNorm2d(64)
 */
export class BatchNorm2d extends BatchNormBase {
  constructor(...args: BatchNormArgs) { super('BatchNorm2d', args); }
  protected checkInputDim(x: Tensor): void {
    if (x.ndim !== 4) throw new Error(`BatchNorm2d: expected 4D input (got ${x.ndim}D input of shape ${fmtShape(x.shape)})`);
  }
}

/**
 * Layer normalisation over the trailing dims `normalizedShape`, with elementwise affine weight
 * and bias of that shape.
 * @example new nn.LayerNorm(512); new nn.LayerNorm([10, 10], { elementwiseAffine: false })
 */
export class LayerNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number;
  readonly elementwiseAffine: boolean;
  weight: Tensor | null;
  bias: Tensor | null;
  constructor(...args: [normalizedShape: number | readonly number[], opts?: LayerNormOptions]
    | [opts: LayerNormOptions & { normalizedShape: number | readonly number[] }]
    | [normalizedShape: number | readonly number[], eps: number, elementwiseAffine?: boolean, bias?: boolean]) {
    super();
    const opts = bindLayerArgs<LayerNormOptions & { normalizedShape: number | readonly number[] }>(LAYER_NORM, args);
    const normalizedShape = opts.normalizedShape;
    const shape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
    if (!shape.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`LayerNorm: normalizedShape must be sizes, got ${JSON.stringify(normalizedShape)}`);
    this.normalizedShape = shape;
    this.eps = opts.eps ?? 1e-5;
    this.elementwiseAffine = opts.elementwiseAffine ?? true;
    this.weight = this.elementwiseAffine ? new Parameter(ones(shape)) : null;
    this.bias = this.elementwiseAffine && (opts.bias ?? true) ? new Parameter(zeros(shape)) : null;
  }
  resetParameters(): void {
    if (this.weight) ones_(this.weight);
    if (this.bias) zeros_(this.bias);
  }
  forward(x: Tensor): Tensor {
    return F.layerNorm(x, this.normalizedShape, { weight: this.weight, bias: this.bias, eps: this.eps });
  }
  override extraRepr(): string {
    return `${pyVal(this.normalizedShape)}, eps=${pyFloat(this.eps)}, elementwise_affine=${pyBool(this.elementwiseAffine)}`;
  }
}

/**
 * Group normalisation: channels (dim 1) split into `numGroups` groups, each normalised over its
 * channels and spatial dims; per-channel affine weight and bias.
 * @example new nn.GroupNorm(8, 64)
 */
export class GroupNorm extends Module {
  readonly numGroups: number;
  readonly numChannels: number;
  readonly eps: number;
  readonly affine: boolean;
  weight: Tensor | null;
  bias: Tensor | null;
  constructor(...args: [numGroups: number, numChannels: number, opts?: GroupNormOptions]
    | [opts: GroupNormOptions & { numGroups: number; numChannels: number }]
    | [numGroups: number, numChannels: number, eps: number, affine?: boolean]) {
    super();
    const opts = bindLayerArgs<GroupNormOptions & { numGroups: number; numChannels: number }>(GROUP_NORM, args);
    const { numGroups, numChannels } = opts;
    this.numGroups = checkSize('GroupNorm', 'numGroups', numGroups, 1);
    this.numChannels = checkSize('GroupNorm', 'numChannels', numChannels);
    if (numChannels % numGroups !== 0) throw new Error(`GroupNorm: numChannels (${numChannels}) must be divisible by numGroups (${numGroups})`);
    this.eps = opts.eps ?? 1e-5;
    this.affine = opts.affine ?? true;
    this.weight = this.affine ? new Parameter(ones([numChannels])) : null;
    this.bias = this.affine ? new Parameter(zeros([numChannels])) : null;
  }
  resetParameters(): void {
    if (this.weight) ones_(this.weight);
    if (this.bias) zeros_(this.bias);
  }
  forward(x: Tensor): Tensor {
    if (x.ndim < 2 || x.shape[1] !== this.numChannels) {
      throw new Error(`GroupNorm: input of shape ${fmtShape(x.shape)} must have numChannels=${this.numChannels} channels in dim 1`);
    }
    return F.groupNorm(x, this.numGroups, { weight: this.weight, bias: this.bias, eps: this.eps });
  }
  override extraRepr(): string {
    return `${this.numGroups}, ${this.numChannels}, eps=${pyFloat(this.eps)}, affine=${pyBool(this.affine)}`;
  }
}
