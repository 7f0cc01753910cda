// Recurrent layers: LSTM, GRU and the Elman RNN (tanh or relu), written over primitive ops (linear, sigmoid, tanh, chunk,
// stack, cat) so autograd, tracing and double backward come for free. Invariant: parameter
// names, shapes, registration order, gate order (LSTM i,f,g,o; GRU r,z,n) and the layouts of
// inputs, outputs and states are PyTorch's, so its state dicts load and its results match.
// Under a trace that asks for it (a dynamic sequence length), a layer records itself as one
// graph call with a loop over T (rnn-graph.ts), computed by the same cells (rnn-cells.ts).

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { zeros } from '../creation.js';
import { linear } from '../ops/linalg.js';
import { cat, expand, stack } from '../ops/shape.js';
import * as F from '../functional/index.js';
import { Module, Parameter, pyBool, pyFloat } from './module.js';
import { uniform_ } from './init.js';
import { checkSize } from './linear.js';
import { cellOf, type CellOps, type RecurrentKind } from './rnn-cells.js';
import { recurrentGraph, type RecurrentSpec } from './rnn-graph.js';
import { traceHooks } from '../trace/hooks.js';
import { bindLayerArgs, type LayerSignature } from './layer-args.js';

const rnnSig = (layer: string): LayerSignature => ({
  layer, required: 2,
  positional: [{ name: 'inputSize', kind: 'int' }, { name: 'hiddenSize', kind: 'int' }, { name: 'numLayers', kind: 'int' }, { name: 'bias', kind: 'bool' },
    { name: 'batchFirst', kind: 'bool' }, { name: 'dropout', kind: 'number' }, { name: 'bidirectional', kind: 'bool' }],
});
const ELMAN_SIG: LayerSignature = {
  layer: 'RNN', required: 2,
  positional: [{ name: 'inputSize', kind: 'int' }, { name: 'hiddenSize', kind: 'int' }, { name: 'numLayers', kind: 'int' },
    { name: 'nonlinearity', kind: { oneOf: ['tanh', 'relu'] } }, { name: 'bias', kind: 'bool' }, { name: 'batchFirst', kind: 'bool' },
    { name: 'dropout', kind: 'number' }, { name: 'bidirectional', kind: 'bool' }],
};
const RNN_SIGS = new Map([['LSTM', rnnSig('LSTM')], ['GRU', rnnSig('GRU')], ['RNN', ELMAN_SIG]]);

/** LSTM/GRU constructor forms: PyTorch's positional order or names in a trailing options object. */
export type RNNArgs =
  | [inputSize: number, hiddenSize: number, opts?: RNNOptions]
  | [opts: RNNOptions & { inputSize: number; hiddenSize: number }]
  | [inputSize: number, hiddenSize: number, numLayers: number, bias?: boolean, batchFirst?: boolean, dropout?: number, bidirectional?: boolean];

export interface RNNOptions {
  /** Stacked layers (default 1); layer k > 0 reads layer k-1's output. */
  numLayers?: number;
  /** Use bias_ih/bias_hh (default true). */
  bias?: boolean;
  /** Input and output are [batch, seq, feature] instead of [seq, batch, feature]. */
  batchFirst?: boolean;
  /** Dropout on the outputs of every layer but the last, in training mode. */
  dropout?: number;
  /** Also run each layer from the end of the sequence and concatenate both outputs. */
  bidirectional?: boolean;
}

/** The cells' operations on eager tensors (the layers here and the single-step cells use them). */
export const tensorOps: CellOps<Tensor> = {
  linear: (x, w, b) => linear(x, w, b),
  add: (a, b) => a.add(b),
  sub: (a, b) => a.sub(b),
  mul: (a, b) => a.mul(b),
  sigmoid: (a) => a.sigmoid(),
  tanh: (a) => a.tanh(),
  relu: (a) => a.relu(),
  chunk: (x, n) => x.chunk(n, -1),
};

/** Shared logic of LSTM, GRU and RNN (PyTorch's RNNBase). */
abstract class RNNBase extends Module {
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;

  /** The step function: LSTM, GRU, or the Elman RNN's RNN_TANH / RNN_RELU. */
  private readonly kind: RecurrentKind;
  /** The class name as errors and reprs print it. */
  protected readonly layerName: 'LSTM' | 'GRU' | 'RNN';

  constructor(layer: 'LSTM' | 'GRU' | 'RNN', args: readonly unknown[]) {
    super();
    const sig = RNN_SIGS.get(layer);
    if (!sig) throw new Error(`${layer}: internal error: no constructor signature`);
    const opts = bindLayerArgs<RNNOptions & { inputSize: number; hiddenSize: number; nonlinearity?: 'tanh' | 'relu' }>(sig, args);
    this.layerName = layer;
    this.kind = layer === 'RNN' ? (opts.nonlinearity === 'relu' ? 'RNN_RELU' : 'RNN_TANH') : layer;
    const kind = layer;
    const { inputSize, hiddenSize } = opts;
    this.inputSize = checkSize(kind, 'inputSize', inputSize);
    this.hiddenSize = checkSize(kind, 'hiddenSize', hiddenSize, 1);
    this.numLayers = checkSize(kind, 'numLayers', opts.numLayers ?? 1, 1);
    this.bias = opts.bias ?? true;
    this.batchFirst = opts.batchFirst ?? false;
    this.dropout = opts.dropout ?? 0;
    if (!(this.dropout >= 0 && this.dropout <= 1)) throw new Error(`${kind}: dropout should be a number in [0, 1], got ${this.dropout}`);
    this.bidirectional = opts.bidirectional ?? false;
    if (this.dropout > 0 && this.numLayers === 1) {
      // As PyTorch: not an error, but the option does nothing.
      console.warn(`${kind}: dropout=${this.dropout} has no effect with numLayers=1 (dropout is applied between stacked layers only)`);
    }
    const { gates } = cellOf(this.kind);
    const dirs = this.bidirectional ? 2 : 1;
    // PyTorch's order: per layer, per direction: weight_ih, weight_hh, bias_ih, bias_hh.
    for (let layer = 0; layer < this.numLayers; layer++) {
      for (let d = 0; d < dirs; d++) {
        const sfx = `_l${layer}${d === 1 ? '_reverse' : ''}`;
        const inSize = layer === 0 ? inputSize : hiddenSize * dirs;
        this.registerParameter(`weight_ih${sfx}`, new Parameter(zeros([gates * hiddenSize, inSize])));
        this.registerParameter(`weight_hh${sfx}`, new Parameter(zeros([gates * hiddenSize, hiddenSize])));
        if (this.bias) {
          this.registerParameter(`bias_ih${sfx}`, new Parameter(zeros([gates * hiddenSize])));
          this.registerParameter(`bias_hh${sfx}`, new Parameter(zeros([gates * hiddenSize])));
        }
      }
    }
    this.resetParameters();
  }

  /** Every weight and bias U(±1/√hiddenSize), as PyTorch. */
  resetParameters(): void {
    const k = 1 / Math.sqrt(this.hiddenSize);
    for (const p of this.parameters()) uniform_(p, -k, k);
  }

  /** The parameter named `name` (looked up each call, so a reassigned field is honoured). */
  #param(name: string): Tensor { return this.getParameter(name); }
  #maybeParam(name: string): Tensor | null { return this.bias ? this.getParameter(name) : null; }

  /**
   * Runs all layers. `x` is [T, B, F]; `h0`/`c0` are [L·D, B, H]. Returns the last layer's
   * output [T, B, D·H] and the final states [L·D, B, H].
   */
  protected run(x: Tensor, h0: Tensor, c0: Tensor | null): [Tensor, Tensor, Tensor | null] {
    // A trace that asks for it (its sequence length is dynamic) records the layer as one graph
    // call with a `loop` region over T (rnn-graph.ts) instead of the unrolled steps of this run.
    const listener = traceHooks.listener;
    if (listener?.recurrentLoops && listener.onGraphCall && listener.suspend) {
      const [out, h, c] = listener.suspend(() => this.steps(x, h0, c0));
      listener.onGraphCall(recurrentGraph(this.graphSpec()), c0 ? [x, h0, c0] : [x, h0], c ? [out, h, c] : [out, h]);
      return [out, h, c];
    }
    return this.steps(x, h0, c0);
  }

  /** What rnn-graph.ts needs to build this layer's recurrent graph (parameters as they are now). */
  private graphSpec(): RecurrentSpec {
    return {
      kind: this.kind, inputSize: this.inputSize, hiddenSize: this.hiddenSize, numLayers: this.numLayers, bias: this.bias,
      bidirectional: this.bidirectional, dropout: this.training ? this.dropout : 0,
      param: (name) => this.#param(name),
    };
  }

  private steps(x: Tensor, h0: Tensor, c0: Tensor | null): [Tensor, Tensor, Tensor | null] {
    const { cell } = cellOf(this.kind);
    const dirs = this.bidirectional ? 2 : 1;
    const T = x.shape[0];
    const hs = h0.unbind(0), cs = c0 ? c0.unbind(0) : null;
    const hN: Tensor[] = [], cN: Tensor[] = [];
    let input = x;
    for (let layer = 0; layer < this.numLayers; layer++) {
      const outs: Tensor[] = [];
      for (let d = 0; d < dirs; d++) {
        const sfx = `_l${layer}${d === 1 ? '_reverse' : ''}`;
        // The input projection of all time steps at once: one [T·B, F] × [F, G·H] product.
        const xw = linear(input, this.#param(`weight_ih${sfx}`), this.#maybeParam(`bias_ih${sfx}`)).unbind(0);
        const wHh = this.#param(`weight_hh${sfx}`), bHh = this.#maybeParam(`bias_hh${sfx}`);
        let h = hs[layer * dirs + d], c = cs ? cs[layer * dirs + d] : null;
        const steps = new Array<Tensor>(T);
        for (let s = 0; s < T; s++) {
          const t = d === 1 ? T - 1 - s : s;
          [h, c] = cell(tensorOps, xw[t], h, c, wHh, bHh);
          steps[t] = h;
        }
        hN.push(h);
        if (c) cN.push(c);
        outs.push(stack(steps, 0));
      }
      input = dirs === 2 ? cat(outs, 2) : outs[0];
      if (this.dropout > 0 && this.training && layer < this.numLayers - 1) {
        input = F.dropout(input, { p: this.dropout, training: true });
      }
    }
    return [input, stack(hN, 0), c0 ? stack(cN, 0) : null];
  }

  /** Normalises the input layout to [T, B, F]; returns it and whether it was batched. */
  protected prepareInput(input: Tensor): [Tensor, boolean] {
    if (input.ndim !== 2 && input.ndim !== 3) {
      throw new Error(`${this.layerName}: expected input to be 2-D (unbatched [seq, feature]) or 3-D, got shape ${fmtShape(input.shape)}`);
    }
    const batched = input.ndim === 3;
    let x = batched ? input : input.unsqueeze(1);
    if (batched && this.batchFirst) x = x.transpose(0, 1);
    if (x.shape[2] !== this.inputSize) {
      throw new Error(`${this.layerName}: input of shape ${fmtShape(input.shape)} has ${x.shape[2]} features, expected inputSize=${this.inputSize}`);
    }
    return [x, batched];
  }

  /** Checks a given initial state (and adds the batch dim for unbatched input), or makes zeros. */
  protected prepareState(what: string, s: Tensor | undefined | null, batched: boolean, batch: number): Tensor {
    const rows = this.numLayers * (this.bidirectional ? 2 : 1);
    // A dispatched expand of a 0-d zero rather than zeros([...]): a trace records the op, and the
    // generalizer turns `batch` into the dynamic batch symbol instead of baking a constant.
    if (s === undefined || s === null) return expand(zeros([]), [rows, batch, this.hiddenSize]);
    const want = batched ? [rows, batch, this.hiddenSize] : [rows, this.hiddenSize];
    if (s.ndim !== want.length || s.shape.some((d, i) => d !== want[i])) {
      throw new Error(`${this.layerName}: expected ${what} of shape ${fmtShape(want)}${batched ? '' : ' (unbatched input needs unbatched states)'}, got ${fmtShape(s.shape)}`);
    }
    return batched ? s : s.unsqueeze(1);
  }

  /** Output back to the caller's layout. */
  protected finishOutput(out: Tensor, batched: boolean): Tensor {
    if (!batched) return out.squeeze(1);
    return this.batchFirst ? out.transpose(0, 1) : out;
  }

  override extraRepr(): string {
    let s = `${this.inputSize}, ${this.hiddenSize}`;
    if (this.numLayers !== 1) s += `, num_layers=${this.numLayers}`;
    if (this.kind === 'RNN_RELU') s += ", nonlinearity='relu'";
    if (!this.bias) s += `, bias=${pyBool(this.bias)}`;
    if (this.batchFirst) s += `, batch_first=${pyBool(this.batchFirst)}`;
    if (this.dropout !== 0) s += `, dropout=${pyFloat(this.dropout)}`;
    if (this.bidirectional) s += `, bidirectional=${pyBool(this.bidirectional)}`;
    return s;
  }
}

/**
 * Long short-term memory over a sequence. Input [T, B, inputSize] ([B, T, …] with batchFirst, or
 * unbatched [T, inputSize]); `forward` returns `[output, [hN, cN]]` with output [T, B, D·H] and
 * states [numLayers·D, B, H] (D = 2 when bidirectional).
 * @example const lstm = new nn.LSTM(10, 20, { numLayers: 2 }); const [out, [h, c]] = lstm.forward(randn([5, 3, 10]));
 */
export class LSTM extends RNNBase {
  constructor(...args: RNNArgs) { super('LSTM', args); }
  forward(input: Tensor, state?: [Tensor, Tensor] | null): [Tensor, [Tensor, Tensor]] {
    const [x, batched] = this.prepareInput(input);
    const B = x.shape[1];
    if (state !== undefined && state !== null && (!Array.isArray(state) || state.length !== 2)) {
      throw new Error('LSTM: the state must be a pair [h0, c0]');
    }
    const h0 = this.prepareState('h0', state?.[0], batched, B);
    const c0 = this.prepareState('c0', state?.[1], batched, B);
    const [out, h, c] = this.run(x, h0, c0);
    if (!c) throw new Error('LSTM: internal error: no final cell state');
    return [this.finishOutput(out, batched), batched ? [h, c] : [h.squeeze(1), c.squeeze(1)]];
  }
}

/**
 * Gated recurrent unit over a sequence (layouts as LSTM); `forward` returns `[output, hN]`.
 * @example const gru = new nn.GRU(10, 20, { batchFirst: true }); const [out, h] = gru.forward(randn([3, 5, 10]));
 */
export class GRU extends RNNBase {
  constructor(...args: RNNArgs) { super('GRU', args); }
  forward(input: Tensor, h0?: Tensor | null): [Tensor, Tensor] {
    const [x, batched] = this.prepareInput(input);
    const h = this.prepareState('h0', h0, batched, x.shape[1]);
    const [out, hN] = this.run(x, h, null);
    return [this.finishOutput(out, batched), batched ? hN : hN.squeeze(1)];
  }
}

/** Elman RNN constructor forms: PyTorch's positional order (nonlinearity 4th) or names in a trailing options object. */
export type ElmanRNNArgs =
  | [inputSize: number, hiddenSize: number, opts?: ElmanRNNOptions]
  | [opts: ElmanRNNOptions & { inputSize: number; hiddenSize: number }]
  | [inputSize: number, hiddenSize: number, numLayers: number, nonlinearity?: 'tanh' | 'relu', bias?: boolean, batchFirst?: boolean, dropout?: number, bidirectional?: boolean];

export interface ElmanRNNOptions extends RNNOptions {
  /** 'tanh' (default) or 'relu'. */
  nonlinearity?: 'tanh' | 'relu';
}

/**
 * Elman RNN over a sequence: h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), act tanh or relu
 * (layouts as LSTM); `forward` returns `[output, hN]`. Traced with a dynamic sequence length it
 * records a loop over T, as LSTM and GRU.
 * @example const rnn = new nn.RNN(10, 20, { numLayers: 2, nonlinearity: 'relu' }); const [out, h] = rnn.forward(randn([5, 3, 10]));
 */
export class RNN extends RNNBase {
  readonly nonlinearity: 'tanh' | 'relu';
  constructor(...args: ElmanRNNArgs) {
    super('RNN', args);
    this.nonlinearity = bindLayerArgs<ElmanRNNOptions>(ELMAN_SIG, args).nonlinearity ?? 'tanh';
  }
  forward(input: Tensor, h0?: Tensor | null): [Tensor, Tensor] {
    const [x, batched] = this.prepareInput(input);
    const h = this.prepareState('h0', h0, batched, x.shape[1]);
    const [out, hN] = this.run(x, h, null);
    return [this.finishOutput(out, batched), batched ? hN : hN.squeeze(1)];
  }
}
