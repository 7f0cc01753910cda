// Resampling and padding layers: Upsample (F.interpolate's nearest, linear, bilinear, bicubic
// and trilinear modes), ZeroPad2d and ConstantPad2d. Invariant: written over existing tensor ops
// (F.interpolate, cat with constant blocks, slice for negative padding), so they differentiate
// and trace like any composite.

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { full } from '../creation.js';
import { interpolate } from '../functional/interpolate.js';
import { cat } from '../ops/shape.js';
import { Module, pyFloat, pyVal } from './module.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

const UPSAMPLE: LayerSignature = {
  layer: 'Upsample',
  positional: [{ name: 'size', kind: 'size', nullable: true }, { name: 'scaleFactor', kind: 'number', nullable: true, also: 'sizes' },
    { name: 'mode', kind: { oneOf: ['nearest', 'linear', 'bilinear', 'bicubic', 'trilinear'] } }, { name: 'alignCorners', kind: 'bool', nullable: true }],
};
const PAD_SIG = (layer: string, withValue: boolean): LayerSignature => ({
  layer, required: withValue ? 2 : 1,
  positional: [{ name: 'padding', kind: 'size' }, ...(withValue ? [{ name: 'value', kind: 'number' as const }] : [])],
});
const ZERO_PAD = PAD_SIG('ZeroPad2d', false), CONST_PAD = PAD_SIG('ConstantPad2d', true);

export type UpsampleMode = 'nearest' | 'linear' | 'bilinear' | 'bicubic' | 'trilinear';
export interface UpsampleOptions {
  /** Output spatial size (one number for every spatial dim, or one per dim). */
  size?: number | readonly number[] | null;
  /** Multiplier of the spatial sizes (one, or one per dim). */
  scaleFactor?: number | readonly number[] | null;
  mode?: UpsampleMode;
  /** Linear, bilinear, bicubic and trilinear only: map the corner pixels onto each other (default false). */
  alignCorners?: boolean | null;
}

/**
 * Upsamples the trailing spatial dims with F.interpolate: [N, C, W] for 'linear', [N, C, H, W]
 * for 'bilinear'/'bicubic', [N, C, D, H, W] for 'trilinear', any for 'nearest'. Give `size` or
 * `scaleFactor`.
 * @example new nn.Upsample({ scaleFactor: 2, mode: 'bilinear', alignCorners: false })
 */
export class Upsample extends Module {
  readonly size: number | readonly number[] | null;
  readonly scaleFactor: number | readonly number[] | null;
  readonly mode: UpsampleMode;
  readonly alignCorners: boolean | null;
  constructor(...args: [size?: number | readonly number[] | null, scaleFactor?: number | readonly number[] | null, mode?: UpsampleMode, alignCorners?: boolean | null] | [opts: UpsampleOptions]) {
    super();
    const a = bindLayerArgs<UpsampleOptions>(UPSAMPLE, args);
    this.size = a.size ?? null;
    this.scaleFactor = a.scaleFactor ?? null;
    if ((this.size === null) === (this.scaleFactor === null)) throw new Error('Upsample: give exactly one of size and scaleFactor');
    this.mode = a.mode ?? 'nearest';
    this.alignCorners = a.alignCorners ?? null;
    if (this.alignCorners !== null && this.mode === 'nearest') {
      throw new Error("Upsample: alignCorners only has an effect with the interpolating modes (linear, bilinear, bicubic, trilinear); leave it unset for 'nearest'");
    }
  }
  forward(x: Tensor): Tensor {
    return interpolate(x, { size: this.size ?? undefined, scaleFactor: this.scaleFactor ?? undefined, mode: this.mode, alignCorners: this.alignCorners });
  }
  override extraRepr(): string {
    const sf = this.scaleFactor === null ? 'None' : typeof this.scaleFactor === 'number' ? pyFloat(this.scaleFactor) : pyVal(this.scaleFactor);
    return this.size !== null ? `size=${pyVal(this.size)}, mode='${this.mode}'` : `scale_factor=${sf}, mode='${this.mode}'`;
  }
}

/** Pads (or, for negative entries, crops) the last two dims by [left, right, top, bottom]
 * with `value`. */
export function constantPad2d(x: Tensor, padding: readonly number[], value: number): Tensor {
  if (x.ndim < 2) throw new Error(`ConstantPad2d: input must have at least 2 dims, got shape ${fmtShape(x.shape)}`);
  const [l, r, t, b] = padding;
  const padDim = (y: Tensor, dim: number, before: number, after: number): Tensor => {
    // Crops first (negative padding), then adds constant blocks.
    const n = y.shape[dim];
    if (before < 0 || after < 0) {
      const start = Math.max(-before, 0), end = n - Math.max(-after, 0);
      if (end < start) throw new Error(`ConstantPad2d: padding ${pyVal(padding)} crops more than the ${n} entries of dim ${dim} of input ${fmtShape(x.shape)}`);
      y = y.slice(dim, start, end);
    }
    const parts: Tensor[] = [];
    const block = (k: number) => { const s = [...y.shape]; s[dim] = k; return full(s, value); };
    if (before > 0) parts.push(block(before));
    parts.push(y);
    if (after > 0) parts.push(block(after));
    return parts.length === 1 ? y : cat(parts, dim);
  };
  return padDim(padDim(x, x.ndim - 1, l, r), x.ndim - 2, t, b);
}

function padding4(layer: string, p: number | readonly number[]): number[] {
  const out = typeof p === 'number' ? [p, p, p, p] : [...p];
  if (out.length !== 4 || !out.every(Number.isInteger)) throw new Error(`${layer}: padding must be an integer or [left, right, top, bottom], got ${JSON.stringify(p)}`);
  return out;
}

/**
 * Pads the last two dims with `value`: padding is one integer or [left, right, top, bottom].
 * @example new nn.ConstantPad2d([1, 1, 2, 0], 3.5)
 */
export class ConstantPad2d extends Module {
  readonly padding: number[];
  readonly value: number;
  constructor(...args: [padding: number | readonly number[], value: number] | [opts: { padding: number | readonly number[]; value: number }]) {
    super();
    const a = bindLayerArgs<{ padding: number | readonly number[]; value: number }>(CONST_PAD, args);
    this.padding = padding4('ConstantPad2d', a.padding);
    this.value = a.value;
  }
  forward(x: Tensor): Tensor { return constantPad2d(x, this.padding, this.value); }
  override extraRepr(): string { return `padding=${pyVal(this.padding)}, value=${pyFloat(this.value)}`; }
}

/** Pads the last two dims with zeros. @example new nn.ZeroPad2d(2); new nn.ZeroPad2d([1, 0, 1, 0]) */
export class ZeroPad2d extends Module {
  readonly padding: number[];
  constructor(...args: [padding: number | readonly number[]] | [opts: { padding: number | readonly number[] }]) {
    super();
    this.padding = padding4('ZeroPad2d', bindLayerArgs<{ padding: number | readonly number[] }>(ZERO_PAD, args).padding);
  }
  forward(x: Tensor): Tensor { return constantPad2d(x, this.padding, 0); }
  override extraRepr(): string { return `padding=${pyVal(this.padding)}, value=0.0`; }
}
