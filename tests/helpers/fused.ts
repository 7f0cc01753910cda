// Builds fused_elementwise nodes in tests from a compact instruction list (`[op, arg, arg?]`, an
// arg `"x<k>"` input k, `"t<k>"` instruction k's result, or a number literal), so a case reads
// as one line. The node holds the equivalent element body, built with GraphBuilder.

import type { GraphBuilder, Value } from '@kiln/ir-spec';

export type Instructions = readonly (readonly (string | number)[])[];

/** A fused_elementwise over `inputs` whose body runs `program` (the last instruction is yielded). */
export function fusedFrom(b: GraphBuilder, inputs: readonly Value[], program: Instructions): Value {
  return b.fusedElementwise(inputs, (xs) => {
    const ts: Value[] = [];
    for (const [op, ...args] of program) {
      ts.push(b.op1(String(op), args.map((a) => (typeof a === 'number' ? b.literal(a) : a[0] === 'x' ? xs[Number(a.slice(1))] : ts[Number(a.slice(1))]))));
    }
    return ts[ts.length - 1];
  });
}
