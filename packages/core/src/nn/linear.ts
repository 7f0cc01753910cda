// Linear-family layers and reshaping layers: Identity, Linear, Flatten, Unflatten. Invariant:
// parameters are declared in PyTorch's registration order (weight, then bias) so state dict keys
// and their order match torch.nn.

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { zeros } from '../creation.js';
import { linear } from '../ops/linalg.js';
import { Module, Parameter, pyBool, pyVal } from './module.js';
import { kaimingUniform_, uniform_, calculateFanInAndFanOut } from './init.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

const LINEAR: LayerSignature = { layer: 'Linear', required: 2, positional: [{ name: 'inFeatures', kind: 'int' }, { name: 'outFeatures', kind: 'int' }, { name: 'bias', kind: 'bool' }] };
const FLATTEN: LayerSignature = { layer: 'Flatten', positional: [{ name: 'startDim', kind: 'int' }, { name: 'endDim', kind: 'int' }] };
const UNFLATTEN: LayerSignature = { layer: 'Unflatten', required: 2, positional: [{ name: 'dim', kind: 'int' }, { name: 'unflattenedSize', kind: 'sizes' }] };

export interface LinearOptions { bias?: boolean }

/** Checks a size argument of a layer constructor. */
export function checkSize(layer: string, what: string, v: number, min = 0): number {
  if (!Number.isInteger(v) || v < min) throw new Error(`${layer}: ${what} must be an integer >= ${min}, got ${v}`);
  return v;
}

/** PyTorch's default init of a weight/bias pair (Linear, Conv): kaiming_uniform(a=√5) for the
 * weight — i.e. U(±1/√fanIn) — and U(±1/√fanIn) for the bias. */
export function resetWeightAndBias(weight: Tensor, bias: Tensor | null): void {
  kaimingUniform_(weight, { a: Math.sqrt(5) });
  if (bias) {
    const [fanIn] = calculateFanInAndFanOut(weight);
    const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
    uniform_(bias, -bound, bound);
  }
}

/** Returns its input (a placeholder layer); constructor arguments are ignored, as in PyTorch. */
export class Identity extends Module {
  constructor(..._args: unknown[]) { super(); }
  forward(x: Tensor): Tensor { return x; }
}

/**
 * y = x Wᵀ + b over the last dim. Weight [outFeatures, inFeatures], bias [outFeatures].
 * @example const fc = new nn.Linear(128, 10); fc.forward(randn([4, 128])).shape // [4, 10]
 */
export class Linear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  weight: Tensor;
  bias: Tensor | null;
  /** Also `new nn.Linear(4, 2, false)` and `new nn.Linear({ inFeatures: 4, outFeatures: 2, bias: false })`. */
  constructor(...args: [inFeatures: number, outFeatures: number, bias?: boolean] | [inFeatures: number, outFeatures: number, opts: LinearOptions]
    | [inFeatures: number, opts: LinearOptions & { outFeatures: number }] | [opts: LinearOptions & { inFeatures: number; outFeatures: number }]) {
    super();
    const a = bindLayerArgs<{ inFeatures: number; outFeatures: number; bias?: boolean }>(LINEAR, args);
    const inFeatures = this.inFeatures = checkSize('Linear', 'inFeatures', a.inFeatures);
    const outFeatures = this.outFeatures = checkSize('Linear', 'outFeatures', a.outFeatures);
    this.weight = new Parameter(zeros([outFeatures, inFeatures]));
    this.bias = (a.bias ?? true) ? new Parameter(zeros([outFeatures])) : null;
    this.resetParameters();
  }
  resetParameters(): void { resetWeightAndBias(this.weight, this.bias); }
  forward(x: Tensor): Tensor {
    if (x.ndim === 0 || x.shape[x.ndim - 1] !== this.inFeatures) {
      throw new Error(`Linear: input of shape ${fmtShape(x.shape)} does not end in inFeatures=${this.inFeatures}`);
    }
    return linear(x, this.weight, this.bias);
  }
  override extraRepr(): string {
    return `in_features=${this.inFeatures}, out_features=${this.outFeatures}, bias=${pyBool(this.bias !== null)}`;
  }
}

/** Flattens dims startDim..endDim (default: all but the batch dim). */
export class Flatten extends Module {
  readonly startDim: number;
  readonly endDim: number;
  constructor(...args: [startDim?: number, endDim?: number] | [opts: { startDim?: number; endDim?: number }]) {
    super();
    const a = bindLayerArgs<{ startDim?: number; endDim?: number }>(FLATTEN, args);
    this.startDim = a.startDim ?? 1;
    this.endDim = a.endDim ?? -1;
  }
  forward(x: Tensor): Tensor { return x.flatten(this.startDim, this.endDim); }
  override extraRepr(): string { return `start_dim=${this.startDim}, end_dim=${this.endDim}`; }
}

/** Splits dim `dim` into `unflattenedSize` (one entry may be -1). */
export class Unflatten extends Module {
  readonly dim: number;
  readonly unflattenedSize: readonly number[];
  constructor(...args: [dim: number, unflattenedSize: readonly number[]] | [opts: { dim: number; unflattenedSize: readonly number[] }]) {
    super();
    const a = bindLayerArgs<{ dim: number; unflattenedSize: readonly number[] }>(UNFLATTEN, args);
    this.dim = a.dim;
    const unflattenedSize = a.unflattenedSize;
    if (!Array.isArray(unflattenedSize) || unflattenedSize.length === 0 || !unflattenedSize.every((d) => Number.isInteger(d) && (d >= 0 || d === -1))) {
      throw new Error(`Unflatten: unflattenedSize must be a non-empty list of sizes (one may be -1), got ${JSON.stringify(unflattenedSize)}`);
    }
    this.unflattenedSize = [...unflattenedSize];
  }
  forward(x: Tensor): Tensor {
    const r = x.ndim;
    if (this.dim < -r || this.dim >= r) throw new Error(`Unflatten: dim ${this.dim} is out of range for input of shape ${fmtShape(x.shape)}`);
    const d = this.dim < 0 ? this.dim + r : this.dim;
    return x.reshape([...x.shape.slice(0, d), ...this.unflattenedSize, ...x.shape.slice(d + 1)]);
  }
  override extraRepr(): string { return `dim=${this.dim}, unflattened_size=${pyVal(this.unflattenedSize)}`; }
}
