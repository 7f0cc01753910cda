// The WebAssembly conv2d (its direct and im2col kernels; Winograd F(2×2) is winograd2.test.ts's) against ir-spec's reference conv2dForward: strides, padding, dilation,
// groups, odd channel counts, non-square images and kernels, batch 1 and 3, with and without
// bias, patch matrices packed in bands of output rows; the kernel memory is returned after each call.

import { describe, expect, it } from 'vitest';
import { getOp, REFERENCE_PRIMITIVES, type CpuTensor } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { wasmConv2d } from './conv.js';
import { fastPrimitives } from './primitives.js';
import { PinnedArrays } from './pinned.js';
import { randomFloats } from './test-helpers.js';

interface Case { N: number; C: number; H: number; W: number; Cout: number; G: number; kh: number; kw: number; s: [number, number]; p: [number, number]; dl: [number, number]; bias: boolean }
const c = (N: number, C: number, H: number, W: number, Cout: number, kh: number, kw: number, more: Partial<Case> = {}): Case =>
  ({ N, C, H, W, Cout, G: 1, kh, kw, s: [1, 1], p: [0, 0], dl: [1, 1], bias: true, ...more });

const CASES: Case[] = [
  c(1, 3, 32, 32, 16, 3, 3, { p: [1, 1] }),
  c(3, 5, 9, 13, 7, 3, 3, { p: [1, 2], bias: false }),
  c(2, 8, 17, 11, 12, 5, 3, { s: [2, 1], p: [2, 1] }),
  c(1, 6, 15, 15, 10, 3, 3, { dl: [2, 2], p: [2, 2] }),
  c(2, 16, 8, 8, 32, 1, 1),
  c(1, 12, 10, 10, 24, 3, 3, { G: 3, p: [1, 1] }),
  c(1, 64, 16, 16, 128, 3, 3, { p: [1, 1] }),
  c(1, 3, 7, 7, 8, 7, 7, { s: [2, 2], p: [3, 3] }),
  // Packed in bands of output rows (conv.ts BAND_BYTES): a stem-like 7×7 stride 2 (7 bands), and
  // 2 bands whose boundary is not a multiple of 8 columns (OW 150), in groups, batch 2.
  c(1, 3, 224, 224, 64, 7, 7, { s: [2, 2], p: [3, 3] }),
  c(2, 8, 301, 301, 48, 3, 3, { s: [2, 2], G: 2 }),
  // A patch matrix past 16 MiB (K·P = 1600·35778 floats): packed a block of 19 output rows at a time.
  c(1, 1, 300, 300, 4, 40, 40, { s: [1, 2], p: [3, 3], bias: false }),
  // One output row's patch matrix past 16 MiB (K·OW = 4800·1061): a block of 873 columns at a time.
  c(1, 3, 42, 1100, 4, 40, 40, { s: [1, 1], p: [0, 0], bias: true }),
];

describe('WebAssembly conv2d', () => {
  const heap = wasmKernels();
  for (const t of CASES) {
    it(`N${t.N} C${t.C} ${t.H}x${t.W} → ${t.Cout} k${t.kh}x${t.kw} s${t.s} p${t.p} d${t.dl} g${t.G}${t.bias ? '' : ' no bias'}`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const OH = Math.floor((t.H + 2 * t.p[0] - t.dl[0] * (t.kh - 1) - 1) / t.s[0]) + 1;
      const OW = Math.floor((t.W + 2 * t.p[1] - t.dl[1] * (t.kw - 1) - 1) / t.s[1]) + 1;
      const d = { N: t.N, C: t.C, H: t.H, W: t.W, Cout: t.Cout, G: t.G, OH, OW,
        win: { kh: t.kh, kw: t.kw, sh: t.s[0], sw: t.s[1], pt: t.p[0], pl: t.p[1], dh: t.dl[0], dw: t.dl[1] } };
      const x = randomFloats(t.N * t.C * t.H * t.W, 1), w = randomFloats(t.Cout * (t.C / t.G) * t.kh * t.kw, 2);
      const b = t.bias ? randomFloats(t.Cout, 3) : null;
      const before = heap.liveBytes;
      const got = wasmConv2d(heap, undefined, () => false, () => false)(x, w, b, d);
      const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d);
      expect(got.length).toBe(want.length);
      const K = (t.C / t.G) * t.kh * t.kw;
      for (let i = 0; i < got.length; i++) {
        if (!(Math.abs(got[i] - want[i]) <= 4e-7 * Math.sqrt(K) * (1 + Math.abs(want[i])) * 4)) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
      }
      expect(heap.liveBytes).toBe(before);
    });
  }
});

describe('WebAssembly conv2d with pinned weights', () => {
  const heap = wasmKernels();
  const d = { N: 2, C: 8, H: 12, W: 12, Cout: 16, G: 1, OH: 12, OW: 12, win: { kh: 3, kw: 3, sh: 1, sw: 1, pt: 1, pl: 1, dh: 1, dw: 1 } };
  const K = 8 * 9;
  const close = (got: Float32Array, want: Float32Array, what: string) => {
    expect(got.length).toBe(want.length);
    for (let i = 0; i < got.length; i++) {
      if (!(Math.abs(got[i] - want[i]) <= 1e-4 * (1 + Math.abs(want[i])))) throw new Error(`${what}: out[${i}] = ${got[i]}, want ${want[i]}`);
    }
  };

  it('copies a pinned weight (and each block of one) into the kernel memory once, and keeps it', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const pins = new PinnedArrays(heap), conv = wasmConv2d(heap, pins);
    // The weight is a view into a bigger buffer, as a decoded file's constants are.
    const file = new Float32Array(16 * K + 100);
    file.set(randomFloats(16 * K, 5), 100);
    const w = file.subarray(100, 100 + 16 * K), x = randomFloats(2 * 8 * 144, 6), b = randomFloats(16, 7);
    pins.pin(w);
    const before = heap.liveBytes;
    const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d);
    close(conv(x, w, b, d), want, 'first call');
    const kept = heap.liveBytes - before;
    expect(kept).toBe(Math.ceil((16 * K * 4) / 64) * 64);
    close(conv(x, w, b, d), want, 'second call');
    expect(heap.liveBytes - before).toBe(kept);
    // A block of output channels (fused_conv2d's channel tiles) is a slice of the pinned weight: kept too, once.
    const half = { ...d, Cout: 8 };
    const lo = w.subarray(8 * K, 16 * K);
    close(conv(x, lo, b.subarray(8), half), REFERENCE_PRIMITIVES.conv2d(x, lo, b.subarray(8), half), 'block');
    conv(x, lo, b.subarray(8), half);
    expect(heap.liveBytes - before).toBe(kept + Math.ceil((8 * K * 4) / 64) * 64);
  });

  it('copies an unpinned weight on every call, so a changed weight is seen', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const pins = new PinnedArrays(heap), conv = wasmConv2d(heap, pins);
    const w = randomFloats(16 * K, 8), x = randomFloats(2 * 8 * 144, 9);
    pins.pin(new Float32Array(w.length)); // another array: w itself is not pinned
    const before = heap.liveBytes;
    conv(x, w, null, d);
    w.fill(0.5);
    close(conv(x, w, null, d), REFERENCE_PRIMITIVES.conv2d(x, w, null, d), 'after the write');
    expect(heap.liveBytes).toBe(before);
  });
});

describe('WebAssembly conv2d epilogue and padding', () => {
  // The epilogue (bias, relu, destination) and the zero-bordered copy a padded conv packs from:
  // padding below/right only (the windows reach past the image though no top/left padding), a
  // width that leaves part-filled panels, stride 2 with padding, batch 1 and 2.
  const heap = wasmKernels();
  const geo = (N: number, C: number, H: number, W: number, Cout: number, OH: number, OW: number, s: number, pt: number, pl: number) =>
    ({ N, C, H, W, Cout, G: 1, OH, OW, win: { kh: 3, kw: 3, sh: s, sw: s, pt, pl, dh: 1, dw: 1 } });
  const cases = [
    ['padding below and right only', geo(1, 5, 9, 10, 8, 9, 10, 1, 0, 0)],
    ['odd width, padding 1', geo(2, 7, 11, 13, 12, 11, 13, 1, 1, 1)],
    ['stride 2, padding 1', geo(1, 6, 15, 17, 8, 8, 9, 2, 1, 1)],
    ['16 channels, 32×32 (the benchmark ResNet)', geo(1, 16, 32, 32, 16, 32, 32, 1, 1, 1)],
  ] as const;
  for (const [name, d] of cases) {
    for (const relu of [false, true]) {
      it(`${name}${relu ? ', relu' : ''}, into a given array`, () => {
        if (!heap) throw new Error('no WebAssembly SIMD in this engine');
        const K = d.C * 9, x = randomFloats(d.N * d.C * d.H * d.W, 11), w = randomFloats(d.Cout * K, 12), b = randomFloats(d.Cout, 13);
        const before = heap.liveBytes;
        const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d, { relu });
        const out = new Float32Array(want.length).fill(Number.NaN);
        const got = wasmConv2d(heap, undefined, () => false, () => false)(x, w, b, d, { relu, out });
        expect(got).toBe(out);
        for (let i = 0; i < want.length; i++) {
          if (!(Math.abs(got[i] - want[i]) <= 1e-5 * Math.sqrt(K) * (1 + Math.abs(want[i])))) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
        }
        if (relu) expect(got.every((v) => v >= 0)).toBe(true);
        expect(heap.liveBytes).toBe(before);
      });
    }
  }

  it('relu keeps NaN and maps -0 to 0, as the reference', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const d = geo(1, 4, 12, 12, 8, 12, 12, 1, 1, 1);
    const x = randomFloats(4 * 144, 14), w = randomFloats(8 * 36, 15), b = randomFloats(8, 16);
    x[5 * 12 + 5] = Number.NaN; // poisons the windows around (5, 5) of every output channel
    const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d, { relu: true });
    const got = wasmConv2d(heap, undefined, () => false, () => false)(x, w, b, d, { relu: true });
    for (let i = 0; i < want.length; i++) expect(Object.is(got[i], want[i]) || Math.abs(got[i] - want[i]) <= 1e-4).toBe(true);
    expect(got.some((v) => Number.isNaN(v))).toBe(true);
  });
});

describe('conv ops with the CPU device primitives', () => {
  // conv2d's gradients (conv_transpose2d for the input, conv2d_weight_grad for the weight) run
  // their products through the same primitives: equal to the reference kernels up to rounding.
  const attrs = (op: string, more: Record<string, unknown>) => getOp(op).attrs.parse(more);
  const t = (shape: number[], seed: number): CpuTensor => ({ data: randomFloats(shape.reduce((a, b) => a * b, 1), seed), shape, dtype: 'float32' });
  const cases: [string, (CpuTensor | null)[], Record<string, unknown>][] = [
    ['conv_transpose2d, unit stride', [t([2, 16, 8, 8], 1), t([16, 12, 3, 3], 2), t([12], 3)], { padding: [1, 1, 1, 1] }],
    ['conv_transpose2d, stride 2', [t([2, 16, 8, 8], 4), t([16, 12, 3, 3], 5), null], { stride: [2, 2], padding: [1, 1, 1, 1], output_padding: [1, 1] }],
    ['conv2d_weight_grad, Winograd', [t([4, 16, 8, 8], 6), t([4, 24, 8, 8], 7)], { padding: [1, 1, 1, 1], kernel_size: [3, 3] }],
    ['conv2d_weight_grad, strided', [t([3, 8, 9, 9], 8), t([3, 16, 4, 4], 9)], { stride: [2, 2], kernel_size: [3, 3] }],
    ['fused_conv2d, relu in the epilogue', [t([2, 16, 10, 10], 10), t([16, 16, 3, 3], 11), t([16], 12)], { padding: [1, 1, 1, 1], activation: 'relu' }],
    ['fused_conv2d, tanh after', [t([1, 8, 9, 9], 13), t([12, 8, 3, 3], 14), null], { stride: [2, 2], padding: [1, 1, 1, 1], activation: 'tanh' }],
    ['fused_conv2d, relu and max pool', [t([2, 8, 12, 12], 15), t([16, 8, 3, 3], 16), t([16], 17)], { padding: [1, 1, 1, 1], activation: 'relu', pool: { kernel_size: [2, 2], stride: [2, 2] } }],
    ['conv2d', [t([1, 16, 16, 16], 18), t([16, 16, 3, 3], 19), t([16], 20)], { padding: [1, 1, 1, 1] }],
  ];
  /** Kernels that compute straight into the offered buffer (no copy into the slot afterwards). */
  const intoOffered = new Set(['conv_transpose2d, unit stride', 'conv2d']);
  for (const [name, inputs, more] of cases) {
    it(name, () => {
      const op = name.split(',')[0];
      const want = getOp(op).cpu(inputs, attrs(op, more))[0];
      // An offered result buffer (the runtime's arena slot) holds stale values: all must be overwritten.
      const stale = new Float32Array(want.data.length).fill(Number.NaN);
      const got = getOp(op).cpu(inputs, attrs(op, more), { prims: fastPrimitives(), out: [stale] })[0];
      expect(got.shape).toEqual(want.shape);
      if (intoOffered.has(name)) expect(got.data).toBe(stale);
      for (let i = 0; i < want.data.length; i++) {
        if (!(Math.abs(got.data[i] - want.data[i]) <= 1e-4 * (1 + Math.abs(want.data[i])))) throw new Error(`${name}: [${i}] = ${got.data[i]}, want ${want.data[i]}`);
      }
    });
  }
});
