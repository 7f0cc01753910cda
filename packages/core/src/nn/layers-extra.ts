// More layers over existing functions: MaxPool1d, AvgPool1d (the 2-D pools over a [N, C, 1, L]
// view), AdaptiveMaxPool2d, InstanceNorm2d, EmbeddingBag, ParameterList, ParameterDict.
// Invariant: parameter and buffer names and registration order are PyTorch's (InstanceNorm2d's
// weight, bias, running_mean, running_var, num_batches_tracked; EmbeddingBag's weight;
// ParameterList's '0', '1', …; ParameterDict's keys), so PyTorch state dicts load unchanged.

import { fmtShape } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { ones, zeros, full } from '../creation.js';
import { noGrad } from '../autograd/grad-mode.js';
import { stack } from '../ops/shape.js';
import * as F from '../functional/index.js';
import { Module, Parameter, pyBool, pyFloat } from './module.js';
import { normal_ } from './init.js';
import { checkSize } from './linear.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

const one = (layer: string, v: number | readonly number[], what: string): number => {
  const x = typeof v === 'number' ? v : v.length === 1 ? v[0] : NaN;
  if (!Number.isInteger(x) || x < 0) throw new Error(`${layer}: ${what} must be one integer >= 0, got ${JSON.stringify(v)}`);
  return x;
};

const MAX_POOL1D: LayerSignature = {
  layer: 'MaxPool1d', required: 1,
  positional: [{ name: 'kernelSize', kind: 'size' }, { name: 'stride', kind: 'size', nullable: true }, { name: 'padding', kind: 'size' },
    { name: 'dilation', kind: 'size' }, { name: 'returnIndices', kind: 'bool' }, { name: 'ceilMode', kind: 'bool' }],
};
const AVG_POOL1D: LayerSignature = {
  layer: 'AvgPool1d', required: 1,
  positional: [{ name: 'kernelSize', kind: 'size' }, { name: 'stride', kind: 'size', nullable: true }, { name: 'padding', kind: 'size' },
    { name: 'ceilMode', kind: 'bool' }, { name: 'countIncludePad', kind: 'bool' }],
};

/** Runs a 2-D pool on [N, C, L] (or [C, L]) as [N, C, 1, L]. */
function as2d(layer: string, x: Tensor, f: (x4: Tensor) => Tensor): Tensor {
  if (x.ndim !== 2 && x.ndim !== 3) throw new Error(`${layer}: expected a 2-D [C, L] or 3-D [N, C, L] input, got shape ${fmtShape(x.shape)}`);
  return f(x.unsqueeze(-2)).squeeze(-2);
}

export interface Pool1dOptions { stride?: number | readonly number[] | null; padding?: number | readonly number[]; ceilMode?: boolean }

/** Max over kernelSize windows of the last dim of [N, C, L] (or [C, L]) inputs. @example new nn.MaxPool1d(3, { stride: 2 }) */
export class MaxPool1d extends Module {
  readonly kernelSize: number;
  readonly stride: number;
  readonly padding: number;
  readonly dilation: number;
  readonly ceilMode: boolean;
  constructor(...args: [kernelSize: number, opts?: Pool1dOptions & { dilation?: number }] | [opts: Pool1dOptions & { kernelSize: number; dilation?: number }]
    | [kernelSize: number, stride: number | null, padding?: number, dilation?: number, returnIndices?: false, ceilMode?: boolean]) {
    super();
    const a = bindLayerArgs<Pool1dOptions & { kernelSize: number; dilation?: number; returnIndices?: boolean }>(MAX_POOL1D, args);
    if (a.returnIndices) throw new Error('MaxPool1d: returnIndices is not supported; use MaxPool2d on x.unsqueeze(-2) for indices');
    this.kernelSize = one('MaxPool1d', a.kernelSize, 'kernelSize');
    this.stride = one('MaxPool1d', a.stride ?? a.kernelSize, 'stride');
    this.padding = one('MaxPool1d', a.padding ?? 0, 'padding');
    this.dilation = one('MaxPool1d', a.dilation ?? 1, 'dilation');
    this.ceilMode = a.ceilMode ?? false;
  }
  forward(x: Tensor): Tensor {
    return as2d('MaxPool1d', x, (x4) => F.maxPool2d(x4, [1, this.kernelSize], {
      stride: [1, this.stride], padding: [0, this.padding], dilation: [1, this.dilation], ceilMode: this.ceilMode,
    }));
  }
  override extraRepr(): string {
    return `kernel_size=${this.kernelSize}, stride=${this.stride}, padding=${this.padding}, dilation=${this.dilation}, ceil_mode=${pyBool(this.ceilMode)}`;
  }
}

/** Mean over kernelSize windows of the last dim of [N, C, L] (or [C, L]) inputs. @example new nn.AvgPool1d(2) */
export class AvgPool1d extends Module {
  readonly kernelSize: number;
  readonly stride: number;
  readonly padding: number;
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;
  constructor(...args: [kernelSize: number, opts?: Pool1dOptions & { countIncludePad?: boolean }] | [opts: Pool1dOptions & { kernelSize: number; countIncludePad?: boolean }]
    | [kernelSize: number, stride: number | null, padding?: number, ceilMode?: boolean, countIncludePad?: boolean]) {
    super();
    const a = bindLayerArgs<Pool1dOptions & { kernelSize: number; countIncludePad?: boolean }>(AVG_POOL1D, args);
    this.kernelSize = one('AvgPool1d', a.kernelSize, 'kernelSize');
    this.stride = one('AvgPool1d', a.stride ?? a.kernelSize, 'stride');
    this.padding = one('AvgPool1d', a.padding ?? 0, 'padding');
    this.ceilMode = a.ceilMode ?? false;
    this.countIncludePad = a.countIncludePad ?? true;
  }
  forward(x: Tensor): Tensor {
    return as2d('AvgPool1d', x, (x4) => F.avgPool2d(x4, [1, this.kernelSize], {
      stride: [1, this.stride], padding: [0, this.padding], ceilMode: this.ceilMode, countIncludePad: this.countIncludePad,
    }));
  }
  override extraRepr(): string { return `kernel_size=(${this.kernelSize},), stride=(${this.stride},), padding=(${this.padding},)`; }
}

const ADAPTIVE_MAX_POOL: LayerSignature = { layer: 'AdaptiveMaxPool2d', required: 1, positional: [{ name: 'outputSize', kind: 'sizeOrNone' }, { name: 'returnIndices', kind: 'bool' }] };

/** Max pooling to a fixed output size (H, W); null keeps that input dim. @example new nn.AdaptiveMaxPool2d([5, 7]) */
export class AdaptiveMaxPool2d extends Module {
  readonly outputSize: number | readonly (number | null)[];
  readonly returnIndices: boolean;
  constructor(...args: [outputSize: number | readonly (number | null)[], returnIndices?: boolean] | [opts: { outputSize: number | readonly (number | null)[]; returnIndices?: boolean }]) {
    super();
    const a = bindLayerArgs<{ outputSize: number | readonly (number | null)[]; returnIndices?: boolean }>(ADAPTIVE_MAX_POOL, args);
    this.outputSize = a.outputSize;
    this.returnIndices = a.returnIndices ?? false;
  }
  /** The pooled values, or [values, indices] when built with returnIndices. */
  forward(x: Tensor): Tensor | [Tensor, Tensor] {
    return this.returnIndices ? F.adaptiveMaxPool2d(x, this.outputSize, { returnIndices: true }) : F.adaptiveMaxPool2d(x, this.outputSize);
  }
  override extraRepr(): string {
    const o = this.outputSize;
    return `output_size=${typeof o === 'number' ? o : `(${o.map((d) => (d === null ? 'None' : String(d))).join(', ')})`}`;
  }
}

const INSTANCE_NORM: LayerSignature = {
  layer: 'InstanceNorm2d', required: 1,
  positional: [{ name: 'numFeatures', kind: 'int' }, { name: 'eps', kind: 'number' }, { name: 'momentum', kind: 'number' }, { name: 'affine', kind: 'bool' }, { name: 'trackRunningStats', kind: 'bool' }],
};

export interface InstanceNormLayerOptions { eps?: number; momentum?: number; affine?: boolean; trackRunningStats?: boolean }

/**
 * Instance normalisation of [N, C, H, W] (or [C, H, W]) inputs: each plane by its own
 * statistics. PyTorch's defaults: no affine parameters, no running statistics.
 * @example new nn.InstanceNorm2d(64, { affine: true })
 */
export class InstanceNorm2d extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  readonly momentum: number;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: Tensor | null;
  bias: Tensor | null;
  running_mean: Tensor | null;
  running_var: Tensor | null;
  num_batches_tracked: Tensor | null;
  constructor(...args: [numFeatures: number, opts?: InstanceNormLayerOptions] | [opts: InstanceNormLayerOptions & { numFeatures: number }]
    | [numFeatures: number, eps: number, momentum?: number, affine?: boolean, trackRunningStats?: boolean]) {
    super();
    const a = bindLayerArgs<InstanceNormLayerOptions & { numFeatures: number }>(INSTANCE_NORM, args);
    this.numFeatures = checkSize('InstanceNorm2d', 'numFeatures', a.numFeatures);
    this.eps = a.eps ?? 1e-5;
    this.momentum = a.momentum ?? 0.1;
    this.affine = a.affine ?? false;
    this.trackRunningStats = a.trackRunningStats ?? false;
    this.weight = this.affine ? new Parameter(ones([this.numFeatures])) : null;
    this.bias = this.affine ? new Parameter(zeros([this.numFeatures])) : null;
    this.running_mean = this.trackRunningStats ? zeros([this.numFeatures]) : null;
    this.running_var = this.trackRunningStats ? ones([this.numFeatures]) : null;
    this.num_batches_tracked = this.trackRunningStats ? zeros([], { dtype: 'int32' }) : null;
  }
  forward(x: Tensor): Tensor {
    if (x.ndim !== 3 && x.ndim !== 4) throw new Error(`InstanceNorm2d: expected a 3-D (unbatched) or 4-D input, got shape ${fmtShape(x.shape)}`);
    const xb = x.ndim === 3 ? x.unsqueeze(0) : x;
    if (xb.shape[1] !== this.numFeatures && this.affine) {
      throw new Error(`InstanceNorm2d: input of shape ${fmtShape(x.shape)} has ${xb.shape[1]} channels, expected numFeatures=${this.numFeatures}`);
    }
    const useInputStats = this.training || !this.trackRunningStats;
    // As PyTorch 1.13's _InstanceNorm: num_batches_tracked exists (state dict parity) but is never counted.
    const y = F.instanceNorm(xb, {
      runningMean: this.running_mean, runningVar: this.running_var, weight: this.weight, bias: this.bias,
      useInputStats, momentum: this.momentum, eps: this.eps,
    });
    return x.ndim === 3 ? y.squeeze(0) : y;
  }
  override extraRepr(): string {
    return `${this.numFeatures}, eps=${pyFloat(this.eps)}, momentum=${pyFloat(this.momentum)}, affine=${pyBool(this.affine)}, track_running_stats=${pyBool(this.trackRunningStats)}`;
  }
}

const EMBEDDING_BAG: LayerSignature = {
  layer: 'EmbeddingBag', required: 2,
  positional: [{ name: 'numEmbeddings', kind: 'int' }, { name: 'embeddingDim', kind: 'int' }],
  keywordOnly: [{ name: 'mode', kind: { oneOf: ['sum', 'mean', 'max'] } }, { name: 'includeLastOffset', kind: 'bool' },
    { name: 'paddingIdx', kind: 'int', nullable: true }],
};

export interface EmbeddingBagOptions {
  /** How a bag's rows are combined (default 'mean'). */
  mode?: 'sum' | 'mean' | 'max';
  /** offsets has one more entry, the end of the last bag. */
  includeLastOffset?: boolean;
  /** Indices equal to this are left out of their bag. */
  paddingIdx?: number | null;
}

/**
 * Sums, averages or maxes bags of embedding rows without materialising the rows of every
 * index: `forward(input [B, n])` (fixed-size bags) or `forward(input [n], offsets [B])`. An empty
 * bag gives zeros. `perSampleWeights` (mode 'sum') scales each row first.
 * @example new nn.EmbeddingBag(10, 3, { mode: 'sum' }).forward(tensor([1, 2, 4, 5, 4, 3, 2, 9], { dtype: 'int32' }), tensor([0, 4], { dtype: 'int32' }))
 */
export class EmbeddingBag extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly mode: 'sum' | 'mean' | 'max';
  readonly includeLastOffset: boolean;
  readonly paddingIdx: number | null;
  weight: Tensor;
  constructor(...args: [numEmbeddings: number, embeddingDim: number, opts?: EmbeddingBagOptions] | [opts: EmbeddingBagOptions & { numEmbeddings: number; embeddingDim: number }]) {
    super();
    const a = bindLayerArgs<EmbeddingBagOptions & { numEmbeddings: number; embeddingDim: number }>(EMBEDDING_BAG, args);
    this.numEmbeddings = checkSize('EmbeddingBag', 'numEmbeddings', a.numEmbeddings);
    this.embeddingDim = checkSize('EmbeddingBag', 'embeddingDim', a.embeddingDim);
    this.mode = a.mode ?? 'mean';
    this.includeLastOffset = a.includeLastOffset ?? false;
    const p = a.paddingIdx ?? null;
    if (p !== null && (p < -this.numEmbeddings || p >= this.numEmbeddings)) throw new Error(`EmbeddingBag: paddingIdx ${p} must be within numEmbeddings (${-this.numEmbeddings}..${this.numEmbeddings - 1})`);
    this.paddingIdx = p === null ? null : p < 0 ? p + this.numEmbeddings : p;
    this.weight = new Parameter(zeros([this.numEmbeddings, this.embeddingDim]));
    this.resetParameters();
  }
  resetParameters(): void {
    normal_(this.weight);
    const p = this.paddingIdx, w = this.weight;
    if (p !== null) noGrad(() => w.slice(0, p, p + 1).zero_());
  }
  forward(input: Tensor, offsets?: Tensor | null, perSampleWeights?: Tensor | null): Tensor {
    if (input.dtype !== 'int32') throw new Error(`EmbeddingBag: input must hold int32 indices, got ${input.dtype}`);
    if (perSampleWeights && this.mode !== 'sum') throw new Error(`EmbeddingBag: perSampleWeights is only supported for mode 'sum', got mode '${this.mode}'`);
    if (perSampleWeights && (perSampleWeights.ndim !== input.ndim || perSampleWeights.shape.some((d, i) => d !== input.shape[i]))) {
      throw new Error(`EmbeddingBag: perSampleWeights of shape ${fmtShape(perSampleWeights.shape)} must have the input's shape ${fmtShape(input.shape)}`);
    }
    // The bags as [start, end) ranges into the flat index list.
    let flat: Tensor, flatW: Tensor | null, bounds: [number, number][];
    if (input.ndim === 2) {
      if (offsets) throw new Error('EmbeddingBag: offsets must be null when input is 2-D [B, n] (each row is a bag)');
      const [B, n] = input.shape;
      flat = input.reshape([-1]);
      flatW = perSampleWeights ? perSampleWeights.reshape([-1]) : null;
      bounds = Array.from({ length: B }, (_, b) => [b * n, (b + 1) * n]);
    } else if (input.ndim === 1) {
      if (!offsets || offsets.ndim !== 1) throw new Error('EmbeddingBag: a 1-D input needs 1-D offsets (the start of each bag)');
      const o = Array.from(offsets.toArray() as ArrayLike<number>, Number);
      const n = input.shape[0];
      const starts = this.includeLastOffset ? o.slice(0, -1) : o;
      const ends = this.includeLastOffset ? o.slice(1) : [...o.slice(1), n];
      bounds = starts.map((s, i) => [s, ends[i]]);
      for (const [s, e] of bounds) {
        if (!(s >= 0 && s <= e && e <= n)) throw new Error(`EmbeddingBag: offsets ${JSON.stringify(o)} must be non-decreasing and within the ${n} indices`);
      }
      flat = input;
      flatW = perSampleWeights ?? null;
    } else {
      throw new Error(`EmbeddingBag: input must be 1-D (with offsets) or 2-D, got shape ${fmtShape(input.shape)}`);
    }
    const idx = Array.from(flat.toArray() as ArrayLike<number>, Number);
    const rows = F.embedding(flat, this.weight);
    const bags = bounds.map(([s, e]) => {
      let keep = Array.from({ length: e - s }, (_, k) => s + k);
      if (this.paddingIdx !== null) keep = keep.filter((k) => idx[k] !== this.paddingIdx);
      if (keep.length === 0) return full([this.embeddingDim], 0);
      const sel = rows.indexSelect(0, intTensor(keep));
      let bag = sel;
      if (flatW) bag = bag.mul(flatW.indexSelect(0, intTensor(keep)).unsqueeze(1));
      if (this.mode === 'sum') return bag.sum(0);
      if (this.mode === 'mean') return bag.mean(0);
      return bag.max(0)[0];
    });
    if (bags.length === 0) return zeros([0, this.embeddingDim]);
    return stack(bags, 0);
  }
  override extraRepr(): string { return `${this.numEmbeddings}, ${this.embeddingDim}, mode='${this.mode}'${this.paddingIdx !== null ? `, padding_idx=${this.paddingIdx}` : ''}`; }
}

function intTensor(v: number[]): Tensor {
  return new Tensor({ data: Int32Array.from(v), version: 0 }, [v.length], 'int32');
}

/**
 * A list of parameters registered as '0', '1', … (state dict keys as PyTorch's ParameterList).
 * Tensors that are not Parameters are wrapped.
 * @example this.scales = new nn.ParameterList([ones([3]), ones([3])]);
 */
export class ParameterList extends Module {
  constructor(values: Iterable<Tensor> = []) {
    super();
    for (const v of values) this.append(v);
  }
  get length(): number {
    let n = 0;
    while (Object.prototype.hasOwnProperty.call(this, String(n))) n++;
    return n;
  }
  get(i: number): Tensor {
    const n = this.length;
    if (!Number.isInteger(i) || i < -n || i >= n) throw new RangeError(`ParameterList.get: index ${i} is out of range for ${n} parameters`);
    return Reflect.get(this, String(i < 0 ? i + n : i)) as Tensor;
  }
  set(i: number, t: Tensor): void {
    const n = this.length;
    if (!Number.isInteger(i) || i < -n || i >= n) throw new RangeError(`ParameterList.set: index ${i} is out of range for ${n} parameters`);
    this.registerParameter(String(i < 0 ? i + n : i), asParameter('ParameterList.set', t));
  }
  append(t: Tensor): this {
    this.registerParameter(String(this.length), asParameter('ParameterList.append', t));
    return this;
  }
  extend(ts: Iterable<Tensor>): this { for (const t of ts) this.append(t); return this; }
  [Symbol.iterator](): Iterator<Tensor> { return Array.from({ length: this.length }, (_, i) => this.get(i))[Symbol.iterator](); }
  forward(): never { throw new Error('ParameterList has no forward(): use its parameters in your own forward()'); }
  override extraRepr(): string {
    return [...this].map((p, i) => `(${i}): Parameter containing: [torch.float32 of size ${p.shape.join('x')}]`).join('\n');
  }
}

/**
 * Parameters by name in insertion order (state dict keys are the names, as PyTorch's
 * ParameterDict). Names must not contain '.'.
 * @example this.p = new nn.ParameterDict({ alpha: ones([1]) }); this.p.get('alpha')
 */
export class ParameterDict extends Module {
  #order: string[] = [];
  constructor(values: Record<string, Tensor> | Iterable<[string, Tensor]> = {}) {
    super();
    this.update(values);
  }
  protected override memberNames(): string[] {
    const mine = new Set(this.#order);
    return [...Object.keys(this).filter((k) => !mine.has(k)), ...this.#order];
  }
  get length(): number { return this.#order.length; }
  has(key: string): boolean { return this.#order.includes(key); }
  get(key: string): Tensor {
    if (!this.has(key)) throw new Error(`ParameterDict.get: no parameter under key '${key}' (keys: ${this.#order.join(', ')})`);
    return Reflect.get(this, key) as Tensor;
  }
  set(key: string, t: Tensor): this {
    this.registerParameter(key, asParameter(`ParameterDict.set('${key}')`, t));
    if (!this.#order.includes(key)) this.#order.push(key);
    return this;
  }
  update(values: Record<string, Tensor> | Iterable<[string, Tensor]>): this {
    const entries = Symbol.iterator in values ? [...(values as Iterable<[string, Tensor]>)] : Object.entries(values);
    for (const [k, v] of entries) this.set(k, v);
    return this;
  }
  pop(key: string): Tensor {
    const t = this.get(key);
    Reflect.deleteProperty(this, key);
    this.#order = this.#order.filter((k) => k !== key);
    return t;
  }
  keys(): string[] { return [...this.#order]; }
  values(): Tensor[] { return this.#order.map((k) => this.get(k)); }
  entries(): [string, Tensor][] { return this.#order.map((k) => [k, this.get(k)]); }
  items(): [string, Tensor][] { return this.entries(); }
  [Symbol.iterator](): Iterator<string> { return this.keys()[Symbol.iterator](); }
  forward(): never { throw new Error("ParameterDict has no forward(): use its parameters (dict.get('name')) in your own forward()"); }
  override extraRepr(): string {
    return this.entries().map(([k, p]) => `(${k}): Parameter containing: [torch.float32 of size ${p.shape.join('x')}]`).join('\n');
  }
}

function asParameter(where: string, t: unknown): Tensor {
  if (!(t instanceof Tensor)) throw new Error(`${where}: expected a Tensor, got ${t === null ? 'null' : typeof t}`);
  return t instanceof Parameter ? t : new Parameter(t.detach());
}
