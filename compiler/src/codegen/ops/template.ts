// The WGSL template of a PRIMITIVE elementwise entry (one whose scalar is a JS function, see
// ir-spec/src/scalar.ts): the expression over operand expressions, and the helper functions it
// calls. Invariant: a template computes in the operand type `t` from operands already in it and
// holds no index math; composite entries (formulas) have no template — codegen/scalar.ts
// compiles their formula. tests/op-entries.test.ts checks that every elementwise entry has
// exactly one of the two.

import type { DType } from '@kiln/ir-spec';

export type Wt = 'f32' | 'i32' | 'u32';

export interface Template {
  /** The result expression over operand expressions (in the operand type `t`) and attrs. */
  readonly expr: (a: readonly string[], attrs: Readonly<Record<string, unknown>>, t: Wt) => string;
  /** Helper functions the expression calls (WGSL `fn` declarations). */
  readonly helpers?: string;
  /** Compute type of the operands when it is not the default (see codegen/elementwise.ts). */
  readonly operand?: (ins: readonly DType[], out: DType) => Wt;
  /** Operand positions passed as stored (u32 for bool), not converted to the operand type. */
  readonly raw?: readonly number[];
}

/** A float-only unary map (its operand is f32 whatever the input dtype). */
export const unaryF = (f: (x: string) => string, helpers?: string): Template => ({ expr: ([x]) => f(x), helpers });

/** The NaN helper (WGSL constant expressions cannot be NaN: a zero from the dims block is ORed in). */
export const NAN = 'fn k_nan() -> f32 { return bitcast<f32>(0x7fc00000u | (dims.w[0].x & 0u)); }';
