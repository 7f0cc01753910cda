// Scalar arithmetic of `scalar_op` (ir-spec builtins.ts types it). Invariant: results follow
// the node's declared result type — comparisons and logic give booleans, `div` gives f32, the
// rest give i32 (wrapped to int32 like the tensors' int32) unless an operand is f32 — and
// division or modulo by zero is an error rather than Infinity or NaN. `floordiv` and
// `mod` follow Python (the remainder takes the divisor's sign), as in TorchScript.

import type { DType } from '@kiln/ir-spec';

export type Scalar = number | boolean;

const num = (v: Scalar): number => (typeof v === 'boolean' ? (v ? 1 : 0) : v);
const truthy = (v: Scalar): boolean => (typeof v === 'boolean' ? v : v !== 0);

/** Rounds `v` to the scalar type `dtype`. */
export function toScalar(v: number | boolean, dtype: DType): Scalar {
  if (dtype === 'bool') return truthy(v);
  const n = num(v);
  return dtype === 'int32' ? Math.trunc(n) | 0 : Math.fround(n);
}

/**
 * Evaluates `fn` on the operands; `out` is the declared result dtype. Throws an Error with a
 * plain message on division by zero (the executor adds the node).
 */
export function scalarOp(fn: string, args: readonly Scalar[], out: DType): Scalar {
  const [a, b] = args;
  switch (fn) {
    case 'not': return !truthy(a);
    case 'and': return truthy(a) && truthy(b);
    case 'or': return truthy(a) || truthy(b);
    case 'eq': return num(a) === num(b);
    case 'ne': return num(a) !== num(b);
    case 'lt': return num(a) < num(b);
    case 'le': return num(a) <= num(b);
    case 'gt': return num(a) > num(b);
    case 'ge': return num(a) >= num(b);
    case 'neg': return toScalar(-num(a), out);
    case 'add': return toScalar(num(a) + num(b), out);
    case 'sub': return toScalar(num(a) - num(b), out);
    case 'mul': return toScalar(out === 'int32' ? Math.imul(num(a), num(b)) : num(a) * num(b), out);
    case 'min': return toScalar(Math.min(num(a), num(b)), out);
    case 'max': return toScalar(Math.max(num(a), num(b)), out);
    case 'pow': return toScalar(num(a) ** num(b), out);
    case 'div':
      if (num(b) === 0) throw new Error(`division by zero (${num(a)} / 0)`);
      return toScalar(num(a) / num(b), out);
    case 'floordiv':
      if (num(b) === 0) throw new Error(`integer division by zero (${num(a)} // 0)`);
      return toScalar(Math.floor(num(a) / num(b)), out);
    case 'mod': {
      if (num(b) === 0) throw new Error(`modulo by zero (${num(a)} % 0)`);
      const r = num(a) - Math.floor(num(a) / num(b)) * num(b);
      return toScalar(r, out);
    }
    default: throw new Error(`unknown scalar fn '${fn}'`);
  }
}
