// Pooling layers: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d over the F.* pooling functions.
// Invariant: constructor arguments and reprs are PyTorch's (stride defaults to kernelSize).

import type { Tensor } from '../tensor.js';
import * as F from '../functional/index.js';
import { Module, pyBool, pyVal } from './module.js';
import type { SizeArg } from './conv.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

const MAX_POOL: LayerSignature = {
  layer: 'MaxPool2d', required: 1,
  positional: [{ name: 'kernelSize', kind: 'size' }, { name: 'stride', kind: 'size', nullable: true }, { name: 'padding', kind: 'size' },
    { name: 'dilation', kind: 'size' }, { name: 'returnIndices', kind: 'bool' }, { name: 'ceilMode', kind: 'bool' }],
};
const AVG_POOL: LayerSignature = {
  layer: 'AvgPool2d', required: 1,
  positional: [{ name: 'kernelSize', kind: 'size' }, { name: 'stride', kind: 'size', nullable: true }, { name: 'padding', kind: 'size' },
    { name: 'ceilMode', kind: 'bool' }, { name: 'countIncludePad', kind: 'bool' }, { name: 'divisorOverride', kind: 'int', nullable: true }],
};
const ADAPTIVE_AVG_POOL: LayerSignature = { layer: 'AdaptiveAvgPool2d', required: 1, positional: [{ name: 'outputSize', kind: 'sizeOrNone' }] };

export interface MaxPool2dOptions {
  /** Default: kernelSize. */
  stride?: SizeArg | null;
  padding?: SizeArg;
  dilation?: SizeArg;
  /** Round the output size up instead of down. */
  ceilMode?: boolean;
}

/** What MaxPool2d.forward returns: the values, or [values, indices] with returnIndices. */
export type MaxPoolOutput<R extends boolean> = R extends true ? [Tensor, Tensor] : Tensor;

/**
 * Max over kernelSize windows of [N, C, H, W] (or [C, H, W]) inputs. With `returnIndices: true`
 * forward returns `[values, indices]` (and is typed so).
 * @example new nn.MaxPool2d(2); new nn.MaxPool2d(3, { stride: 2, padding: 1 })
 */
export class MaxPool2d<R extends boolean = false> extends Module {
  readonly kernelSize: SizeArg;
  readonly stride: SizeArg;
  readonly padding: SizeArg;
  readonly dilation: SizeArg;
  readonly returnIndices: R;
  readonly ceilMode: boolean;
  constructor(...args: [kernelSize: SizeArg, opts?: MaxPool2dOptions & { returnIndices?: R }]
    | [opts: MaxPool2dOptions & { kernelSize: SizeArg; returnIndices?: R }]
    | [kernelSize: SizeArg, stride: SizeArg | null, padding?: SizeArg, dilation?: SizeArg, returnIndices?: R, ceilMode?: boolean]) {
    super();
    const opts = bindLayerArgs<MaxPool2dOptions & { kernelSize: SizeArg; returnIndices?: R }>(MAX_POOL, args);
    const kernelSize = opts.kernelSize;
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.dilation = opts.dilation ?? 1;
    // R is `false` unless the caller passed returnIndices (the default type argument).
    this.returnIndices = (opts.returnIndices ?? false) as R;
    this.ceilMode = opts.ceilMode ?? false;
  }
  forward(x: Tensor): MaxPoolOutput<R> {
    const opts = { stride: this.stride, padding: this.padding, dilation: this.dilation, ceilMode: this.ceilMode };
    // The runtime flag and the type parameter agree by construction (see the constructor).
    if (this.returnIndices) return F.maxPool2d(x, this.kernelSize, { ...opts, returnIndices: true }) as MaxPoolOutput<R>;
    return F.maxPool2d(x, this.kernelSize, opts) as MaxPoolOutput<R>;
  }
  override extraRepr(): string {
    return `kernel_size=${pyVal(this.kernelSize)}, stride=${pyVal(this.stride)}, padding=${pyVal(this.padding)}, dilation=${pyVal(this.dilation)}, ceil_mode=${pyBool(this.ceilMode)}`;
  }
}

export interface AvgPool2dOptions {
  stride?: SizeArg | null;
  padding?: SizeArg;
  ceilMode?: boolean;
  /** Count the zero padding in the divisor (default true). */
  countIncludePad?: boolean;
  /** Divide by this instead of the window size. */
  divisorOverride?: number | null;
}

/**
 * Mean over kernelSize windows of [N, C, H, W] (or [C, H, W]) inputs.
 * @example new nn.AvgPool2d(2)
 */
export class AvgPool2d extends Module {
  readonly kernelSize: SizeArg;
  readonly stride: SizeArg;
  readonly padding: SizeArg;
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;
  readonly divisorOverride: number | null;
  constructor(...args: [kernelSize: SizeArg, opts?: AvgPool2dOptions] | [opts: AvgPool2dOptions & { kernelSize: SizeArg }]
    | [kernelSize: SizeArg, stride: SizeArg | null, padding?: SizeArg, ceilMode?: boolean, countIncludePad?: boolean, divisorOverride?: number | null]) {
    super();
    const opts = bindLayerArgs<AvgPool2dOptions & { kernelSize: SizeArg }>(AVG_POOL, args);
    const kernelSize = opts.kernelSize;
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.ceilMode = opts.ceilMode ?? false;
    this.countIncludePad = opts.countIncludePad ?? true;
    this.divisorOverride = opts.divisorOverride ?? null;
  }
  forward(x: Tensor): Tensor {
    return F.avgPool2d(x, this.kernelSize, {
      stride: this.stride, padding: this.padding, ceilMode: this.ceilMode,
      countIncludePad: this.countIncludePad, divisorOverride: this.divisorOverride,
    });
  }
  override extraRepr(): string {
    return `kernel_size=${pyVal(this.kernelSize)}, stride=${pyVal(this.stride)}, padding=${pyVal(this.padding)}`;
  }
}

/**
 * Average pooling to a fixed output size (H, W); null keeps that input dim.
 * @example new nn.AdaptiveAvgPool2d(1); new nn.AdaptiveAvgPool2d([7, 7])
 */
export class AdaptiveAvgPool2d extends Module {
  readonly outputSize: number | readonly (number | null)[];
  constructor(...args: [outputSize: number | readonly (number | null)[]] | [opts: { outputSize: number | readonly (number | null)[] }]) {
    super();
    this.outputSize = bindLayerArgs<{ outputSize: number | readonly (number | null)[] }>(ADAPTIVE_AVG_POOL, args).outputSize;
  }
  forward(x: Tensor): Tensor { return F.adaptiveAvgPool2d(x, this.outputSize); }
  override extraRepr(): string {
    const o = this.outputSize;
    return `output_size=${typeof o === 'number' ? o : `(${o.map((d) => (d === null ? 'None' : String(d))).join(', ')})`}`;
  }
}
