// Winograd F(2×2, 3×3) in WebAssembly (winograd2.ts) against ir-spec's reference conv2d (which
// runs the same tiles in JavaScript, float64 sums): the digits CNN's shapes, odd output sizes (a
// tile half outside), output channels not a multiple of 4, paddings 0–2, bias and relu, a result
// computed into an offered array. The CPU device's conv2d must take it for a weight that is not a
// constant (same bits as calling it), and keep a constant (pinned) weight on the direct kernel;
// too few tiles for the per-call weight transform run the direct kernel too.

import { describe, expect, it } from 'vitest';
import { REFERENCE_PRIMITIVES, type Conv2dFn } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { fastPrimitives } from './primitives.js';
import { wasmWinograd2, winograd2Applies } from './winograd2.js';
import { randomFloats } from './test-helpers.js';

type ConvDims = Parameters<Conv2dFn>[3];
const heap = wasmKernels()!;
const f2 = wasmWinograd2(heap);
const prims = fastPrimitives();

function dims(N: number, C: number, H: number, W: number, Cout: number, pad: number): ConvDims {
  return { N, C, H, W, Cout, G: 1, OH: H + 2 * pad - 2, OW: W + 2 * pad - 2, win: { kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: pad, pl: pad } };
}

const CASES: [string, ConvDims, boolean][] = [
  ['digits conv2: 16→32 at 8×8, batch 32', dims(32, 16, 8, 8, 32, 1), false],
  ['digits input gradient: 32→16 at 8×8, batch 32', dims(32, 32, 8, 8, 16, 1), false],
  ['odd output 7×9, 66 output channels (a tail of 2), bias and relu', dims(12, 8, 7, 9, 66, 1), true],
  ['no padding (output 8×9)', dims(8, 16, 10, 11, 40, 0), true],
  ['padding 2', dims(8, 8, 6, 6, 64, 2), false],
  ['64→64 at 28×28, batch 2', dims(2, 64, 28, 28, 64, 1), true],
];

describe('WebAssembly conv2d as Winograd F(2×2, 3×3)', () => {
  for (const [name, d, epi] of CASES) {
    it(`${name}: the reference's numbers`, () => {
      expect(winograd2Applies(d)).toBe(true);
      const x = randomFloats(d.N * d.C * d.H * d.W, 1), w = randomFloats(d.Cout * d.C * 9, 2), bias = epi ? randomFloats(d.Cout, 3) : null;
      const e = epi ? { relu: true } : undefined;
      const want = REFERENCE_PRIMITIVES.conv2d(x, w, bias, d, e);
      const before = heap.liveBytes;
      const got = f2(x, w, bias, d, e);
      expect(heap.liveBytes).toBe(before);
      expect(got.length).toBe(want.length);
      // conv.test.ts's bound for float32 sums of K = 9C terms, times 4 for the transforms' adds.
      const K = 9 * d.C;
      for (let i = 0; i < got.length; i++) {
        if (!(Math.abs(got[i] - want[i]) <= 4e-7 * Math.sqrt(K) * (1 + Math.abs(want[i])) * 16)) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
      }
      // The CPU device's conv2d takes it for a weight that is not a constant: the same bits.
      expect(Array.from(prims.conv2d(x, w, bias, d, e))).toEqual(Array.from(got));
      // Into an offered array in the kernel memory, in place, with the same bits.
      const out = heap.residentArray(Float32Array, got.length)!;
      expect(f2(x, w, bias, d, { ...e, out })).toBe(out);
      expect(Array.from(out)).toEqual(Array.from(got));
    });
  }

  it('leaves a constant weight, and a call of few tiles, to the direct kernel', () => {
    const d = dims(32, 16, 8, 8, 32, 1);
    const x = randomFloats(d.N * d.C * d.H * d.W, 4), w = randomFloats(d.Cout * d.C * 9, 5);
    prims.pin(w);
    expect(Array.from(prims.conv2d(x, w, null, d))).toEqual(Array.from(prims.conv3x3!.direct(x, w, null, d)));
    const few = dims(1, 64, 8, 8, 64, 1); // 16 tiles
    expect(winograd2Applies(few)).toBe(false);
    const w2 = randomFloats(64 * 64 * 9, 6), x2 = randomFloats(64 * 64, 7);
    expect(Array.from(prims.conv2d(x2, w2, null, few))).toEqual(Array.from(prims.conv3x3!.direct(x2, w2, null, few)));
  });
});
