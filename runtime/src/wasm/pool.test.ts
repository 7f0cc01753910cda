// The WebAssembly 2×2 max pool against ir-spec's loops through the max_pool2d entry: odd output
// widths (not multiples of 4), odd input sizes (a last row/column no window reads), batch 1, odd
// channel counts, NaN and ties (the first maximum in scan order wins, a NaN always wins) — values
// and indices identical; other windows keep the JavaScript loop.

import { describe, expect, it } from 'vitest';
import { getOp, type CpuTensor } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

function input(shape: number[], seed: number): CpuTensor {
  const data = randomFloats(shape.reduce((a, d) => a * d, 1), seed);
  for (let i = 0; i < data.length; i += 7) data[i] = data[i + 1] ?? 0; // ties with the right neighbour
  for (let i = 3; i < data.length; i += 53) data[i] = NaN;
  for (let i = 5; i < data.length; i += 61) data[i] = -Infinity;
  return { data, shape, dtype: 'float32' };
}

const attrs = (k: number, s: number, p = 0) => ({ kernel_size: [k, k], stride: [s, s], padding: [p, p], dilation: [1, 1], ceil_mode: false });

describe('WebAssembly max pool', () => {
  const heap = wasmKernels();
  const cases: [number[], ReturnType<typeof attrs>][] = [
    [[32, 32, 8, 8], attrs(2, 2)],
    [[1, 13, 23, 27], attrs(2, 2)], // OW = 13, last column unread
    [[3, 5, 30, 38], attrs(2, 2)], // OW = 19
    [[2, 7, 17, 17], attrs(3, 2, 1)], // another window: the JavaScript loop
  ];
  for (const [shape, a] of cases) {
    it(`max_pool2d of [${shape}] with k${a.kernel_size[0]} s${a.stride[0]} p${a.padding[0]} equals the reference`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const x = input(shape, shape[1]);
      const before = heap.liveBytes;
      const [wv, wi] = getOp('max_pool2d').cpu([x], a);
      const [gv, gi] = getOp('max_pool2d').cpu([x], a, { prims: fastPrimitives() });
      expect(gv.shape).toEqual(wv.shape);
      for (let i = 0; i < wv.data.length; i++) {
        if (!Object.is(gv.data[i], wv.data[i]) || gi.data[i] !== wi.data[i]) throw new Error(`out[${i}] = ${gv.data[i]}@${gi.data[i]}, want ${wv.data[i]}@${wi.data[i]}`);
      }
      expect(heap.liveBytes).toBe(before);
    });
  }
});
