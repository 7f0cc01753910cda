// IR value types. Invariant: types are plain immutable data compared structurally; a tensor
// dim is a number or a symbol (`N`, or a product such as `N*64`, see dims.ts).

import type { DType } from '../dtype.js';
import type { Dim } from '../shape.js';

export type IRType =
  | { readonly kind: 'tensor'; readonly dtype: DType; readonly shape: readonly Dim[] }
  | { readonly kind: 'scalar'; readonly dtype: DType }
  | { readonly kind: 'tuple'; readonly elements: readonly IRType[] }
  | { readonly kind: 'list'; readonly element: IRType };

export type TensorIRType = Extract<IRType, { kind: 'tensor' }>;

export const tensorType = (dtype: DType, shape: readonly Dim[]): TensorIRType => ({ kind: 'tensor', dtype, shape: [...shape] });
export const scalarType = (dtype: DType): IRType => ({ kind: 'scalar', dtype });
export const tupleType = (elements: readonly IRType[]): IRType => ({ kind: 'tuple', elements: [...elements] });
export const listType = (element: IRType): IRType => ({ kind: 'list', element });

/** Short dtype names of the text form. */
export const DTYPE_SHORT: Record<DType, string> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16', int32: 'i32', bool: 'bool', int8: 'i8' };
export const DTYPE_FROM_SHORT: Record<string, DType> = { f32: 'float32', f16: 'float16', bf16: 'bfloat16', i32: 'int32', bool: 'bool', i8: 'int8' };

/** The type's text form: `f32[N,3,32,32]`, `i32`, `tuple<f32[2], i32>`, `list<f32[N,4]>`. */
export function typeToString(t: IRType): string {
  switch (t.kind) {
    case 'tensor': return `${DTYPE_SHORT[t.dtype]}[${t.shape.join(',')}]`;
    case 'scalar': return DTYPE_SHORT[t.dtype];
    case 'tuple': return `tuple<${t.elements.map(typeToString).join(', ')}>`;
    case 'list': return `list<${typeToString(t.element)}>`;
  }
}

export function typeEquals(a: IRType, b: IRType): boolean {
  return typeToString(a) === typeToString(b);
}

export function isTensor(t: IRType): t is TensorIRType { return t.kind === 'tensor'; }
