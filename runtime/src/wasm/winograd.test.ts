// The WebAssembly Winograd F(4×4, 3×3) conv2d against ir-spec's reference conv2dForward: ragged
// tile edges (output sizes not multiples of 4 or 16), odd channel counts, padding 0 and 1, batch
// 1 and > 1, with and without bias and relu, a chunked tile range, pinned weights transformed
// once; the kernel memory is returned after each call.

import { describe, expect, it } from 'vitest';
import { REFERENCE_PRIMITIVES } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { PinnedArrays } from './pinned.js';
import { wasmWinograd4, winograd4Applies, winograd4Fits } from './winograd.js';
import { wasmConv2d } from './conv.js';
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

  it('random shapes (seeded): sizes 1–23, channels 1–40, padding 0/1, batch 1–3, epilogue or none', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const r = randomFloats(12 * 8, 41).map((v) => (v + 1) / 2);
    const pick = (u: number, lo: number, hi: number) => lo + Math.floor(u * (hi - lo + 1));
    for (let i = 0; i < 12; i++) {
      const u = r.subarray(i * 8, i * 8 + 8), p = u[0] < 0.5 ? 0 : 1;
      const t: Case = { N: pick(u[1], 1, 3), C: pick(u[2], 1, 40), Cout: pick(u[3], 1, 40), H: pick(u[4], 3 - 2 * p, 23), W: pick(u[5], 3 - 2 * p, 23), p, bias: u[6] < 0.5, relu: u[7] < 0.5 };
      const d = dims(t);
      const x = randomFloats(t.N * t.C * t.H * t.W, 50 + i), w = randomFloats(t.Cout * t.C * 9, 70 + i), b = t.bias ? randomFloats(t.Cout, 90 + i) : null;
      const epi = t.relu ? { relu: true } : undefined;
      expectClose(wasmWinograd4(heap)(x, w, b, d, epi), REFERENCE_PRIMITIVES.conv2d(x, w, b, d, epi), t.C * 9);
    }
  });

  it('conv2d dispatch: a pinned weight takes F(4×4) where winograd4Applies, an unpinned one or another shape does not', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const pins = new PinnedArrays(heap), conv = wasmConv2d(heap, pins);
    // Two calls with one weight: a pinned one's first call defers its transform and runs the
    // direct conv (keeping the weight's plain copy), the second makes (settles) the transform.
    const run = (t: Case, pin: boolean) => {
      const d = dims(t), w = randomFloats(t.Cout * t.C * 9, 61), x = randomFloats(t.N * t.C * t.H * t.W, 62);
      if (pin) pins.pin(w);
      const before = heap.liveBytes;
      for (let call = 0; call < 2; call++) expectClose(conv(x, w, null, d, { relu: true }), REFERENCE_PRIMITIVES.conv2d(x, w, null, d, { relu: true }), t.C * 9);
      return { applies: winograd4Applies(d), kept: heap.liveBytes - before };
    };
    const big = { N: 1, C: 32, H: 16, W: 16, Cout: 24, p: 1, bias: false, relu: true };
    const plain = (C: number) => Math.ceil((24 * C * 9 * 4) / 64) * 64;
    // Kept: the 36 transformed slabs (F(4×4)) and the first call's plain copy, else the plain copy alone (direct/im2col conv).
    expect(run(big, true)).toEqual({ applies: true, kept: Math.ceil((36 * 24 * 32 * 4) / 64) * 64 + plain(32) });
    expect(run(big, false)).toEqual({ applies: true, kept: 0 });
    expect(run({ ...big, C: 3 }, true)).toEqual({ applies: false, kept: plain(3) });
  });

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
