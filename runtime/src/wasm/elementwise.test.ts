// The WebAssembly elementwise primitives against ir-spec's loops, through the op entries: every
// arithmetic and comparison op, relu and where, on same-shape, scalar, per-channel and row/column broadcasts with
// ragged sizes (not multiples of 4 or 16), batch 1, odd channel counts, NaN/±0/±inf values;
// results must be bit-identical (Object.is per element), and the kernel memory is returned.

import { describe, expect, it } from 'vitest';
import { getOp, type CpuTensor, type TypedArray } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { MIN_ELEMENTS } from './elementwise.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

function tensorOf(shape: number[], seed: number): CpuTensor {
  const data = randomFloats(shape.reduce((a, d) => a * d, 1), seed);
  // Special values (and exact ties for the comparisons) at fixed places.
  const special = [NaN, -0, 0, Infinity, -Infinity, 0.5, -0.5];
  for (let i = 0; i < data.length; i += 37) data[i] = special[(i / 37 + seed) % special.length];
  return { data, shape, dtype: 'float32' };
}

function expectSame(got: TypedArray, want: TypedArray): void {
  expect(got.constructor).toBe(want.constructor);
  expect(got.length).toBe(want.length);
  for (let i = 0; i < got.length; i++) if (!Object.is(got[i], want[i])) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
}

const PAIRS: [number[], number[]][] = [
  [[3, 7, 11, 13], [3, 7, 11, 13]], // same shape, ragged
  [[1, 5, 33, 31], []], // scalar right, batch 1
  [[], [2, 9, 17, 17]], // scalar left
  [[2, 19, 15, 15], [19, 1, 1]], // per-channel (batch-norm style), odd channels
  [[1, 19, 1, 1], [3, 19, 13, 11]], // per-channel on the left
  [[5, 3, 29, 30], [5, 1, 29, 30]], // broadcast over channels
  [[70, 77], [77]], // bias row
  [[70, 77], [70, 1]], // per-row scalar: stride-0 inner dim
  [[4, 1, 33, 1], [4, 7, 1, 35]], // outer product-like: both broadcast (four dims: falls back)
  [[2048], [2048]], // exactly MIN_ELEMENTS
  [[2051], [1]], // just above, a scalar
];
const OPS = ['add', 'sub', 'mul', 'div', 'eq', 'ne', 'lt', 'le', 'gt', 'ge'];

describe('WebAssembly elementwise primitives', () => {
  const heap = wasmKernels();
  for (const op of OPS) {
    it(`${op} equals the JavaScript loops bit for bit`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const prims = fastPrimitives();
      const before = heap.liveBytes;
      PAIRS.forEach(([sa, sb], i) => {
        const a = tensorOf(sa, 2 * i + 1), b = tensorOf(sb, 2 * i + 2);
        // Ties for the comparisons: a quarter of b copied from a where shapes agree.
        if (sa.join() === sb.join()) for (let k = 0; k < a.data.length; k += 4) b.data[k] = a.data[k];
        const [want] = getOp(op).cpu([a, b], {});
        const [got] = getOp(op).cpu([a, b], {}, { prims });
        expect(got.shape).toEqual(want.shape);
        expectSame(got.data, want.data);
      });
      expect(heap.liveBytes).toBe(before);
    });
  }

  it('relu equals the bit-pattern loop (−0 → +0, NaN passes)', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    for (const shape of [[1, 13, 17, 19], [4097], [2, 64, 8, 8]]) {
      const x = tensorOf(shape, 5);
      expectSame(getOp('relu').cpu([x], {}, { prims: fastPrimitives() })[0].data, getOp('relu').cpu([x], {})[0].data);
    }
  });

  it('where equals the JavaScript loop on full-size and scalar operands (ragged sizes)', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const scalar = (v: number): CpuTensor => ({ data: new Float32Array([v]), shape: [], dtype: 'float32' });
    for (const shape of [[32, 512], [1, 7, 25, 27], [4099]]) {
      const n = shape.reduce((a, d) => a * d, 1);
      const cond: CpuTensor = { data: Uint8Array.from(randomFloats(n, 3), (v) => (v > 0 ? 1 : 0)), shape, dtype: 'bool' };
      for (const [a, b] of [[tensorOf(shape, 1), tensorOf(shape, 2)], [scalar(0), scalar(2)], [tensorOf(shape, 4), scalar(-0)], [scalar(NaN), tensorOf(shape, 5)]]) {
        const [want] = getOp('where').cpu([cond, a, b], {});
        const [got] = getOp('where').cpu([cond, a, b], {}, { prims: fastPrimitives() });
        expectSame(got.data, want.data);
      }
    }
  });

  it('runs the kernels from MIN_ELEMENTS up and leaves smaller tensors, other ops and int inputs to JavaScript', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const calls: string[] = [];
    const k = heap.k;
    const writable = heap as { k: typeof k };
    writable.k = new Proxy(k, { get: (t, name) => { calls.push(String(name)); return Reflect.get(t, name); } });
    try {
      const prims = fastPrimitives();
      const big = tensorOf([MIN_ELEMENTS], 1), small = tensorOf([MIN_ELEMENTS - 1], 2);
      const ints: CpuTensor = { data: new Int32Array(MIN_ELEMENTS).fill(3), shape: [MIN_ELEMENTS], dtype: 'int32' };
      getOp('mul').cpu([big, big], {}, { prims });
      getOp('gt').cpu([big, { data: new Float32Array([0]), shape: [], dtype: 'float32' }], {}, { prims });
      getOp('relu').cpu([big], {}, { prims });
      getOp('where').cpu([{ data: new Uint8Array(MIN_ELEMENTS), shape: [MIN_ELEMENTS], dtype: 'bool' }, big, big], {}, { prims });
      expect(calls).toEqual(['binaryF32', 'compareF32', 'reluF32', 'whereF32']);
      calls.length = 0;
      getOp('mul').cpu([small, small], {}, { prims });
      getOp('maximum').cpu([big, big], {}, { prims });
      getOp('log').cpu([big], {}, { prims });
      getOp('add').cpu([ints, ints], {}, { prims });
      expect(calls).toEqual([]);
    } finally {
      writable.k = k;
    }
  });
});
