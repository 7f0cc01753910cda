// The hot loops an op's CPU kernel may take from the device that runs it. An op entry has one
// CPU kernel (its meaning); the device decides how fast its inner products run by passing a
// `CpuPrimitives` (the runtime's CPU device passes WebAssembly SIMD ones, see
// runtime/src/wasm). Without one, kernels use these reference loops — the oracle the fast ones
// are tested against. Invariant: a primitive computes exactly what the reference computes, up
// to float32 rounding of the sums.

import { gemm } from './gemm.js';
import { conv2dForward, conv2dWeightGrad } from './conv.js';

export { applyConvEpilogue, type ConvEpilogue } from './conv.js';
export { applyGemmEpilogue, type GemmEpilogue } from './gemm.js';
import { mapBinary, mapTernary, mapUnary } from './broadcast.js';
import { planReduce, reduceExtreme, reduceSum } from './reduce.js';
import { batchNormAffine, batchNormBackward, batchNormStats } from './norm.js';
import { maxPool } from './pool.js';
import { adamStep } from './adam.js';
import { quantizedLinear } from './quant.js';

export type { AdamScalars } from './adam.js';
import type { TypedArray } from '../dtype.js';
import type { Block } from '../ir/graph.js';

/** What a fast conv2d weight gradient needs of the Winograd reference (kernels/winograd.ts). */
export { slab as winogradSlab, winogradApplies, winogradFilterGrad } from './winograd.js';

/** Where a fast conv2d must leave a convolution to the reference (windows reading mostly padding: kernels/conv-taps.ts). */
export { padsTooMuch } from './conv-taps.js';

/** How fast primitives read an input against a broadcast output shape (the reference's own rule). */
export { broadcastStrides } from './broadcast.js';

/** C[M,N] (+)= A[M,K]·B[K,N] with explicit element strides, then an optional bias/relu epilogue (see kernels/gemm.ts). */
export type GemmFn = typeof gemm;
/** conv2d over NCHW float32 (weight [Cout, C/G, kh, kw], optional bias) and an optional epilogue (relu, destination); a fresh output unless the epilogue names one. */
export type Conv2dFn = typeof conv2dForward;

/**
 * An elementwise binary op with broadcasting: `mapBinary` plus the op's entry name, by which a
 * fast implementation picks its own loop for the ops it knows (and runs `f`/`row` otherwise).
 */
export type MapBinaryFn = (op: string, ...args: Parameters<typeof mapBinary>) => ReturnType<typeof mapBinary>;
/** An elementwise unary op: `mapUnary` plus the op's entry name (see MapBinaryFn). */
export type MapUnaryFn = (op: string, ...args: Parameters<typeof mapUnary>) => ReturnType<typeof mapUnary>;
/** An elementwise three-input op (where): `mapTernary` plus the op's entry name (see MapBinaryFn). */
export type MapTernaryFn = (op: string, ...args: Parameters<typeof mapTernary>) => ReturnType<typeof mapTernary>;
/** out = Σ of a dense tensor `src` of `shape` over `dims` (sorted, distinct), accumulated in float64. */
export type SumFn = (src: TypedArray, shape: readonly number[], dims: readonly number[], out: TypedArray) => void;
/** out = max (or min) of a dense tensor `src` of `shape` over `dims` (sorted, distinct, none empty); NaN propagates (amax/amin). */
export type ExtremeFn = (src: TypedArray, shape: readonly number[], dims: readonly number[], out: TypedArray, max: boolean) => void;

/** conv2d's weight gradient dW [Cout, C/G, kh, kw] from x and the output gradient gy (see kernels/conv.ts). */
export type Conv2dWeightGradFn = (x: Float32Array, gy: Float32Array, d: Parameters<Conv2dFn>[3]) => Float32Array;

/**
 * fused_elementwise's element body over n elements: `out[i] = body(srcs[0][i], …)`, every source
 * full-size. Returns false when it does not take this body (an op it lacks, too few elements):
 * the caller then runs its reference loop. Results equal the reference up to the float32
 * rounding of each body node (the reference rounds once, at the store).
 */
export type ElementBodyFn = (body: Block, srcs: readonly ArrayLike<number>[], out: Float32Array, n: number) => boolean;

export interface CpuPrimitives {
  readonly gemm: GemmFn;
  /** Optional: without it fused_elementwise runs its own compiled JavaScript loop. */
  readonly elementBody?: ElementBodyFn;
  readonly conv2d: Conv2dFn;
  readonly conv2dWeightGrad: Conv2dWeightGradFn;
  readonly mapBinary: MapBinaryFn;
  readonly mapUnary: MapUnaryFn;
  readonly mapTernary: MapTernaryFn;
  readonly sum: SumFn;
  readonly extreme: ExtremeFn;
  readonly batchNormStats: typeof batchNormStats;
  readonly batchNormAffine: typeof batchNormAffine;
  /** batch_norm's backward (layer norm's too): dx in place, [dweight, dbias] returned (see kernels/norm.ts). */
  readonly batchNormBackward: typeof batchNormBackward;
  /** max_pool2d's windows over N·C planes, values and winner offsets (see kernels/pool.ts). */
  readonly maxPool: typeof maxPool;
  /** One parameter's Adam/AdamW update in place (packages/core's optimizers). */
  readonly adamStep: typeof adamStep;
  /** quantized_linear's float32 [M,N] from float32 activations and an int8 weight (kernels/quant.ts). */
  readonly quantizedLinear: typeof quantizedLinear;
}

/** The plain-JavaScript primitives (ir-spec's own kernels). */
export const REFERENCE_PRIMITIVES: CpuPrimitives = {
  gemm,
  conv2d: conv2dForward,
  conv2dWeightGrad: (x, gy, d) => conv2dWeightGrad(x, gy, d, gemm),
  mapBinary: (_op, ...args) => mapBinary(...args),
  mapUnary: (_op, ...args) => mapUnary(...args),
  mapTernary: (_op, ...args) => mapTernary(...args),
  sum: (src, shape, dims, out) => reduceSum(src, planReduce(shape, dims), out),
  extreme: (src, shape, dims, out, max) => reduceExtreme(src, planReduce(shape, dims), out, max),
  batchNormStats,
  batchNormAffine,
  batchNormBackward,
  maxPool,
  adamStep,
  quantizedLinear,
};

/** The primitives a kernel context carries, else the reference ones. */
export function primitivesOf(ctx?: { readonly prims?: CpuPrimitives }): CpuPrimitives {
  return ctx?.prims ?? REFERENCE_PRIMITIVES;
}
