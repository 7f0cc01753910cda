// sort: values and int32 indices of a stable sort along one dim. Invariant: the order is total
// and stable — NaN counts as larger than every number (last ascending, first descending, as
// PyTorch), and equal values keep their input order in both directions (torch.sort with
// stable=True). argsort and topk are composites over it in packages/core.

import * as z from 'zod';
import { defineOp } from '../op-def.js';
import { normDim, OpError, type Dim } from '../shape.js';
import { allocate } from '../dtype.js';
import { splitAt } from '../kernels/strided.js';
import type { GradBuilder } from '../grad-builder.js';

const sortAttrs = z.object({ dim: z.number().int().default(-1), descending: z.boolean().default(false) }).strict();

/** a before b in the sort order (NaN largest). */
export function sortsBefore(a: number, b: number, descending: boolean): boolean {
  const na = a !== a, nb = b !== b; // eslint-disable-line no-self-compare
  if (na || nb) return descending ? na && !nb : nb && !na;
  return descending ? a > b : a < b;
}

/** Lines up to this length sort by packed float64 keys (2^21 positions · 2^32 ranks < 2^53). */
const KEY_LIMIT = 2 ** 21;
const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
/** An unsigned 32-bit rank with the sort order of the value: NaN largest, -0 equal to +0. */
function orderBits(v: number, isFloat: boolean): number {
  if (!isFloat) return v + 2147483648;
  if (v !== v) return 0xffffffff; // eslint-disable-line no-self-compare
  f32[0] = v === 0 ? 0 : v;
  const b = u32[0];
  return b >= 0x80000000 ? 0xffffffff - b : b + 0x80000000;
}

const zerosOf = <T>(b: GradBuilder<T>, shape: readonly Dim[]): T => b.expand(b.scalar(0, 'float32'), shape);

export const sort = defineOp({
  name: 'sort', doc: 'stable sort along dim: [values, int32 indices]; NaN sorts as the largest value',
  inputs: ['x'], attrs: sortAttrs,
  infer([x], { dim }) {
    if (!x) throw new OpError('sort', 'input is required');
    if (x.shape.length) normDim('sort', dim, x.shape.length);
    else if (dim !== 0 && dim !== -1) throw new OpError('sort', `dim ${dim} is out of range for a 0-d tensor (use 0 or -1)`);
    return [{ dtype: x.dtype, shape: x.shape }, { dtype: 'int32', shape: x.shape }];
  },
  cpu([x], { dim, descending }) {
    const shape = x!.shape, src = x!.data;
    const d = shape.length ? normDim('sort', dim, shape.length) : 0;
    const { outer, size, inner } = splitAt(shape, d);
    const values = allocate(x!.dtype, src.length), indices = new Int32Array(src.length);
    const keys = new Float64Array(size);
    const order = size < KEY_LIMIT ? null : Array.from({ length: size }, (_, i) => i);
    for (let o = 0; o < outer; o++) {
      for (let r = 0; r < inner; r++) {
        const base = o * size * inner + r;
        if (order) {
          // Lines too long for packed keys: a comparator sort (Array.prototype.sort is stable).
          for (let i = 0; i < size; i++) order[i] = i;
          order.sort((i, j) => {
            const a = src[base + i * inner], b = src[base + j * inner];
            return sortsBefore(a, b, descending) ? -1 : sortsBefore(b, a, descending) ? 1 : 0;
          });
          for (let k = 0; k < size; k++) {
            values[base + k * inner] = src[base + order[k] * inner];
            indices[base + k * inner] = order[k];
          }
          continue;
        }
        // One float64 per element: its order rank (32 bits) above its position (21 bits), so a
        // native numeric sort gives the stable order; the position comes back from the low bits.
        for (let i = 0; i < size; i++) {
          const m = orderBits(src[base + i * inner], x!.dtype === 'float32');
          keys[i] = (descending ? 0xffffffff - m : m) * KEY_LIMIT + i;
        }
        keys.sort();
        for (let k = 0; k < size; k++) {
          const i = keys[k] % KEY_LIMIT;
          values[base + k * inner] = src[base + i * inner];
          indices[base + k * inner] = i;
        }
      }
    }
    return [{ data: values, shape, dtype: x!.dtype }, { data: indices, shape, dtype: 'int32' }];
  },
  grad: {
    // Each value came from one input position: scatter the gradient back there.
    saveOutputs: [1],
    rule: (b, { gradOutputs: [g], outputs: [, idx], inputTypes: [t], attrs: { dim } }) => {
      if (!g) return [null];
      if (!t!.shape.length) return [g];
      return [b.op('scatter_add', [zerosOf(b, t!.shape), idx!, g], { dim })];
    },
  },
});
