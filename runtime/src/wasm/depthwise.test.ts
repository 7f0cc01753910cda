// The WebAssembly depthwise conv2d against ir-spec's reference conv2dForward: channel multipliers
// 1–3, strides 1, 2 and 3, padding (symmetric and not), dilation, odd channel counts, output rows
// not a multiple of 8, batch 1 and 3, with and without bias, the relu epilogue into a given
// destination, a pinned weight, and the op entry (conv2d with groups == channels) through the
// fast primitives; the kernel memory is returned after each call.

import { describe, expect, it } from 'vitest';
import { getOp, REFERENCE_PRIMITIVES, type Conv2dFn } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { wasmDepthwiseConv2d } from './depthwise.js';
import { fastPrimitives } from './primitives.js';
import { PinnedArrays } from './pinned.js';
import { randomFloats } from './test-helpers.js';

interface Case { N: number; C: number; H: number; W: number; M: number; k: [number, number]; s: [number, number]; p: [number, number]; dl: [number, number]; bias: boolean; relu: boolean }
const c = (N: number, C: number, H: number, W: number, more: Partial<Case> = {}): Case =>
  ({ N, C, H, W, M: 1, k: [3, 3], s: [1, 1], p: [1, 1], dl: [1, 1], bias: true, relu: false, ...more });

const CASES: Case[] = [
  c(1, 32, 16, 16),
  c(3, 7, 13, 19, { bias: false }),
  c(2, 5, 23, 17, { s: [2, 2] }),
  c(1, 9, 31, 29, { s: [2, 2], p: [0, 0], relu: true }),
  c(2, 6, 14, 15, { M: 2, p: [2, 1], dl: [2, 1] }),
  c(1, 3, 20, 21, { M: 3, k: [5, 5], p: [2, 2], relu: true }),
  c(1, 11, 17, 26, { k: [3, 5], s: [3, 3], p: [1, 2] }),
  c(2, 4, 40, 81, { k: [1, 1], p: [0, 0], s: [1, 2] }),
  c(1, 8, 9, 9, { k: [7, 7], p: [3, 3], dl: [1, 1] }),
  c(1, 13, 10, 33, { s: [1, 2], p: [0, 1], M: 2 }),
];

function dims(t: Case): Parameters<Conv2dFn>[3] {
  const OH = Math.floor((t.H + 2 * t.p[0] - t.dl[0] * (t.k[0] - 1) - 1) / t.s[0]) + 1;
  const OW = Math.floor((t.W + 2 * t.p[1] - t.dl[1] * (t.k[1] - 1) - 1) / t.s[1]) + 1;
  return { N: t.N, C: t.C, H: t.H, W: t.W, Cout: t.C * t.M, G: t.C, OH, OW,
    win: { kh: t.k[0], kw: t.k[1], sh: t.s[0], sw: t.s[1], pt: t.p[0], pl: t.p[1], dh: t.dl[0], dw: t.dl[1] } };
}

function expectClose(got: Float32Array, want: Float32Array, K: number): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < got.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 2e-7 * K * (1 + Math.abs(want[i])))) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
  }
}

const noFallback: Conv2dFn = () => { throw new Error('fell back to the GEMM conv2d'); };

describe('WebAssembly depthwise conv2d', () => {
  const heap = wasmKernels();
  for (const t of CASES) {
    it(`N${t.N} C${t.C}×${t.M} ${t.H}x${t.W} k${t.k} s${t.s} p${t.p} d${t.dl}${t.bias ? '' : ' no bias'}${t.relu ? ' relu' : ''}`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const d = dims(t);
      const x = randomFloats(t.N * t.C * t.H * t.W, 1), w = randomFloats(t.C * t.M * t.k[0] * t.k[1], 2);
      const b = t.bias ? randomFloats(t.C * t.M, 3) : null;
      const before = heap.liveBytes;
      const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d, { relu: t.relu });
      const dst = new Float32Array(want.length);
      const got = wasmDepthwiseConv2d(heap, undefined, noFallback)(x, w, b, d, { relu: t.relu, out: dst });
      expect(got).toBe(dst);
      expectClose(got, want, t.k[0] * t.k[1]);
      if (t.relu) expect(got.every((v) => v >= 0 && !Object.is(v, -0))).toBe(true);
      expect(heap.liveBytes).toBe(before);
    });
  }

  it('keeps NaN and large magnitudes through the relu epilogue', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const t = c(1, 4, 16, 16, { relu: true }), d = dims(t);
    const x = randomFloats(4 * 256, 5).map((v) => v * 1e30);
    x[17] = NaN;
    const w = randomFloats(36, 6), b = randomFloats(4, 7);
    const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d, { relu: true });
    const got = wasmDepthwiseConv2d(heap, undefined, noFallback)(x, w, b, d, { relu: true });
    for (let i = 0; i < got.length; i++) {
      if (Number.isNaN(want[i])) { expect(got[i]).toBeNaN(); continue; }
      if (!(Math.abs(got[i] - want[i]) <= 1e-6 * 9 * 1e30)) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
    }
  });

  it('copies a pinned weight into the kernel memory once', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const pins = new PinnedArrays(heap);
    const t = c(2, 24, 18, 18, { M: 2 }), d = dims(t);
    const w = randomFloats(48 * 9, 9), b = randomFloats(48, 10);
    pins.pin(w);
    const conv = wasmDepthwiseConv2d(heap, pins, noFallback);
    const x1 = randomFloats(2 * 24 * 18 * 18, 11), x2 = randomFloats(2 * 24 * 18 * 18, 12);
    expectClose(conv(x1, w, b, d), REFERENCE_PRIMITIVES.conv2d(x1, w, b, d), 9);
    const kept = heap.liveBytes;
    expectClose(conv(x2, w, b, d), REFERENCE_PRIMITIVES.conv2d(x2, w, b, d), 9);
    expect(heap.liveBytes).toBe(kept);
  });

  it('leaves grouped (not depthwise) and tiny convolutions to the next conv2d', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    let calls = 0;
    const next: Conv2dFn = (...a) => { calls++; return REFERENCE_PRIMITIVES.conv2d(...a); };
    const conv = wasmDepthwiseConv2d(heap, undefined, next);
    const grouped = { ...dims(c(1, 8, 16, 16)), G: 4 };
    conv(randomFloats(8 * 256, 1), randomFloats(8 * 2 * 9, 2), null, grouped);
    const tiny = dims(c(1, 2, 4, 4));
    conv(randomFloats(32, 1), randomFloats(18, 2), null, tiny);
    expect(calls).toBe(2);
  });

  it('runs conv2d with groups == channels through the fast primitives', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const x = { data: randomFloats(2 * 10 * 15 * 15, 21), shape: [2, 10, 15, 15], dtype: 'float32' as const };
    const w = { data: randomFloats(20 * 9, 22), shape: [20, 1, 3, 3], dtype: 'float32' as const };
    const b = { data: randomFloats(20, 23), shape: [20], dtype: 'float32' as const };
    const attrs = { stride: [2, 2], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 10 };
    const [want] = getOp('conv2d').cpu([x, w, b], attrs);
    const [got] = getOp('conv2d').cpu([x, w, b], attrs, { prims: fastPrimitives() });
    expect(got.shape).toEqual(want.shape);
    expectClose(got.data as Float32Array, want.data as Float32Array, 9);
  });
});
