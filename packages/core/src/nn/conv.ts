// Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d over F.conv1d/conv2d/convTranspose2d.
// Invariant: weight shapes, default init (kaiming_uniform(a=√5), bias U(±1/√fanIn)), state dict
// keys and reprs are PyTorch's.

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { zeros } from '../creation.js';
import * as F from '../functional/index.js';
import { Module, Parameter, pyVal } from './module.js';
import { checkSize, resetWeightAndBias } from './linear.js';
import { bindLayerArgs, type ArgSpec, type LayerSignature } from './layer-args.js';

/** A size given as one number for every spatial dim or one per dim. */
export type SizeArg = number | readonly number[];

/** Expands `v` to `n` entries (PyTorch's _single/_pair). */
export function ntuple(layer: string, what: string, v: SizeArg, n: number, min = 0): number[] {
  const out = typeof v === 'number' ? Array<number>(n).fill(v) : [...v];
  if (out.length !== n || !out.every((d) => Number.isInteger(d) && d >= min)) {
    throw new Error(`${layer}: ${what} must be an integer >= ${min} or ${n} of them, got ${JSON.stringify(v)}`);
  }
  return out;
}

export interface ConvOptions {
  stride?: SizeArg;
  /** Zero padding per side, or 'valid' (none) / 'same' (output size = input size; stride 1 only). */
  padding?: SizeArg | 'same' | 'valid';
  dilation?: SizeArg;
  groups?: number;
  bias?: boolean;
  /** Only 'zeros' is supported. */
  paddingMode?: 'zeros';
}

const SIZE = (name: string): ArgSpec => ({ name, kind: 'size' });
/** PyTorch's positional order: Conv (…, stride, padding, dilation, groups, bias, padding_mode),
 * ConvTranspose (…, stride, padding, output_padding, groups, bias, dilation, padding_mode). */
function convSignature(layer: string, transposed: boolean): LayerSignature {
  const head: ArgSpec[] = [{ name: 'inChannels', kind: 'int' }, { name: 'outChannels', kind: 'int' }, SIZE('kernelSize'), SIZE('stride')];
  const groups: ArgSpec = { name: 'groups', kind: 'int' }, bias: ArgSpec = { name: 'bias', kind: 'bool' };
  const mode: ArgSpec = { name: 'paddingMode', kind: { oneOf: ['zeros', 'reflect', 'replicate', 'circular'] } };
  // 'same'/'valid' pass the binder for both, so a transposed one gets the specific error below.
  const padding: ArgSpec = { name: 'padding', kind: 'size', also: { oneOf: ['same', 'valid'] } };
  const positional = transposed
    ? [...head, padding, SIZE('outputPadding'), groups, bias, SIZE('dilation'), mode]
    : [...head, padding, SIZE('dilation'), groups, bias, mode];
  return { layer, required: 3, positional };
}
const SIGS = new Map<string, LayerSignature>([
  ['Conv1d', convSignature('Conv1d', false)], ['Conv2d', convSignature('Conv2d', false)], ['ConvTranspose2d', convSignature('ConvTranspose2d', true)],
  ['ConvTranspose1d', convSignature('ConvTranspose1d', true)],
]);

/** The constructor forms of a convolution: PyTorch's positional order, or any of the parameters
 * by name in a trailing options object (`new nn.Conv2d(3, 64, { kernelSize: 3 })`). */
export type ConvArgs<O, P extends unknown[]> =
  | [inChannels: number, outChannels: number, kernelSize: SizeArg, opts?: O]
  | [inChannels: number, outChannels: number, opts: O & { kernelSize: SizeArg }]
  | [opts: O & { inChannels: number; outChannels: number; kernelSize: SizeArg }]
  | [inChannels: number, outChannels: number, kernelSize: SizeArg, ...rest: P];

type ConvPositional = [stride: SizeArg, padding?: SizeArg | 'same' | 'valid', dilation?: SizeArg, groups?: number, bias?: boolean, paddingMode?: 'zeros'];
type ConvTransposePositional = [stride: SizeArg, padding?: SizeArg, outputPadding?: SizeArg, groups?: number, bias?: boolean, dilation?: SizeArg, paddingMode?: 'zeros'];
type Bound = ConvTransposeOptions & Omit<ConvOptions, 'padding'> & { padding?: SizeArg | 'same' | 'valid'; inChannels: number; outChannels: number; kernelSize: SizeArg };

/** Shared constructor logic of the convolutions (PyTorch's _ConvNd). */
abstract class ConvNd extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: number[];
  readonly stride: number[];
  readonly padding: number[] | 'same' | 'valid';
  readonly dilation: number[];
  readonly outputPadding: number[];
  readonly groups: number;
  readonly paddingMode: 'zeros';
  readonly transposed: boolean;
  weight: Tensor;
  bias: Tensor | null;

  constructor(name: string, n: number, transposed: boolean, args: readonly unknown[]) {
    super();
    const sig = SIGS.get(name);
    if (!sig) throw new Error(`${name}: internal error: no constructor signature`);
    const opts = bindLayerArgs<Bound>(sig, args);
    const { inChannels, outChannels, kernelSize } = opts;
    this.inChannels = checkSize(name, 'inChannels', inChannels);
    this.outChannels = checkSize(name, 'outChannels', outChannels);
    this.kernelSize = ntuple(name, 'kernelSize', kernelSize, n, 1);
    this.stride = ntuple(name, 'stride', opts.stride ?? 1, n, 1);
    const padding = opts.padding ?? 0;
    if (typeof padding === 'string') {
      if (padding !== 'same' && padding !== 'valid') throw new Error(`${name}: invalid padding string '${String(padding)}', should be one of 'valid', 'same'`);
      if (transposed) throw new Error(`${name}: padding '${padding}' is only supported by non-transposed convolutions`);
      if (padding === 'same' && this.stride.some((s) => s !== 1)) throw new Error(`${name}: padding='same' is not supported for strided convolutions`);
      this.padding = padding;
    } else {
      this.padding = ntuple(name, 'padding', padding, n);
    }
    this.dilation = ntuple(name, 'dilation', opts.dilation ?? 1, n, 1);
    this.outputPadding = ntuple(name, 'outputPadding', opts.outputPadding ?? 0, n);
    this.groups = checkSize(name, 'groups', opts.groups ?? 1, 1);
    if (inChannels % this.groups !== 0) throw new Error(`${name}: inChannels (${inChannels}) must be divisible by groups (${this.groups})`);
    if (outChannels % this.groups !== 0) throw new Error(`${name}: outChannels (${outChannels}) must be divisible by groups (${this.groups})`);
    const mode = opts.paddingMode ?? 'zeros';
    if (mode !== 'zeros') throw new Error(`${name}: paddingMode '${String(mode)}' is not supported; only 'zeros' is`);
    this.paddingMode = mode;
    this.transposed = transposed;
    const wShape = transposed
      ? [inChannels, outChannels / this.groups, ...this.kernelSize]
      : [outChannels, inChannels / this.groups, ...this.kernelSize];
    this.weight = new Parameter(zeros(wShape));
    this.bias = (opts.bias ?? true) ? new Parameter(zeros([outChannels])) : null;
    this.resetParameters();
  }

  resetParameters(): void { resetWeightAndBias(this.weight, this.bias); }

  protected checkInput(name: string, x: Tensor, spatial: number): void {
    const r = spatial + 2;
    if (x.ndim !== r && x.ndim !== r - 1) {
      throw new Error(`${name}: expected a ${r - 1}-D (unbatched) or ${r}-D (batched) input, got shape ${fmtShape(x.shape)}`);
    }
    const c = x.shape[x.ndim - spatial - 1];
    if (c !== this.inChannels) {
      throw new Error(`${name}: input of shape ${fmtShape(x.shape)} has ${c} channels, but the layer expects inChannels=${this.inChannels}`);
    }
  }

  override extraRepr(): string {
    const allAre = (v: readonly number[], k: number) => v.every((d) => d === k);
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${pyVal(this.kernelSize)}, stride=${pyVal(this.stride)}`;
    if (typeof this.padding === 'string') s += `, padding=${this.padding}`;
    else if (!allAre(this.padding, 0)) s += `, padding=${pyVal(this.padding)}`;
    if (!allAre(this.dilation, 1)) s += `, dilation=${pyVal(this.dilation)}`;
    if (!allAre(this.outputPadding, 0)) s += `, output_padding=${pyVal(this.outputPadding)}`;
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (this.bias === null) s += ', bias=False';
    return s;
  }
}

/**
 * 1-D convolution over [N, C, L] (or unbatched [C, L]) inputs; weight [out, in/groups, k].
 * @example new nn.Conv1d(16, 33, 3, { stride: 2 })
 */
export class Conv1d extends ConvNd {
  constructor(...args: ConvArgs<ConvOptions, ConvPositional>) {
    super('Conv1d', 1, false, args);
  }
  forward(x: Tensor): Tensor {
    this.checkInput('Conv1d', x, 1);
    return F.conv1d(x, this.weight, this.bias, { stride: this.stride, padding: this.padding, dilation: this.dilation, groups: this.groups });
  }
}

/**
 * 2-D convolution over [N, C, H, W] (or unbatched [C, H, W]) inputs; weight [out, in/groups, kh, kw].
 * @example new nn.Conv2d(3, 64, 3, { padding: 1 }); new nn.Conv2d(3, 64, 3, 1, 1); new nn.Conv2d(3, 64, { kernelSize: 3, padding: 1 })
 */
export class Conv2d extends ConvNd {
  constructor(...args: ConvArgs<ConvOptions, ConvPositional>) {
    super('Conv2d', 2, false, args);
  }
  forward(x: Tensor): Tensor {
    this.checkInput('Conv2d', x, 2);
    return F.conv2d(x, this.weight, this.bias, { stride: this.stride, padding: this.padding, dilation: this.dilation, groups: this.groups });
  }
}

export interface ConvTransposeOptions extends Omit<ConvOptions, 'padding'> {
  padding?: SizeArg;
  /** Extra size added to one side of each output dim (to pick among the sizes a stride allows). */
  outputPadding?: SizeArg;
}

/**
 * Transposed 2-D convolution ("deconvolution"); weight [in, out/groups, kh, kw].
 * @example new nn.ConvTranspose2d(16, 8, 3, { stride: 2, padding: 1, outputPadding: 1 })
 */
export class ConvTranspose2d extends ConvNd {
  constructor(...args: ConvArgs<ConvTransposeOptions, ConvTransposePositional>) {
    super('ConvTranspose2d', 2, true, args);
    for (let i = 0; i < 2; i++) {
      if (this.outputPadding[i] >= this.stride[i] && this.outputPadding[i] >= this.dilation[i]) {
        throw new Error(`ConvTranspose2d: outputPadding ${pyVal(this.outputPadding)} must be smaller than either stride ${pyVal(this.stride)} or dilation ${pyVal(this.dilation)}`);
      }
    }
  }
  /**
   * `outputSize` (the last two entries are used) picks the output height and width among those
   * the stride allows, overriding outputPadding, as PyTorch's `forward(input, output_size)`.
   */
  forward(x: Tensor, outputSize?: readonly number[] | null): Tensor {
    this.checkInput('ConvTranspose2d', x, 2);
    const padding = this.padding;
    if (typeof padding === 'string') throw new Error(`ConvTranspose2d: padding '${padding}' is not supported`); // the constructor refuses it
    const outputPadding = outputSize ? this.#outputPaddingFor(x, outputSize, padding) : this.outputPadding;
    return F.convTranspose2d(x, this.weight, this.bias, {
      stride: this.stride, padding, outputPadding, groups: this.groups, dilation: this.dilation,
    });
  }

  #outputPaddingFor(x: Tensor, outputSize: readonly number[], padding: readonly number[]): number[] {
    if (outputSize.length < 2) throw new Error(`ConvTranspose2d: outputSize ${pyVal(outputSize)} must end in [H, W]`);
    const want = outputSize.slice(-2);
    return [0, 1].map((i) => {
      const inSize = x.shape[x.ndim - 2 + i];
      const min = (inSize - 1) * this.stride[i] - 2 * padding[i] + this.dilation[i] * (this.kernelSize[i] - 1) + 1;
      const max = min + this.stride[i] - 1;
      if (!(want[i] >= min && want[i] <= max)) {
        throw new Error(`ConvTranspose2d: requested output size ${pyVal(want)} is not possible for input ${fmtShape(x.shape)}: dim ${i} must be between ${min} and ${max}`);
      }
      return want[i] - min;
    });
  }
}

/**
 * Transposed 1-D convolution over [N, C, L] (or [C, L]) inputs; weight [in, out/groups, k].
 * @example new nn.ConvTranspose1d(16, 8, 3, { stride: 2, padding: 1, outputPadding: 1 })
 */
export class ConvTranspose1d extends ConvNd {
  constructor(...args: ConvArgs<ConvTransposeOptions, ConvTransposePositional>) {
    super('ConvTranspose1d', 1, true, args);
    if (this.outputPadding[0] >= this.stride[0] && this.outputPadding[0] >= this.dilation[0]) {
      throw new Error(`ConvTranspose1d: outputPadding ${pyVal(this.outputPadding)} must be smaller than either stride ${pyVal(this.stride)} or dilation ${pyVal(this.dilation)}`);
    }
  }
  forward(x: Tensor): Tensor {
    this.checkInput('ConvTranspose1d', x, 1);
    const padding = this.padding;
    if (typeof padding === 'string') throw new Error(`ConvTranspose1d: padding '${padding}' is not supported`); // the constructor refuses it
    return F.convTranspose1d(x, this.weight, this.bias, {
      stride: this.stride, padding, outputPadding: this.outputPadding, groups: this.groups, dilation: this.dilation,
    });
  }
}
