// float16/bfloat16 for every op entry, in one place. Invariant: an entry's own `infer` and `cpu`
// only ever see float32 (the storage-type design of dtype.ts); this wrapper presents reduced
// inputs to them as float32 and gives each float32 result the dtype PyTorch's type promotion
// gives the op's floating inputs (all float16 → float16; float16 with float32 → float32, also
// for batch_norm of a float16 input with float32 statistics, where PyTorch's CUDA kernel keeps
// float16: the values differ by that last rounding only),
// rounding the kernel's float32 result once to the nearest value of that type (ties to even), as
// a device that computes in float32 and stores 16 bits does. Ops with a `dtype` attribute (cast)
// choose their result type themselves and are not wrapped. The products (matmul, linear,
// conv2d, conv_transpose2d) do not promote: as in PyTorch, their floating inputs must share one
// dtype, and a mixed call raises (autocast casts them to one dtype first).

import type { CpuTensor, KernelContext, OpDef } from './op-def.js';
import { isFloating, isReducedFloat, promoteTypes, roundInPlace, type DType } from './dtype.js';
import { OpError } from './shape.js';

/** Ops whose floating inputs must all have one dtype (PyTorch: "expected scalar type Float but found Half"). */
export const SAME_DTYPE_OPS: ReadonlySet<string> = new Set(['matmul', 'linear', 'conv2d', 'conv_transpose2d']);

const TORCH_NAME: Partial<Record<DType, string>> = { float32: 'Float', float16: 'Half', bfloat16: 'BFloat16' };

/** Throws when the floating inputs of a SAME_DTYPE_OPS op mix float32, float16 and bfloat16. */
function checkSameDType(def: OpDef<unknown>, inputs: readonly ({ dtype: DType } | null)[]): void {
  let first = -1;
  for (let i = 0; i < inputs.length; i++) {
    const t = inputs[i];
    if (!t || !isFloating(t.dtype)) continue;
    if (first < 0) { first = i; continue; }
    const a = inputs[first]!.dtype, b = t.dtype;
    if (a === b) continue;
    const name = (k: number) => def.inputs[k]?.replace(/\?$/, '') ?? `input ${k}`;
    throw new OpError(def.name, `${name(first)} is ${a} but ${name(i)} is ${b}: expected one dtype (PyTorch 1.13: "expected scalar type ${TORCH_NAME[a]} but found ${TORCH_NAME[b]}"); cast one of them (.float(), .half(), .bfloat16()) or run the op inside amp.autocast, which casts both`);
  }
}

/** The reduced dtype results take, or undefined when no floating input is float16/bfloat16. */
function reducedResult(dtypes: readonly (DType | undefined)[]): 'float16' | 'bfloat16' | undefined {
  let out: DType | undefined;
  for (const d of dtypes) if (d && isFloating(d)) out = out ? promoteTypes(out, d) : d;
  return out && isReducedFloat(out) ? out : undefined;
}

const asFloat32 = <T extends { dtype: DType } | null>(t: T): T =>
  (t && isReducedFloat(t.dtype) ? { ...t, dtype: 'float32' } : t);

/** `def` with float16/bfloat16 handled around its float32 infer and kernel. */
export function withReducedFloat<A>(def: OpDef<A>): OpDef<A> {
  const { infer, cpu } = def;
  const sameDType = SAME_DTYPE_OPS.has(def.name);
  const skip = (attrs: unknown) => typeof attrs === 'object' && attrs !== null && Object.hasOwn(attrs, 'dtype');
  return {
    ...def,
    infer(inputs, attrs, ...rest) {
      if (sameDType) checkSameDType(def as OpDef<unknown>, inputs);
      if (skip(attrs) || !inputs.some((t) => t && isReducedFloat(t.dtype))) return infer.call(def, inputs, attrs, ...rest);
      const reduced = reducedResult(inputs.map((t) => t?.dtype));
      const types = infer.call(def, inputs.map(asFloat32), attrs, ...rest);
      return reduced ? types.map((t) => (t.dtype === 'float32' ? { ...t, dtype: reduced } : t)) : types;
    },
    cpu(inputs: readonly (CpuTensor | null)[], attrs: A, ctx?: KernelContext) {
      if (sameDType) checkSameDType(def as OpDef<unknown>, inputs);
      if (skip(attrs) || !inputs.some((t) => t && isReducedFloat(t.dtype))) return cpu.call(def, inputs, attrs, ctx);
      const reduced = reducedResult(inputs.map((t) => t?.dtype));
      // No offered buffers: one may be an input's (in place), and a result written there would
      // skip the rounding below, which leaves an input's own buffer alone.
      const outs = cpu.call(def, inputs.map(asFloat32), attrs, ctx?.out ? { ...ctx, out: undefined } : ctx);
      if (!reduced) return outs;
      return outs.map((o) => {
        if (o.dtype !== 'float32') return o;
        // A view returns an input's own buffer, whose values are already representable.
        if (!inputs.some((t) => t?.data === o.data)) roundInPlace(o.data as Float32Array, reduced);
        return { ...o, dtype: reduced };
      });
    },
  };
}
