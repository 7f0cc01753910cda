// The WebAssembly Winograd F(4×4, 3×3) conv2d against ir-spec's reference conv2dForward: ragged
// tile edges (output sizes not multiples of 4 or 16), odd channel counts, padding 0 and 1, batch
// 1 and > 1, with and without bias and relu, a chunked tile range, pinned weights transformed
// once; the kernel memory is returned after each call.

import { describe, expect, it } from 'vitest';
import { REFERENCE_PRIMITIVES } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { PinnedArrays } from './pinned.js';
import { wasmWinograd4, winograd4Applies, winograd4Fits } from './winograd.js';
import { randomFloats } from './test-helpers.js';

interface Case { N: number; C: number; H: number; W: number; Cout: number; p: number; bias: boolean; relu: boolean }
const CASES: Case[] = [
  { N: 1, C: 3, H: 8, W: 8, Cout: 4, p: 1, bias: true, relu: false },
  { N: 2, C: 5, H: 9, W: 13, Cout: 7, p: 1, bias: false, relu: true },
  { N: 1, C: 16, H: 32, W: 32, Cout: 16, p: 1, bias: true, relu: true },
  { N: 3, C: 17, H: 11, W: 21, Cout: 9, p: 0, bias: true, relu: false },
  { N: 2, C: 64, H: 16, W: 16, Cout: 128, p: 1, bias: true, relu: true },
  { N: 1, C: 33, H: 7, W: 38, Cout: 20, p: 0, bias: false, relu: false },
  { N: 4, C: 8, H: 3, W: 3, Cout: 5, p: 1, bias: true, relu: true },
  { N: 1, C: 300, H: 6, W: 6, Cout: 12, p: 1, bias: true, relu: false },
  { N: 9, C: 24, H: 20, W: 20, Cout: 24, p: 1, bias: true, relu: true },
];

const dims = (t: Case) => {
  const OH = t.H + 2 * t.p - 2, OW = t.W + 2 * t.p - 2;
  return { N: t.N, C: t.C, H: t.H, W: t.W, Cout: t.Cout, G: 1, OH, OW, win: { kh: 3, kw: 3, sh: 1, sw: 1, pt: t.p, pl: t.p, dh: 1, dw: 1 } };
};

/**
 * F(4×4)'s transforms multiply by up to 8 and 1/24 before the sum, so its error is ~10× the
 * direct sum's: the conv tests' bound (4e-7·√K·(1 + |y|)·4) times 16, scaled by the inputs' and
 * weights' magnitude (uniform in [-1, 1) here).
 */
function expectClose(got: Float32Array, want: Float32Array, K: number): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < got.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 4e-7 * Math.sqrt(K) * (1 + Math.abs(want[i])) * 64)) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
  }
}

describe('WebAssembly Winograd F(4×4, 3×3) conv2d', () => {
  const heap = wasmKernels();
  for (const t of CASES) {
    it(`N${t.N} C${t.C} ${t.H}x${t.W} → ${t.Cout} p${t.p}${t.bias ? ' bias' : ''}${t.relu ? ' relu' : ''}`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const d = dims(t);
      const x = randomFloats(t.N * t.C * t.H * t.W, 11), w = randomFloats(t.Cout * t.C * 9, 12);
      const b = t.bias ? randomFloats(t.Cout, 13) : null;
      const before = heap.liveBytes;
      const into = new Float32Array(t.N * t.Cout * d.OH * d.OW).fill(NaN);
      const got = wasmWinograd4(heap)(x, w, b, d, { relu: t.relu, out: into });
      expect(got).toBe(into);
      const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d, { relu: t.relu });
      expectClose(got, want, t.C * 9);
      expect(heap.liveBytes).toBe(before);
    });
  }

  it('keeps a pinned weight’s transform (one block per constant and view) and frees nothing else', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const t = CASES[4], d = dims(t);
    const pins = new PinnedArrays(heap), conv = wasmWinograd4(heap, pins);
    const w = randomFloats(t.Cout * t.C * 9, 21), x = randomFloats(t.N * t.C * t.H * t.W, 22), b = randomFloats(t.Cout, 23);
    pins.pin(w);
    const before = heap.liveBytes;
    const want = REFERENCE_PRIMITIVES.conv2d(x, w, b, d);
    expectClose(conv(x, w, b, d), want, t.C * 9);
    const kept = heap.liveBytes - before;
    expect(kept).toBe(Math.ceil((36 * t.Cout * t.C * 4) / 64) * 64);
    expectClose(conv(x, w, b, d), want, t.C * 9);
    expect(heap.liveBytes - before).toBe(kept);
  });

  it('passes NaN through relu and refuses shapes it cannot run', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const t = CASES[2], d = dims(t);
    const x = randomFloats(t.C * t.H * t.W, 31), w = randomFloats(t.Cout * t.C * 9, 32);
    x[5 * 32 + 7] = NaN;
    const got = wasmWinograd4(heap)(x, w, null, d, { relu: true });
    expect(Number.isNaN(got[4 * 32 + 6])).toBe(true);
    expect(got.every((v) => Number.isNaN(v) || v >= 0)).toBe(true);
    const strided = { ...d, OH: 16, OW: 16, win: { ...d.win, sh: 2, sw: 2 } };
    expect(winograd4Fits(strided)).toBe(false);
    expect(winograd4Applies(strided)).toBe(false);
    expect(() => wasmWinograd4(heap)(x, w, null, strided)).toThrow(/3×3, stride-1/);
  });
});
