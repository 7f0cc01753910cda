// ONNX GRU (forward, reverse or bidirectional; default activations; linear_before_reset 0 or 1,
// PyTorch writes 1) → a Kiln loop over time: the input projection for every step at once, then per step the
// recurrent projection and the gates (ONNX order z, r, h). Y collects h per step.
// Invariant: Y [T,D,B,H] and Y_h [D,B,H] equal ONNX's for every T ≥ 1 and batch B.

import type { TensorIRType, Value } from '@kiln/ir-spec';
import type { Attrs, ImportContext } from './import-ops.js';
import { OnnxImportError, type IVal } from './import-values.js';
import { overDirections } from './import-rnn-directions.js';

export function gru(ctx: ImportContext, ins: readonly (IVal | null)[], a: Attrs): IVal[] {
  if (a.int('layout', 0) !== 0 || a.has('clip') || a.has('activations')) throw new OnnxImportError(`${ctx.where}: layout=1, clip and custom activations are not supported`);
  if (ins[4]) throw new OnnxImportError(`${ctx.where}: sequence_lens is not supported (pass sequences of one length)`);
  const beforeReset = a.int('linear_before_reset', 0) === 1;
  const b = ctx.b;
  const H = a.int('hidden_size');
  return overDirections(ctx, ins, a, [5], (X, w, r, bias6, [h0]) => {
    const [T, B, I] = (X.type as TensorIRType).shape;
    const W = b.op1('reshape', [w], { shape: [3 * H, I] });
    const R = b.op1('reshape', [r], { shape: [3 * H, H] });
    const part = (v: Value, k: number) => b.op1('slice', [v], { dim: 1, start: k * H, end: (k + 1) * H, step: 1 });
    let wb: Value | null = null, rb: Value | null = null;
    if (bias6) {
      const B6 = b.op1('reshape', [bias6], { shape: [6 * H] });
      wb = b.op1('slice', [B6], { dim: 0, start: 0, end: 3 * H, step: 1 });
      rb = b.op1('slice', [B6], { dim: 0, start: 3 * H, end: 6 * H, step: 1 });
    }
    const zeros = (shape: (number | string)[]) => b.op1('expand', [b.literal(0)], { shape });
    const gx = b.op1('linear', [X, W, wb]);
    const steps = b.op1('dim', [X], { index: 0 });
    const hInit = h0 ? b.op1('reshape', [h0], { shape: [B, H] }) : zeros([B, H]);
    const [hT, Y] = b.loop(steps, b.scalar(true, 'bool'), [hInit, zeros([T, B, H])], (i, [h, y]) => {
      const idx = b.op1('reshape', [b.op1('to_tensor', [i], { dtype: 'int32' })], { shape: [1] });
      const xt = b.op1('reshape', [b.op1('index_select', [gx, idx], { dim: 0 })], { shape: [B, 3 * H] });
      const hr = b.op1('linear', [h, R, rb]);  // [B, 3H]: the recurrent projections with their biases
      const z = b.op1('sigmoid', [b.op1('add', [part(xt, 0), part(hr, 0)])]);
      const rg = b.op1('sigmoid', [b.op1('add', [part(xt, 1), part(hr, 1)])]);
      let cand: Value;
      if (beforeReset) cand = b.op1('tanh', [b.op1('add', [part(xt, 2), b.op1('mul', [rg, part(hr, 2)])])]);
      else {
        const Rh = b.op1('slice', [R], { dim: 0, start: 2 * H, end: 3 * H, step: 1 });
        const rbh = rb ? b.op1('slice', [rb], { dim: 0, start: 2 * H, end: 3 * H, step: 1 }) : null;
        cand = b.op1('tanh', [b.op1('add', [part(xt, 2), b.op1('linear', [b.op1('mul', [rg, h]), Rh, rbh])])]);
      }
      const h2 = b.op1('add', [b.op1('mul', [b.op1('sub', [b.literal(1), z]), cand]), b.op1('mul', [z, h])]);
      const y2 = b.op1('index_add', [y, idx, b.op1('reshape', [h2], { shape: [1, B, H] })], { dim: 0 });
      return { next: [h2, y2] };
    });
    return [b.op1('reshape', [Y], { shape: [T, 1, B, H] }), b.op1('reshape', [hT], { shape: [1, B, H] })];
  });
}
