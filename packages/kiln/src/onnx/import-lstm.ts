// ONNX LSTM (forward, reverse or bidirectional; default activations) → a Kiln loop over time, as Kiln's own
// nn.LSTM traces: the input projection for every step at once, then per step the recurrent
// projection, the gates (ONNX order i, o, f, c) and the new state; Y collects h per step.
// Invariant: Y [T,1,B,H], Y_h and Y_c [1,B,H] equal ONNX's for every T ≥ 1 and batch B.

import type { TensorIRType, Value } from '@kiln/ir-spec';
import type { NodeProto } from './proto.js';
import type { Attrs, ImportContext } from './import-ops.js';
import { OnnxImportError, type IVal } from './import-values.js';
import { overDirections } from './import-rnn-directions.js';

export function lstm(ctx: ImportContext, node: NodeProto, ins: readonly (IVal | null)[], a: Attrs): IVal[] {
  if (a.int('layout', 0) !== 0) throw new OnnxImportError(`${ctx.where}: layout=1 is not supported`);
  if (a.has('clip') || a.has('activations') || a.int('input_forget', 0)) throw new OnnxImportError(`${ctx.where}: clip, custom activations and input_forget are not supported`);
  if (ins[4]) throw new OnnxImportError(`${ctx.where}: sequence_lens is not supported (pass sequences of one length)`);
  if (ins[7]) throw new OnnxImportError(`${ctx.where}: peephole weights (P) are not supported`);
  void node;
  const b = ctx.b;
  const H = a.int('hidden_size');
  return overDirections(ctx, ins, a, [5, 6], (X, w, r, bias8, [h0, c0]) => {
    const [T, B, I] = (X.type as TensorIRType).shape;
    const W = b.op1('reshape', [w], { shape: [4 * H, I] });
    const R = b.op1('reshape', [r], { shape: [4 * H, H] });
    let bias: Value | null = null;
    if (bias8) {
      const B8 = b.op1('reshape', [bias8], { shape: [8 * H] });
      bias = b.op1('add', [b.op1('slice', [B8], { dim: 0, start: 0, end: 4 * H, step: 1 }), b.op1('slice', [B8], { dim: 0, start: 4 * H, end: 8 * H, step: 1 })]);
    }
    const zeros = (shape: (number | string)[]) => b.op1('expand', [b.literal(0)], { shape });
    const state = (v: Value | null) => (v ? b.op1('reshape', [v], { shape: [B, H] }) : zeros([B, H]));
    const gx = b.op1('linear', [X, W, bias]);
    const steps = b.op1('dim', [X], { index: 0 });
    const [hT, cT, Y] = b.loop(steps, b.scalar(true, 'bool'), [state(h0), state(c0), zeros([T, B, H])], (i, [h, c, y]) => {
      const idx = b.op1('reshape', [b.op1('to_tensor', [i], { dtype: 'int32' })], { shape: [1] });
      const xt = b.op1('reshape', [b.op1('index_select', [gx, idx], { dim: 0 })], { shape: [B, 4 * H] });
      const g = b.op1('add', [xt, b.op1('linear', [h, R, null])]);
      const gate = (k: number) => b.op1('slice', [g], { dim: 1, start: k * H, end: (k + 1) * H, step: 1 });
      const [gi, go, gf, gc] = [0, 1, 2, 3].map(gate);
      const c2 = b.op1('add', [b.op1('mul', [b.op1('sigmoid', [gf]), c]), b.op1('mul', [b.op1('sigmoid', [gi]), b.op1('tanh', [gc])])]);
      const h2 = b.op1('mul', [b.op1('sigmoid', [go]), b.op1('tanh', [c2])]);
      const y2 = b.op1('index_add', [y, idx, b.op1('reshape', [h2], { shape: [1, B, H] })], { dim: 0 });
      return { next: [h2, c2, y2] };
    });
    return [
      b.op1('reshape', [Y], { shape: [T, 1, B, H] }),
      b.op1('reshape', [hT], { shape: [1, B, H] }),
      b.op1('reshape', [cT], { shape: [1, B, H] }),
    ];
  });
}
