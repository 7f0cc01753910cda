// Single-step recurrent cells: RNNCell (tanh or relu), LSTMCell, GRUCell.
// Invariant: parameter names, shapes, registration order, gate order (rnn-cells.ts: LSTM i,f,g,o;
// GRU r,z,n) and input/state layouts are PyTorch's, and the LSTM/GRU cells compute the same
// step functions as nn.LSTM/nn.GRU, so PyTorch state dicts load and results match.

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { zeros } from '../creation.js';
import { linear } from '../ops/linalg.js';
import { expand } from '../ops/shape.js';
import { Module, Parameter } from './module.js';
import { uniform_ } from './init.js';
import { checkSize } from './linear.js';
import { gruCell, lstmCell, rnnReluCell, rnnTanhCell } from './rnn-cells.js';
import { tensorOps } from './rnn.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

type Nonlinearity = 'tanh' | 'relu';

const cellSig = (layer: string, withNonlinearity: boolean): LayerSignature => ({
  layer, required: 2,
  positional: [{ name: 'inputSize', kind: 'int' }, { name: 'hiddenSize', kind: 'int' }, { name: 'bias', kind: 'bool' },
    ...(withNonlinearity ? [{ name: 'nonlinearity', kind: { oneOf: ['tanh', 'relu'] } } as const] : [])],
});
const SIGS = new Map([['RNNCell', cellSig('RNNCell', true)], ['LSTMCell', cellSig('LSTMCell', false)], ['GRUCell', cellSig('GRUCell', false)]]);

export interface RNNCellOptions { bias?: boolean; nonlinearity?: Nonlinearity }
type CellArgs = [inputSize: number, hiddenSize: number, opts?: RNNCellOptions] | [opts: RNNCellOptions & { inputSize: number; hiddenSize: number }]
  | [inputSize: number, hiddenSize: number, bias: boolean, nonlinearity?: Nonlinearity];


/** Shared logic of the cells (PyTorch's RNNCellBase). */
abstract class RNNCellBase extends Module {
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly bias: boolean;
  weight_ih: Tensor;
  weight_hh: Tensor;
  bias_ih: Tensor | null;
  bias_hh: Tensor | null;
  constructor(protected readonly kind: string, gates: number, args: readonly unknown[]) {
    super();
    const sig = SIGS.get(kind);
    if (!sig) throw new Error(`${kind}: internal error: no constructor signature`);
    const a = bindLayerArgs<RNNCellOptions & { inputSize: number; hiddenSize: number }>(sig, args);
    this.inputSize = checkSize(kind, 'inputSize', a.inputSize);
    this.hiddenSize = checkSize(kind, 'hiddenSize', a.hiddenSize, 1);
    this.bias = a.bias ?? true;
    this.weight_ih = new Parameter(zeros([gates * this.hiddenSize, this.inputSize]));
    this.weight_hh = new Parameter(zeros([gates * this.hiddenSize, this.hiddenSize]));
    this.bias_ih = this.bias ? new Parameter(zeros([gates * this.hiddenSize])) : null;
    this.bias_hh = this.bias ? new Parameter(zeros([gates * this.hiddenSize])) : null;
    this.resetParameters();
  }
  /** Every weight and bias U(±1/√hiddenSize), as PyTorch. */
  resetParameters(): void {
    const k = 1 / Math.sqrt(this.hiddenSize);
    for (const p of this.parameters()) uniform_(p, -k, k);
  }
  /** Input as [B, inputSize] (unbatched [inputSize] gets a batch dim); returns it and whether batched. */
  protected prepare(x: Tensor): [Tensor, boolean] {
    if ((x.ndim !== 1 && x.ndim !== 2) || x.shape[x.ndim - 1] !== this.inputSize) {
      throw new Error(`${this.kind}: expected input [batch, ${this.inputSize}] or [${this.inputSize}], got shape ${fmtShape(x.shape)}`);
    }
    return x.ndim === 2 ? [x, true] : [x.unsqueeze(0), false];
  }
  /** A given state as [B, H] (checked), or zeros. */
  protected state(what: string, s: Tensor | null | undefined, batched: boolean, B: number): Tensor {
    if (s === null || s === undefined) return expand(zeros([]), [B, this.hiddenSize]);
    const want = batched ? [B, this.hiddenSize] : [this.hiddenSize];
    if (s.ndim !== want.length || s.shape.some((d, i) => d !== want[i])) {
      throw new Error(`${this.kind}: expected ${what} of shape ${fmtShape(want)}, got ${fmtShape(s.shape)}`);
    }
    return batched ? s : s.unsqueeze(0);
  }
  override extraRepr(): string { return `${this.inputSize}, ${this.hiddenSize}${this.bias ? '' : ', bias=False'}`; }
}

/** h' = act(W_ih x + b_ih + W_hh h + b_hh), act tanh (default) or relu. @example new nn.RNNCell(10, 20) */
export class RNNCell extends RNNCellBase {
  readonly nonlinearity: Nonlinearity;
  constructor(...args: CellArgs) {
    super('RNNCell', 1, args);
    this.nonlinearity = bindLayerArgs<RNNCellOptions>(SIGS.get('RNNCell') as LayerSignature, args).nonlinearity ?? 'tanh';
  }
  forward(input: Tensor, hx?: Tensor | null): Tensor {
    const [x, batched] = this.prepare(input);
    const h = this.state('hx', hx, batched, x.shape[0]);
    const cell = this.nonlinearity === 'tanh' ? rnnTanhCell : rnnReluCell;
    const [out] = cell(tensorOps, linear(x, this.weight_ih, this.bias_ih), h, null, this.weight_hh, this.bias_hh);
    return batched ? out : out.squeeze(0);
  }
  override extraRepr(): string { return `${super.extraRepr()}${this.nonlinearity === 'tanh' ? '' : `, nonlinearity='${this.nonlinearity}'`}`; }
}

/** One LSTM step: `forward(x, [h, c])` returns `[h', c']` (gates i, f, g, o). @example new nn.LSTMCell(10, 20) */
export class LSTMCell extends RNNCellBase {
  constructor(...args: CellArgs) { super('LSTMCell', 4, args); }
  forward(input: Tensor, hx?: [Tensor, Tensor] | null): [Tensor, Tensor] {
    const [x, batched] = this.prepare(input);
    const B = x.shape[0];
    const h = this.state('h', hx?.[0], batched, B), c = this.state('c', hx?.[1], batched, B);
    const [h2, c2] = lstmCell(tensorOps, linear(x, this.weight_ih, this.bias_ih), h, c, this.weight_hh, this.bias_hh);
    if (!c2) throw new Error('LSTMCell: internal error: no cell state');
    return batched ? [h2, c2] : [h2.squeeze(0), c2.squeeze(0)];
  }
}

/** One GRU step: `forward(x, h)` returns h' (gates r, z, n). @example new nn.GRUCell(10, 20) */
export class GRUCell extends RNNCellBase {
  constructor(...args: CellArgs) { super('GRUCell', 3, args); }
  forward(input: Tensor, hx?: Tensor | null): Tensor {
    const [x, batched] = this.prepare(input);
    const h = this.state('hx', hx, batched, x.shape[0]);
    const [h2] = gruCell(tensorOps, linear(x, this.weight_ih, this.bias_ih), h, null, this.weight_hh, this.bias_hh);
    return batched ? h2 : h2.squeeze(0);
  }
}
