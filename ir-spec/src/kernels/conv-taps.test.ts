// The in-bounds-taps convolutions (kernels/conv-taps.ts) against the GEMM-based reference
// (kernels/conv.ts) over strides, dilations, groups and padding up to all of the window, and
// conv_transpose2d's column blocks (a big kernel) against a plain scatter loop.

import { describe, expect, it } from 'vitest';
import { conv2dForward, conv2dWeightGrad, convTranspose2dForward, type ConvDims } from './conv.js';
import { conv2dValidTaps, conv2dWeightGradValidTaps, padsTooMuch } from './conv-taps.js';

function floats(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; a[i] = s / 2 ** 32 - 0.5; }
  return a;
}

function close(got: Float32Array, want: Float32Array, K: number): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < got.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= 1e-6 * Math.sqrt(K) * (1 + Math.abs(want[i])) * 4)) throw new Error(`[${i}] = ${got[i]}, want ${want[i]}`);
  }
}

const out = (size: number, k: number, s: number, p0: number, p1: number, dl: number) => Math.floor((size + p0 + p1 - dl * (k - 1) - 1) / s) + 1;

describe('convolutions over in-bounds taps', () => {
  const cases: [string, ConvDims][] = [];
  const add = (N: number, C: number, H: number, W: number, Cout: number, G: number, kh: number, kw: number, sh: number, sw: number, pt: number, pl: number, pb: number, pr: number, dh: number, dw: number) => {
    const d: ConvDims = { N, C, H, W, Cout, G, OH: out(H, kh, sh, pt, pb, dh), OW: out(W, kw, sw, pl, pr, dw), win: { kh, kw, sh, sw, pt, pl, dh, dw } };
    cases.push([`N${N} C${C} ${H}x${W} → ${Cout} g${G} k${kh}x${kw} s${sh},${sw} p${pt},${pl},${pb},${pr} d${dh},${dw}`, d]);
  };
  add(1, 1, 1, 1, 1, 1, 9, 9, 1, 1, 8, 8, 8, 8, 1, 1); // one pixel padded by kernel − 1
  add(2, 4, 5, 7, 6, 2, 3, 4, 2, 3, 2, 3, 1, 0, 2, 1);
  add(1, 3, 6, 6, 4, 1, 5, 5, 7, 7, 9, 9, 9, 9, 1, 1); // stride past the image
  add(3, 2, 4, 3, 2, 2, 2, 2, 1, 1, 5, 2, 5, 2, 3, 4); // dilation past the image
  add(1, 2, 8, 8, 3, 1, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1); // no padding
  for (const [name, d] of cases) {
    it(name, () => {
      const x = floats(d.N * d.C * d.H * d.W, 1), w = floats(d.Cout * (d.C / d.G) * d.win.kh * d.win.kw, 2), b = floats(d.Cout, 3);
      const K = (d.C / d.G) * d.win.kh * d.win.kw;
      close(conv2dValidTaps(x, w, b, d), conv2dForward(x, w, b, d), K);
      const gy = floats(d.N * d.Cout * d.OH * d.OW, 4);
      close(conv2dWeightGradValidTaps(x, gy, d), conv2dWeightGrad(x, gy, d), d.N * d.OH * d.OW);
    });
  }
  it('takes the path only for big copies that are mostly padding', () => {
    const win = { kh: 243, kw: 243, sh: 1, sw: 1, pt: 242, pl: 242, dh: 1, dw: 1 };
    expect(padsTooMuch({ N: 1, C: 1, H: 1, W: 1, Cout: 1, G: 1, OH: 243, OW: 243, win }, 1)).toBe(true);
    // A real layer: 5×5 over 64 channels of 512×512 with padding 2 (a copy of 17 M floats).
    const layer = { N: 1, C: 64, H: 512, W: 512, Cout: 64, G: 1, OH: 512, OW: 512, win: { kh: 5, kw: 5, sh: 1, sw: 1, pt: 2, pl: 2, dh: 1, dw: 1 } };
    expect(padsTooMuch(layer, 64)).toBe(false);
  });
});

describe('conv_transpose2d with a column buffer past its block size', () => {
  // Kc·H·W floats > 2^22: blocks of 65 rows and 992 taps; of 1997 rows and 1 tap.
  for (const [H, k, s, pt, pl] of [[65, 64, 2, 3, 1], [2100, 2, 2, 1, 0]]) {
    it(`scatters each block of input rows and kernel taps like the whole (${H}x${H}, kernel ${k})`, () => {
      const N = 1, C = 1, W = H, Cout = 1, kh = k, kw = k, sh = s, sw = s;
      const OH = (H - 1) * sh - 2 * pt + kh, OW = (W - 1) * sw - 2 * pl + kw;
      const d: ConvDims = { N, C, H, W, Cout, G: 1, OH, OW, win: { kh, kw, sh, sw, pt, pl, dh: 1, dw: 1 } };
      const x = floats(H * W, 5), w = floats(kh * kw, 6), b = floats(1, 7);
      const acc = new Float64Array(OH * OW);
      for (let iy = 0; iy < H; iy++) for (let ix = 0; ix < W; ix++) {
        for (let ky = 0; ky < kh; ky++) for (let kx = 0; kx < kw; kx++) {
          const oy = iy * sh - pt + ky, ox = ix * sw - pl + kx;
          if (oy >= 0 && oy < OH && ox >= 0 && ox < OW) acc[oy * OW + ox] += x[iy * W + ix] * w[ky * kw + kx];
        }
      }
      const want = new Float32Array(OH * OW);
      for (let i = 0; i < want.length; i++) want[i] = b[0] + acc[i];
      close(convTranspose2dForward(x, w, b, d), want, kh * kw);
    });
  }
});
