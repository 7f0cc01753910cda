// One step of a sequence in a run-time loop: `x.slice(dim, t, t + 1)` where `t` is a run-time
// number (a loop index up to a symbolic size such as x.shape[1]). A slice's bounds are
// attributes fixed when compiling, but this one always has length 1, so it is lowered as
// `index_select(x, [t])` along `dim`, which has the same value and a static type. Invariant:
// only that exact form is taken (end written as `t + 1` or `1 + t` with the same identifier `t`,
// step 1 or omitted, a static dim); anything else is recorded as usual. A `t` outside
// 0..size-1, where slice would give an empty tensor, fails the run (index_select's range check)
// instead of giving a different value.

import type { Node as TsNode, CallExpression } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { TensorIRType, Value } from '@kiln/ir-spec';
import type { ScriptContext } from './context.js';
import type { SValue } from './values.js';

/** `x.slice(dim, t, t + 1)` with a run-time `t` as an index_select, or undefined when the call is not of that form. */
export function stepSlice(ctx: ScriptContext, x: Value, args: readonly SValue[], at: CallExpression): SValue | undefined {
  const [dimArg, start, end, step] = args;
  if (args.length < 3 || args.length > 4 || start.k !== 'scalar' || end.k !== 'scalar') return undefined;
  if (dimArg.k !== 'static' || typeof dimArg.value !== 'number' || !Number.isInteger(dimArg.value)) return undefined;
  if (step && !(step.k === 'static' && step.value === 1)) return undefined;
  if (!isStartPlusOne(at.getArguments())) return undefined;
  const rank = (x.type as TensorIRType).shape.length;
  const dim = dimArg.value < 0 ? dimArg.value + rank : dimArg.value;
  if (dim < 0 || dim >= rank) return undefined;
  const t = start.v.type.kind === 'scalar' && start.v.type.dtype === 'int32' ? start.v : undefined;
  if (!t) return undefined;
  const index = ctx.b.op('reshape', [ctx.b.op('to_tensor', [t], { dtype: 'int32' })[0]], { shape: [1] })[0];
  return { k: 'tensor', v: ctx.b.op('index_select', [x, index], { dim })[0] };
}

/** Whether the call's third argument is its second plus 1 (`t + 1` or `1 + t`, `t` an identifier). */
function isStartPlusOne(nodes: readonly TsNode[]): boolean {
  const [, start, end] = nodes;
  if (!start || !end || !tsm().Node.isIdentifier(start) || !tsm().Node.isBinaryExpression(end) || end.getOperatorToken().getText() !== '+') return false;
  const l = end.getLeft(), r = end.getRight();
  const one = (n: TsNode) => tsm().Node.isNumericLiteral(n) && n.getLiteralValue() === 1;
  const same = (n: TsNode) => tsm().Node.isIdentifier(n) && n.getText() === start.getText();
  return (same(l) && one(r)) || (one(l) && same(r));
}
