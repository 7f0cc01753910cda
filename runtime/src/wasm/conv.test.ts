// The WebAssembly conv2d against ir-spec's reference conv2dForward: strides, padding, dilation,
// groups, odd channel counts, non-square images and kernels, batch 1 and 3, with and without
// bias; the kernel memory is returned after each call.

import { describe, expect, it } from 'vitest';
import { REFERENCE_PRIMITIVES } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { wasmConv2d } from './conv.js';
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
      const got = wasmConv2d(heap)(x, w, b, d);
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
