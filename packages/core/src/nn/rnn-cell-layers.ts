// Single-step recurrent cells (RNNCell, LSTMCell, GRUCell) and the Elman RNN layer (tanh or relu).
// Invariant: parameter names, shapes, registration order, gate order (rnn-cells.ts: LSTM i,f,g,o;
// GRU r,z,n) and input/state layouts are PyTorch's, and the LSTM/GRU cells compute the same
// step functions as nn.LSTM/nn.GRU, so PyTorch state dicts load and results match. The RNN
// layer unrolls its steps eagerly (a trace records them unrolled, for a fixed sequence length).

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { zeros } from '../creation.js';
import { linear } from '../ops/linalg.js';
import { cat, expand, stack } from '../ops/shape.js';
import * as F from '../functional/index.js';
import { Module, Parameter, pyBool, pyFloat } from './module.js';
import { uniform_ } from './init.js';
import { checkSize } from './linear.js';
import { gruCell, lstmCell, type CellOps } from './rnn-cells.js';
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

const tensorOps: CellOps<Tensor> = {
  linear: (x, w, b) => linear(x, w, b),
  add: (a, b) => a.add(b),
  sub: (a, b) => a.sub(b),
  mul: (a, b) => a.mul(b),
  sigmoid: (a) => a.sigmoid(),
  tanh: (a) => a.tanh(),
  chunk: (x, n) => x.chunk(n, -1),
};

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
    const pre = linear(x, this.weight_ih, this.bias_ih).add(linear(h, this.weight_hh, this.bias_hh));
    const out = this.nonlinearity === 'tanh' ? pre.tanh() : pre.relu();
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

const RNN_SIG: LayerSignature = {
  layer: 'RNN', required: 2,
  positional: [{ name: 'inputSize', kind: 'int' }, { name: 'hiddenSize', kind: 'int' }, { name: 'numLayers', kind: 'int' },
    { name: 'nonlinearity', kind: { oneOf: ['tanh', 'relu'] } }, { name: 'bias', kind: 'bool' }, { name: 'batchFirst', kind: 'bool' },
    { name: 'dropout', kind: 'number' }, { name: 'bidirectional', kind: 'bool' }],
};

export interface ElmanRNNOptions {
  numLayers?: number;
  /** 'tanh' (default) or 'relu'. */
  nonlinearity?: Nonlinearity;
  bias?: boolean;
  batchFirst?: boolean;
  dropout?: number;
  bidirectional?: boolean;
}

/**
 * Elman RNN over a sequence: h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh). Input
 * [T, B, inputSize] ([B, T, …] with batchFirst, or unbatched [T, inputSize]); `forward` returns
 * `[output [T, B, D·H], hN [numLayers·D, B, H]]`.
 * @example const rnn = new nn.RNN(10, 20, { numLayers: 2 }); const [out, h] = rnn.forward(randn([5, 3, 10]));
 */
export class RNN extends Module {
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly nonlinearity: Nonlinearity;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;
  constructor(...args: [inputSize: number, hiddenSize: number, opts?: ElmanRNNOptions] | [opts: ElmanRNNOptions & { inputSize: number; hiddenSize: number }]
    | [inputSize: number, hiddenSize: number, numLayers: number, nonlinearity?: Nonlinearity, bias?: boolean, batchFirst?: boolean, dropout?: number, bidirectional?: boolean]) {
    super();
    const a = bindLayerArgs<ElmanRNNOptions & { inputSize: number; hiddenSize: number }>(RNN_SIG, args);
    this.inputSize = checkSize('RNN', 'inputSize', a.inputSize);
    this.hiddenSize = checkSize('RNN', 'hiddenSize', a.hiddenSize, 1);
    this.numLayers = checkSize('RNN', 'numLayers', a.numLayers ?? 1, 1);
    this.nonlinearity = a.nonlinearity ?? 'tanh';
    this.bias = a.bias ?? true;
    this.batchFirst = a.batchFirst ?? false;
    this.dropout = a.dropout ?? 0;
    if (!(this.dropout >= 0 && this.dropout <= 1)) throw new Error(`RNN: dropout should be a number in [0, 1], got ${this.dropout}`);
    this.bidirectional = a.bidirectional ?? false;
    const dirs = this.bidirectional ? 2 : 1, H = this.hiddenSize;
    for (let layer = 0; layer < this.numLayers; layer++) {
      for (let d = 0; d < dirs; d++) {
        const sfx = `_l${layer}${d === 1 ? '_reverse' : ''}`;
        const inSize = layer === 0 ? this.inputSize : H * dirs;
        this.registerParameter(`weight_ih${sfx}`, new Parameter(zeros([H, inSize])));
        this.registerParameter(`weight_hh${sfx}`, new Parameter(zeros([H, H])));
        if (this.bias) {
          this.registerParameter(`bias_ih${sfx}`, new Parameter(zeros([H])));
          this.registerParameter(`bias_hh${sfx}`, new Parameter(zeros([H])));
        }
      }
    }
    this.resetParameters();
  }
  resetParameters(): void {
    const k = 1 / Math.sqrt(this.hiddenSize);
    for (const p of this.parameters()) uniform_(p, -k, k);
  }
  forward(input: Tensor, h0?: Tensor | null): [Tensor, Tensor] {
    if (input.ndim !== 2 && input.ndim !== 3) throw new Error(`RNN: expected a 2-D (unbatched) or 3-D input, got shape ${fmtShape(input.shape)}`);
    const batched = input.ndim === 3;
    let x = batched ? (this.batchFirst ? input.transpose(0, 1) : input) : input.unsqueeze(1);
    if (x.shape[2] !== this.inputSize) throw new Error(`RNN: input of shape ${fmtShape(input.shape)} has ${x.shape[2]} features, expected inputSize=${this.inputSize}`);
    const [T, B] = x.shape, dirs = this.bidirectional ? 2 : 1, H = this.hiddenSize, rows = this.numLayers * dirs;
    let h0b: Tensor;
    if (h0 === null || h0 === undefined) h0b = expand(zeros([]), [rows, B, H]);
    else {
      const want = batched ? [rows, B, H] : [rows, H];
      if (h0.ndim !== want.length || h0.shape.some((d, i) => d !== want[i])) throw new Error(`RNN: expected h0 of shape ${fmtShape(want)}, got ${fmtShape(h0.shape)}`);
      h0b = batched ? h0 : h0.unsqueeze(1);
    }
    const hs = h0b.unbind(0), hN: Tensor[] = [];
    const act = (t: Tensor) => (this.nonlinearity === 'tanh' ? t.tanh() : t.relu());
    const bias = (name: string) => (this.bias ? this.getParameter(name) : null);
    for (let layer = 0; layer < this.numLayers; layer++) {
      const outs: Tensor[] = [];
      for (let d = 0; d < dirs; d++) {
        const sfx = `_l${layer}${d === 1 ? '_reverse' : ''}`;
        const xw = linear(x, this.getParameter(`weight_ih${sfx}`), bias(`bias_ih${sfx}`)).unbind(0);
        const wHh = this.getParameter(`weight_hh${sfx}`), bHh = bias(`bias_hh${sfx}`);
        let h = hs[layer * dirs + d];
        const steps = new Array<Tensor>(T);
        for (let s = 0; s < T; s++) {
          const t = d === 1 ? T - 1 - s : s;
          h = act(xw[t].add(linear(h, wHh, bHh)));
          steps[t] = h;
        }
        hN.push(h);
        outs.push(stack(steps, 0));
      }
      x = dirs === 2 ? cat(outs, 2) : outs[0];
      if (this.dropout > 0 && this.training && layer < this.numLayers - 1) x = F.dropout(x, { p: this.dropout, training: true });
    }
    const hOut = stack(hN, 0);
    const out = !batched ? x.squeeze(1) : this.batchFirst ? x.transpose(0, 1) : x;
    return [out, batched ? hOut : hOut.squeeze(1)];
  }
  override extraRepr(): string {
    let s = `${this.inputSize}, ${this.hiddenSize}`;
    if (this.numLayers !== 1) s += `, num_layers=${this.numLayers}`;
    if (this.nonlinearity !== 'tanh') s += `, nonlinearity='${this.nonlinearity}'`;
    if (!this.bias) s += ', bias=False';
    if (this.batchFirst) s += `, batch_first=${pyBool(this.batchFirst)}`;
    if (this.dropout !== 0) s += `, dropout=${pyFloat(this.dropout)}`;
    if (this.bidirectional) s += ', bidirectional=True';
    return s;
  }
}
