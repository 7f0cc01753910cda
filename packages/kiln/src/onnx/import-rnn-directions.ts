// ONNX recurrent ops (LSTM, GRU) over their directions: `forward`, `reverse` (time flipped in
// and out) and `bidirectional` (both, Y concatenated on the direction axis). Each direction gets
// its slice of W, R, B and the initial states; `one` runs one direction forward in time.
// Invariant: outputs are ONNX's: Y [T, D, B, H], then one [D, B, H] per state.

import type { Value } from '@kiln/ir-spec';
import type { Attrs, ImportContext } from './import-ops.js';
import { OnnxImportError, runVal, type IVal } from './import-values.js';

/** One direction's inputs: X, W, R, B (or null) and the initial states (or null), each for D = 1. */
export type OneDirection = (x: Value, w: Value, r: Value, bias: Value | null, states: (Value | null)[]) => Value[];

export function overDirections(ctx: ImportContext, ins: readonly (IVal | null)[], a: Attrs, stateInputs: readonly number[], one: OneDirection): IVal[] {
  const direction = a.string('direction', 'forward');
  if (!['forward', 'reverse', 'bidirectional'].includes(direction)) throw new OnnxImportError(`${ctx.where}: direction '${direction}' is not supported`);
  const b = ctx.b;
  const dirs = direction === 'bidirectional' ? ['forward', 'reverse'] : [direction];
  const pick = (v: IVal | null, d: number) => (v ? (dirs.length === 1 ? ctx.value(v) : b.op1('slice', [ctx.value(v)], { dim: 0, start: d, end: d + 1, step: 1 })) : null);
  const X = ctx.value(ins[0]!);
  const outs = dirs.map((dir, d) => {
    const reverse = dir === 'reverse';
    const x = reverse ? b.op1('flip', [X], { dims: [0] }) : X;
    const res = one(x, pick(ins[1], d)!, pick(ins[2], d)!, pick(ins[3], d), stateInputs.map((i) => pick(ins[i], d)));
    return reverse ? [b.op1('flip', [res[0]], { dims: [0] }), ...res.slice(1)] : res;
  });
  if (outs.length === 1) return outs[0].map(runVal);
  return outs[0].map((_, k) => runVal(b.op1('cat', outs.map((o) => o[k]), { dim: k === 0 ? 1 : 0 })));
}
