// The contract of one op: ONE entry holds its attributes (zod), its dtype/shape rule, its CPU
// kernel and its gradient rule (written with other ops), and what passes and code generators
// need to know about it: an elementwise op's scalar formula, whether it is a view, its
// data-dependent dims, whether it may be an epilogue activation. Eager mode, tracing, the IR
// verifier, the compiler and the runtime all read these entries (op-queries.ts derives the
// tables they use); nothing else may know an op's semantics.

import type { z } from 'zod';
import { allocate, type DType, type TypedArray } from './dtype.js';
import type { TensorType } from './shape.js';
import type { GradBuilder } from './grad-builder.js';
import type { CpuPrimitives } from './kernels/primitives.js';
import type { RandomSource } from './random.js';
import type { ScalarDef } from './scalar.js';
import type { Block } from './ir/graph.js';
import { withReducedFloat } from './reduced-float.js';

/** A dense, row-major tensor as CPU kernels see it. */
export interface CpuTensor {
  readonly data: TypedArray;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

/** Everything a gradient rule may look at. Only the inputs/outputs listed in `save*` are
 * present (the others are `undefined`), so autograd can version-check exactly what it keeps. */
export interface GradContext<A, T> {
  readonly attrs: A;
  readonly inputs: readonly (T | undefined)[];
  readonly outputs: readonly (T | undefined)[];
  readonly inputTypes: readonly (TensorType | null)[];
  readonly outputTypes: readonly TensorType[];
  /** Gradient of each output; `null` means zero (the output was not used). */
  readonly gradOutputs: readonly (T | null)[];
  /** Which inputs need a gradient: rules skip work (and NaN-prone terms) for the others. */
  readonly needsInputGrad: readonly boolean[];
}

export interface GradDef<A> {
  readonly saveInputs?: readonly number[];
  readonly saveOutputs?: readonly number[];
  /** Returns one gradient per input (`null` for none). A gradient may have a broadcast shape;
   * the caller reduces it to the input's shape (the one place broadcast reduction happens). */
  rule<T>(b: GradBuilder<T>, ctx: GradContext<A, T>): (T | null)[];
}

/**
 * What a kernel may use besides its inputs: random ops read the generator; kernels with inner
 * products take the running device's hot loops from `prims` (primitivesOf(ctx)); a kernel may
 * write result i into `out[i]` (the runtime's planned slot, see outputBuffer) instead of a
 * fresh array.
 */
export interface KernelContext {
  readonly generator?: RandomSource;
  readonly prims?: CpuPrimitives;
  /**
   * Buffers offered for the results. One may be the buffer of a same-sized input that dies at
   * this node (elementwise ops only), so a kernel that takes it reads input element k before
   * writing result element k; contents are otherwise stale, never zeroed. A kernel that calls
   * another op's kernel passes `out` on only when that op's result is its own result i (as
   * fused_linear does with linear), never for an intermediate it still reads.
   */
  readonly out?: readonly (TypedArray | undefined)[];
  /** The node's regions, for an op with an element body (OpDef.elementBody: fused_elementwise). */
  readonly regions?: readonly Block[];
}

/** The offered `ctx.out[i]` when it fits a result of `dtype` with `n` elements exactly, else undefined. */
export function offeredBuffer(ctx: KernelContext | undefined, i: number, dtype: DType, n: number): TypedArray | undefined {
  const o = ctx?.out?.[i];
  const fits = o !== undefined && o.length === n
    && (dtype === 'float32' || dtype === 'float16' || dtype === 'bfloat16' ? o instanceof Float32Array : dtype === 'int32' ? o instanceof Int32Array : dtype === 'int8' ? o instanceof Int8Array : o instanceof Uint8Array);
  return fits ? o : undefined;
}

/** The buffer for result `i` of `n` elements: the offered `ctx.out[i]` when it fits exactly, else a fresh zeroed one. */
export function outputBuffer(ctx: KernelContext | undefined, i: number, dtype: DType, n: number): TypedArray {
  return offeredBuffer(ctx, i, dtype, n) ?? allocate(dtype, n);
}

/** See OpDef.dataDims. */
export interface DataDims {
  /** Input positions whose data the host reads. */
  readonly reads: readonly number[];
  /** The data-dependent dims (symbols of the op's shape rule) from the input shapes and the read data. */
  dims(inputs: readonly ({ readonly shape: readonly number[] } | null)[], data: readonly TypedArray[]): Record<string, number>;
}

export interface OpDef<A = any> {
  /** IR name, lower snake case as in PyTorch (`conv2d`, `batch_norm`). */
  readonly name: string;
  readonly doc: string;
  /** Input names; a trailing `?` marks an optional input (passed as null). `...name` is variadic. */
  readonly inputs: readonly string[];
  readonly attrs: z.ZodType<A>;
  /** Number of outputs (default 1). */
  readonly outputs?: number;
  /** Elementwise ops (same-shape map after broadcasting) can be fused into one kernel. */
  readonly elementwise?: boolean;
  /**
   * What an elementwise op computes per element (scalar.ts): a primitive JS function (code
   * generators hold a template for it) or a formula over other entries. Fusion, the WGSL
   * generator and the default CPU kernel all use it; every elementwise entry has one.
   */
  readonly scalar?: ScalarDef<A>;
  /**
   * A view: with these attrs the result is the first input's data under the result's shape,
   * so devices share the buffer and run no kernel (reshape; identity dropout).
   */
  readonly view?: (attrs: A) => boolean;
  /**
   * A result size that depends on input data (the shape rule names a symbolic dim): which
   * inputs to read on the host and the dims they give, for devices whose kernels cannot size
   * their own results (any but the CPU).
   */
  readonly dataDims?: DataDims;
  /**
   * May run as the activation epilogue of fused_conv2d / fused_linear (one float input, no
   * attrs). `nonDecreasing`: act(max(w)) = max(act(w)) (NaN included), which lets
   * fused_conv2d pool before it activates.
   */
  readonly epilogue?: { readonly nonDecreasing: boolean };
  /**
   * The op owns ONE region, its element body (fused_elementwise, as MLIR's linalg.generic): the
   * block arguments are one element of each input (`f32[]`), the nodes are ordinary elementwise
   * entries (and float literals), and it yields the result element. The body is part of the
   * node's kernel: `infer` checks it (when given `regions`), `cpu` runs it
   * (`KernelContext.regions`), and walkers of the nodes that run (walkNodes) and the passes
   * (rewriteGraph) do not enter it.
   */
  readonly elementBody?: boolean;
  /**
   * Dtype/shape rule; throws OpError naming the op and the offending shapes. `regions` (ops with
   * an element body; absent where only the types are wanted, as at run time) are checked too.
   */
  infer(inputs: readonly (TensorType | null)[], attrs: A, regions?: readonly Block[]): TensorType[];
  /**
   * Random ops (`uniform`, `normal`) draw from `ctx.generator` each time they run: passes
   * must never merge (CSE), fold, hoist or drop them, and each run gives new values. Eager
   * mode passes kiln's default generator, the runtime its model's generator.
   */
  readonly random?: boolean;
  /**
   * Multiply-adds (or window steps) one call does, from concrete input and result types, for ops
   * whose work grows faster than their operands and results (products, convolutions, pooling
   * windows): a run with a time limit refuses such a node before it starts when even a device's
   * peak rate could not finish it in the time left (runtime executor.ts). Other ops touch each
   * element a bounded number of times, so their time is bounded by the memory limits.
   */
  readonly work?: (inputs: readonly (TensorType | null)[], attrs: A, results: readonly TensorType[]) => number;
  /** Reference CPU kernel over dense row-major buffers; never mutates its inputs. */
  cpu(inputs: readonly (CpuTensor | null)[], attrs: A, ctx?: KernelContext): CpuTensor[];
  /** `null`: not differentiable (comparisons, argmax, integer results). */
  readonly grad: GradDef<A> | null;
}

const registry = new Map<string, OpDef>();

/** Registers an op entry; called once per op at module load. */
export function defineOp<S extends z.ZodType>(def: OpDef<z.output<S>> & { attrs: S }): OpDef<z.output<S>> {
  if (registry.has(def.name)) throw new Error(`op ${def.name} is defined twice`);
  const wrapped = withReducedFloat(def) as OpDef<z.output<S>> & { attrs: S };
  registry.set(def.name, wrapped as OpDef);
  return wrapped;
}

export function getOp(name: string): OpDef {
  const def = registry.get(name);
  if (!def) throw new Error(`unknown op '${name}'`);
  return def;
}

export function hasOp(name: string): boolean { return registry.has(name); }

/** Whether `name` is a registry op marked `random` (it draws from a generator when it runs). */
export function isRandomOp(name: string): boolean { return registry.get(name)?.random === true; }

export function allOps(): OpDef[] { return [...registry.values()]; }
