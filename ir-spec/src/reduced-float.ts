// float16/bfloat16 for every op entry, in one place. Invariant: an entry's own `infer` and `cpu`
// only ever see float32 (the storage-type design of dtype.ts); this wrapper presents reduced
// inputs to them as float32 and gives each float32 result the dtype PyTorch's type promotion
// gives the op's floating inputs (all float16 → float16; float16 with float32 → float32, also
// for batch_norm of a float16 input with float32 statistics, where PyTorch's CUDA kernel keeps
// float16: the values differ by that last rounding only),
// rounding the kernel's float32 result once to the nearest value of that type (ties to even), as
// a device that computes in float32 and stores 16 bits does. Ops with a `dtype` attribute (cast)
// choose their result type themselves and are not wrapped.

import type { CpuTensor, KernelContext, OpDef } from './op-def.js';
import { isFloating, isReducedFloat, promoteTypes, roundInPlace, type DType } from './dtype.js';

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
  const skip = (attrs: unknown) => typeof attrs === 'object' && attrs !== null && Object.hasOwn(attrs, 'dtype');
  return {
    ...def,
    infer(inputs, attrs, ...rest) {
      if (skip(attrs) || !inputs.some((t) => t && isReducedFloat(t.dtype))) return infer.call(def, inputs, attrs, ...rest);
      const reduced = reducedResult(inputs.map((t) => t?.dtype));
      const types = infer.call(def, inputs.map(asFloat32), attrs, ...rest);
      return reduced ? types.map((t) => (t.dtype === 'float32' ? { ...t, dtype: reduced } : t)) : types;
    },
    cpu(inputs: readonly (CpuTensor | null)[], attrs: A, ctx?: KernelContext) {
      if (skip(attrs) || !inputs.some((t) => t && isReducedFloat(t.dtype))) return cpu.call(def, inputs, attrs, ctx);
      const reduced = reducedResult(inputs.map((t) => t?.dtype));
      const outs = cpu.call(def, inputs.map(asFloat32), attrs, ctx);
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
