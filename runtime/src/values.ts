// Run-time values and their check against IR types. Invariant: a tensor is a DeviceTensor, an
// `i32`/`f32` scalar a JS number (i32: an integer in int32 range), a `bool` scalar a boolean, a
// tuple or list a JS array; `checkValue` accepts exactly the values a type describes, reading
// symbolic dims through the run's bindings and skipping only dims no binding can evaluate
// (a data-dependent size such as masked_select's `nnz`).

import { typeToString, type IRType } from '@kiln/ir-spec';
import type { DeviceTensor } from './device.js';
import { sizeOf, type SymbolEnv } from './dims.js';

export type RtValue = DeviceTensor | number | boolean | readonly RtValue[];

export function isDeviceTensor(v: RtValue): v is DeviceTensor {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'buffer' in v;
}

/** Text of a run-time value's type, in the IR's notation (`f32[2,3]`, `i32`). */
export function describeValue(v: RtValue): string {
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'i32' : 'f32';
  if (isDeviceTensor(v)) return typeToString({ kind: 'tensor', dtype: v.dtype, shape: v.shape });
  return `tuple<${v.map(describeValue).join(', ')}>`;
}

/** Why `v` is not a value of type `t` under `env`, or null when it is. */
export function checkValue(v: RtValue, t: IRType, env: SymbolEnv): string | null {
  // On the hot path (every node's results): build text only on failure.
  const mismatch = () => `expected ${typeToString(t)}, got ${describeValue(v)}`;
  switch (t.kind) {
    case 'tensor': {
      if (!isDeviceTensor(v) || v.dtype !== t.dtype || v.shape.length !== t.shape.length) return mismatch();
      for (let i = 0; i < t.shape.length; i++) {
        const d = t.shape[i];
        const n = typeof d === 'number' ? d : sizeOf(d, env);
        if (n !== undefined && n !== v.shape[i]) return mismatch();
      }
      return null;
    }
    case 'scalar': {
      const ok = t.dtype === 'bool' ? typeof v === 'boolean'
        : typeof v === 'number' && (t.dtype === 'float32' || (v | 0) === v);
      return ok ? null : mismatch();
    }
    case 'tuple': {
      if (!Array.isArray(v) || v.length !== t.elements.length) return mismatch();
      for (let i = 0; i < v.length; i++) {
        const why = checkValue(v[i], t.elements[i], env);
        if (why) return `element ${i}: ${why}`;
      }
      return null;
    }
    case 'list': {
      if (!Array.isArray(v)) return mismatch();
      for (let i = 0; i < v.length; i++) {
        const why = checkValue(v[i], t.element, env);
        if (why) return `element ${i}: ${why}`;
      }
      return null;
    }
  }
}
