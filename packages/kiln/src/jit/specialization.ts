// A Specialization: one compiled graph of a module with what it was specialized on (its guards),
// how forward's arguments become the graph's inputs and how the graph's outputs become forward's
// result. jit.script makes one per argument signature and attribute values, jit.trace exactly
// one; jit.optimizeForInference optimizes each it meets. Invariant: `inputs` and `rebuild` agree
// with `graph`'s inputs and outputs in order, and never run user code.

import { Tensor } from '@kiln/core';
import type { Graph } from '@kiln/ir-spec';
import type { InputValue } from '@kiln/runtime';
import type { GuardSet } from './guards.js';

export interface Specialization {
  readonly graph: Graph;
  /** What the graph assumed about the module's attributes. */
  readonly guards: GuardSet;
  /** The graph's inputs for forward's arguments (numbers and booleans become 0-d tensors). */
  inputs(args: readonly unknown[]): InputValue[];
  /** Forward's result (tensor, array, object) from the graph's outputs. */
  rebuild(outs: readonly Tensor[]): unknown;
}

/** A number or boolean argument as a graph input: a 0-d tensor of the dtype jit.script types it with. */
export function scalarInput(a: unknown): InputValue {
  if (a instanceof Tensor) return a;
  if (typeof a === 'boolean') return { data: Uint8Array.of(a ? 1 : 0), shape: [], dtype: 'bool' };
  const n = a as number;
  return Number.isInteger(n) ? { data: Int32Array.of(n), shape: [], dtype: 'int32' } : { data: Float32Array.of(n), shape: [], dtype: 'float32' };
}
