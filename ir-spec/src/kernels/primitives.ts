// The hot loops an op's CPU kernel may take from the device that runs it. An op entry has one
// CPU kernel (its meaning); the device decides how fast its inner products run by passing a
// `CpuPrimitives` (the runtime's CPU device passes WebAssembly SIMD ones, see
// runtime/src/wasm). Without one, kernels use these reference loops — the oracle the fast ones
// are tested against. Invariant: a primitive computes exactly what the reference computes, up
// to float32 rounding of the sums.

import { gemm } from './gemm.js';
import { conv2dForward } from './conv.js';

/** C[M,N] (+)= A[M,K]·B[K,N] with explicit element strides (see kernels/gemm.ts). */
export type GemmFn = typeof gemm;
/** conv2d over NCHW float32 (weight [Cout, C/G, kh, kw], optional bias), a fresh output. */
export type Conv2dFn = typeof conv2dForward;

export interface CpuPrimitives {
  readonly gemm: GemmFn;
  readonly conv2d: Conv2dFn;
}

/** The plain-JavaScript primitives (ir-spec's own kernels). */
export const REFERENCE_PRIMITIVES: CpuPrimitives = { gemm, conv2d: conv2dForward };

/** The primitives a kernel context carries, else the reference ones. */
export function primitivesOf(ctx?: { readonly prims?: CpuPrimitives }): CpuPrimitives {
  return ctx?.prims ?? REFERENCE_PRIMITIVES;
}
