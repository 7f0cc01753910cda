// The WebAssembly Winograd weight gradient against ir-spec's reference through the
// conv2d_weight_grad entry: odd output sizes (tiles past the edge), odd tile counts per row
// (the two-tile SIMD step's single last tile), padding 0/1/2, batch 1, odd channel counts, and a
// convolution Winograd does not take (stride 2); with 1 and 2 threads (the 16 products may split
// over workers). Agreement to float32 rounding of the sums. Then the convolutions Winograd does
// not take (strides, 1×1, groups, dilation, a stem, several bands of output rows), which run as
// the row-major patch matrix and packed GEMMs.

import { afterAll, describe, expect, it } from 'vitest';
import { getOp, type CpuTensor } from '@kiln/ir-spec';
import { getNumThreads, setNumThreads, wasmKernels } from './heap.js';
import { setThreadHost } from './threads.js';
import { nodeThreadHost } from './node-threads.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

setThreadHost(nodeThreadHost);

interface Case { N: number; C: number; H: number; W: number; Cout: number; p: number; s: number }
const CASES: Case[] = [
  { N: 32, C: 16, H: 8, W: 8, Cout: 32, p: 1, s: 1 }, // the digits example's second conv
  { N: 1, C: 9, H: 13, W: 11, Cout: 5, p: 1, s: 1 }, // odd sizes: TW = 6 → odd OW tile edge
  { N: 3, C: 8, H: 10, W: 15, Cout: 7, p: 0, s: 1 }, // OH 8, OW 13: 7 tiles per row
  { N: 2, C: 11, H: 9, W: 9, Cout: 6, p: 2, s: 1 }, // padding 2
  { N: 2, C: 8, H: 12, W: 12, Cout: 8, p: 1, s: 2 }, // stride 2: not Winograd
];

describe('WebAssembly Winograd conv2d weight gradient', () => {
  const heap = wasmKernels();
  const threads = getNumThreads();
  afterAll(() => setNumThreads(threads));
  for (const t of CASES) {
    for (const n of [1, 2]) {
      it(`N${t.N} C${t.C} ${t.H}x${t.W} → ${t.Cout} p${t.p} s${t.s}, ${n} thread(s)`, () => {
        if (!heap) throw new Error('no WebAssembly SIMD in this engine');
        setNumThreads(n);
        const OH = Math.floor((t.H + 2 * t.p - 3) / t.s) + 1, OW = Math.floor((t.W + 2 * t.p - 3) / t.s) + 1;
        const x: CpuTensor = { data: randomFloats(t.N * t.C * t.H * t.W, 1), shape: [t.N, t.C, t.H, t.W], dtype: 'float32' };
        const gy: CpuTensor = { data: randomFloats(t.N * t.Cout * OH * OW, 2), shape: [t.N, t.Cout, OH, OW], dtype: 'float32' };
        const attrs = { kernel_size: [3, 3], stride: [t.s, t.s], padding: [t.p, t.p, t.p, t.p], dilation: [1, 1], groups: 1 };
        const before = heap.liveBytes;
        const [want] = getOp('conv2d_weight_grad').cpu([x, gy], attrs);
        const [got] = getOp('conv2d_weight_grad').cpu([x, gy], attrs, { prims: fastPrimitives() });
        expect(got.shape).toEqual(want.shape);
        const terms = t.N * OH * OW;
        for (let i = 0; i < want.data.length; i++) {
          if (!(Math.abs(got.data[i] - want.data[i]) <= 2e-6 * Math.sqrt(terms) * (1 + Math.abs(want.data[i])))) throw new Error(`dW[${i}] = ${got.data[i]}, want ${want.data[i]}`);
        }
        expect(heap.liveBytes).toBe(before);
      });
    }
  }

  it('runs the tile transforms in WebAssembly exactly when Winograd applies', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const calls: string[] = [];
    const k = heap.k, writable = heap as { k: typeof k };
    writable.k = new Proxy(k, { get: (o, name) => { if (String(name).startsWith('winograd')) calls.push(String(name)); return Reflect.get(o, name); } });
    try {
      for (const s of [1, 2]) {
        const x: CpuTensor = { data: randomFloats(2 * 8 * 8 * 8, 3), shape: [2, 8, 8, 8], dtype: 'float32' };
        const O = s === 1 ? 8 : 4;
        const gy: CpuTensor = { data: randomFloats(2 * 4 * O * O, 4), shape: [2, 4, O, O], dtype: 'float32' };
        getOp('conv2d_weight_grad').cpu([x, gy], { kernel_size: [3, 3], stride: [s, s], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 }, { prims: fastPrimitives() });
      }
      expect(calls).toEqual(['winogradInputTiles', 'winogradGradTiles']);
    } finally {
      writable.k = k;
    }
  });
});

/** Convolutions Winograd does not take: the patch matrix row-major (im2colRows) and packed GEMMs. */
interface GeneralCase { N: number; C: number; H: number; W: number; Cout: number; k: number; s: number; p: number; dil: number; G: number }
const GENERAL: GeneralCase[] = [
  { N: 32, C: 1, H: 8, W: 8, Cout: 16, k: 3, s: 1, p: 1, dil: 1, G: 1 }, // the digits example's first conv
  { N: 4, C: 16, H: 12, W: 11, Cout: 12, k: 1, s: 1, p: 0, dil: 1, G: 1 }, // 1×1
  { N: 2, C: 3, H: 13, W: 11, Cout: 8, k: 5, s: 1, p: 2, dil: 2, G: 1 }, // dilated, OW 7 (a SIMD row tail)
  { N: 4, C: 8, H: 16, W: 15, Cout: 8, k: 3, s: 2, p: 1, dil: 1, G: 2 }, // groups, stride 2
  { N: 1, C: 3, H: 30, W: 30, Cout: 8, k: 7, s: 2, p: 3, dil: 1, G: 1 }, // a stem
  { N: 1, C: 64, H: 112, W: 112, Cout: 8, k: 3, s: 2, p: 1, dil: 1, G: 1 }, // 7 bands of 8 output rows
];

describe('WebAssembly conv2d weight gradient through the patch matrix', () => {
  const heap = wasmKernels();
  const threads = getNumThreads();
  afterAll(() => setNumThreads(threads));
  for (const t of GENERAL) {
    for (const n of [1, 2]) {
      it(`N${t.N} C${t.C} ${t.H}x${t.W} → ${t.Cout} k${t.k} s${t.s} p${t.p} d${t.dil} g${t.G}, ${n} thread(s)`, () => {
        if (!heap) throw new Error('no WebAssembly SIMD in this engine');
        setNumThreads(n);
        const span = t.dil * (t.k - 1) + 1;
        const OH = Math.floor((t.H + 2 * t.p - span) / t.s) + 1, OW = Math.floor((t.W + 2 * t.p - span) / t.s) + 1;
        const x: CpuTensor = { data: randomFloats(t.N * t.C * t.H * t.W, 5), shape: [t.N, t.C, t.H, t.W], dtype: 'float32' };
        const gy: CpuTensor = { data: randomFloats(t.N * t.Cout * OH * OW, 6), shape: [t.N, t.Cout, OH, OW], dtype: 'float32' };
        const attrs = { kernel_size: [t.k, t.k], stride: [t.s, t.s], padding: [t.p, t.p, t.p, t.p], dilation: [t.dil, t.dil], groups: t.G };
        const calls: string[] = [];
        const k = heap.k, writable = heap as { k: typeof k };
        const before = heap.liveBytes;
        const [want] = getOp('conv2d_weight_grad').cpu([x, gy], attrs);
        writable.k = new Proxy(k, { get: (o, name) => { calls.push(String(name)); return Reflect.get(o, name); } });
        let got: CpuTensor;
        try {
          [got] = getOp('conv2d_weight_grad').cpu([x, gy], attrs, { prims: fastPrimitives() });
        } finally {
          writable.k = k;
        }
        expect(calls).toContain('im2colRows');
        expect(got.shape).toEqual(want.shape);
        const terms = t.N * OH * OW;
        for (let i = 0; i < want.data.length; i++) {
          if (!(Math.abs(got.data[i] - want.data[i]) <= 2e-6 * Math.sqrt(terms) * (1 + Math.abs(want.data[i])))) throw new Error(`dW[${i}] = ${got.data[i]}, want ${want.data[i]}`);
        }
        expect(heap.liveBytes).toBe(before);
      });
    }
  }
});
