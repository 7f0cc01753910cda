// An LSTM/GRU/RNN layer as an IR graph whose time steps are one `loop` region over the sequence
// length: how a trace records the layer when the sequence length is a dynamic axis (the eager
// run unrolls the steps, so their number would be fixed). The graph's inputs are the layer's
// [T, B, F] input and its [L·D, B, H] initial states; T and B are the graph's own symbols, which
// inlining replaces by the caller's dims. Invariant: the graph computes exactly what
// RNNBase.steps computes (the same cells, rnn-cells.ts; the same layer and direction order;
// the outputs [T, B, D·H], hN and, for LSTM, cN).

import { GraphBuilder, tensorType, type Graph, type TypedArray, type Value } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { cellOf, type CellOps, type RecurrentKind } from './rnn-cells.js';

/** The layer as rnn-graph needs it. */
export interface RecurrentSpec {
  readonly kind: RecurrentKind;
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly bias: boolean;
  readonly bidirectional: boolean;
  /** Dropout between stacked layers (0 unless training). */
  readonly dropout: number;
  /** The parameter `name` (`weight_ih_l0`, `bias_hh_l1_reverse`, ...). */
  param(name: string): Tensor;
}

// Distinctive names: inlining substitutes them textually inside the caller's dims.
const T = 'kiln_rnn_T', B = 'kiln_rnn_B';

/**
 * The layer's graph: inputs `input` [T, B, F], `h0` and (LSTM) `c0` [L·D, B, H]; outputs
 * `output`, `h_n` and (LSTM) `c_n`; parameters under the layer's own names.
 */
export function recurrentGraph(spec: RecurrentSpec): Graph {
  const { kind, hiddenSize: H, numLayers } = spec;
  const dirs = spec.bidirectional ? 2 : 1;
  const { cell, gates } = cellOf(kind);
  const b = new GraphBuilder(kind);
  const x = b.input('input', tensorType('float32', [T, B, spec.inputSize]));
  const h0 = b.input('h0', tensorType('float32', [numLayers * dirs, B, H]));
  const c0 = kind === 'LSTM' ? b.input('c0', tensorType('float32', [numLayers * dirs, B, H])) : null;
  const params = new Map<string, Value>();
  const param = (name: string): Value => {
    let v = params.get(name);
    if (!v) {
      const t = spec.param(name);
      v = b.param(name, { dtype: t.dtype, shape: [...t.shape], data: t.data.slice(0, t.numel()) as TypedArray });
      params.set(name, v);
    }
    return v;
  };
  const op = (name: string, inputs: (Value | null)[], attrs: Record<string, unknown> = {}) => b.op(name, inputs, attrs)[0];
  const ops: CellOps<Value> = {
    linear: (v, w, bias) => op('linear', [v, w, bias]),
    add: (p, q) => op('add', [p, q]),
    sub: (p, q) => op('sub', [p, q]),
    mul: (p, q) => op('mul', [p, q]),
    sigmoid: (p) => op('sigmoid', [p]),
    tanh: (p) => op('tanh', [p]),
    relu: (p) => op('relu', [p]),
    chunk: (v, n) => Array.from({ length: n }, (_, k) => op('slice', [v], { dim: 1, start: k * H, end: (k + 1) * H, step: 1 })),
  };
  /** Row k of a [L·D, B, H] state as [B, H]. */
  const row = (s: Value, k: number) => op('reshape', [op('slice', [s], { dim: 0, start: k, end: k + 1, step: 1 })], { shape: [B, H] });
  const trips = op('dim', [x], { index: 0 });
  const lastStep = dirs === 2 ? op('scalar_op', [trips, b.scalar(1, 'int32')], { fn: 'sub' }) : null;
  const hN: Value[] = [], cN: Value[] = [];
  let input = x;
  for (let layer = 0; layer < numLayers; layer++) {
    const outs: Value[] = [];
    for (let d = 0; d < dirs; d++) {
      const sfx = `_l${layer}${d === 1 ? '_reverse' : ''}`;
      // As eager: the input projection of all steps at once, then one step per trip.
      const xw = op('linear', [input, param(`weight_ih${sfx}`), spec.bias ? param(`bias_ih${sfx}`) : null]);
      const wHh = param(`weight_hh${sfx}`), bHh = spec.bias ? param(`bias_hh${sfx}`) : null;
      const k = layer * dirs + d;
      // The steps' outputs are written into zeros [T, B, H] at row t (index_add of one row).
      const acc = op('expand', [b.literal(0, 'float32')], { shape: [T, B, H] });
      const init = c0 ? [row(h0, k), row(c0, k), acc] : [row(h0, k), acc];
      const final = b.loop(trips, null, init, (i, carried) => {
        const [h, c, out] = c0 ? carried : [carried[0], null, carried[1]];
        const t = lastStep && d === 1 ? op('scalar_op', [lastStep, i], { fn: 'sub' }) : i;
        const index = op('reshape', [op('to_tensor', [t], { dtype: 'int32' })], { shape: [1] });
        const xt = op('reshape', [op('index_select', [xw, index], { dim: 0 })], { shape: [B, gates * H] });
        const [h2, c2] = cell(ops, xt, h, c, wHh, bHh);
        const out2 = op('index_add', [out, index, op('reshape', [h2], { shape: [1, B, H] })], { dim: 0 });
        return { next: c2 ? [h2, c2, out2] : [h2, out2] };
      });
      hN.push(final[0]);
      if (c0) cN.push(final[1]);
      outs.push(final[final.length - 1]);
    }
    input = dirs === 2 ? op('cat', outs, { dim: 2 }) : outs[0];
    if (spec.dropout > 0 && layer < numLayers - 1) input = op('dropout', [input], { p: spec.dropout, training: true });
  }
  const stack = (vs: Value[]) => op('cat', vs.map((v) => op('reshape', [v], { shape: [1, B, H] })), { dim: 0 });
  b.output('output', input);
  b.output('h_n', stack(hN));
  if (c0) b.output('c_n', stack(cN));
  return b.build();
}
