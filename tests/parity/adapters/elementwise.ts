// Golden 'elementwise' cases → Kiln calls. See ../adapter.ts for the contract.
// Scalar operands sit in attrs: `other`/`exponent` (a JS number right operand), `self` (a number
// on the left: 2.0 / x is `rdiv_scalar`, 2.0 ** x is `pow_scalar_base`).
import { add, sub, mul, div, pow, clamp, maximum, minimum, type Tensor, type TensorOrScalar } from '@kiln/core';
import type { Adapter, AdapterTable } from '../adapter.js';

/** The two operands of a binary case, whichever of them is a scalar in attrs. */
function operands(inputs: Tensor[], attrs: Record<string, any>, right = 'other'): [TensorOrScalar, TensorOrScalar] {
  if (typeof attrs.self === 'number') return [attrs.self, inputs[0]];
  if (typeof attrs[right] === 'number') return [inputs[0], attrs[right]];
  return [inputs[0], inputs[1]];
}

const binary = (f: (a: TensorOrScalar, b: TensorOrScalar) => Tensor, right = 'other'): Adapter =>
  (inputs, attrs) => f(...operands(inputs, attrs, right));
const method = (name: 'neg' | 'exp' | 'log' | 'sqrt' | 'rsqrt' | 'reciprocal' | 'square' | 'sin' | 'cos' | 'abs'): Adapter =>
  ([x]) => x[name]();

export const adapters: AdapterTable = {
  add: (inputs, attrs) => add(...operands(inputs, attrs), { alpha: attrs.alpha }),
  sub: (inputs, attrs) => sub(...operands(inputs, attrs), { alpha: attrs.alpha }),
  mul: binary(mul),
  div: binary(div),
  pow: binary(pow, 'exponent'),
  neg: method('neg'),
  exp: method('exp'),
  log: method('log'),
  sqrt: method('sqrt'),
  rsqrt: method('rsqrt'),
  reciprocal: method('reciprocal'),
  square: method('square'),
  sin: method('sin'),
  cos: method('cos'),
  abs: method('abs'),
  clamp: ([x], attrs) => clamp(x, attrs.min, attrs.max),
  maximum: ([a, b]) => maximum(a, b),
  minimum: ([a, b]) => minimum(a, b),
};
