// The WebAssembly quantized linear against ir-spec's reference (quantizeActivations + qgemm +
// requantizeToFloat): ragged sizes (K not a multiple of 16 or 8, N not of 4), both activation
// ranges, per-tensor and per-channel scales, with and without bias, extreme weights (−128/127),
// activations with ties at .5, huge values, NaN and all-zero rows, with and without the fused
// relu, odd and even batch sizes (the kernel takes rows two at a time), the packed weight reused
// across calls of different batch sizes — outputs bit-identical.

import { describe, expect, it } from 'vitest';
import { REFERENCE_PRIMITIVES } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { wasmQuantizedLinear } from './qlinear.js';

const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('WebAssembly quantizedLinear', () => {
  const heap = wasmKernels();
  const sizes = [[1, 4, 1024], [3, 7, 33], [4, 17, 100], [1, 512, 784], [2, 64, 784], [1, 10, 512], [5, 3, 4095], [1, 9, 1000], [6, 33, 200]];
  for (const [M, N, K] of sizes) {
    for (const reduceRange of [true, false]) {
      for (const perChannel of [false, true]) {
        it(`M=${M} N=${N} K=${K} reduceRange=${reduceRange} ${perChannel ? 'per channel' : 'per tensor'}: identical to the reference`, () => {
          if (!heap) throw new Error('no WebAssembly SIMD in this engine');
          const q = wasmQuantizedLinear(heap);
          const w = Int8Array.from({ length: N * K }, (_, i) => (i % 7 === 0 ? -128 : i % 11 === 0 ? 127 : ((i * 53 + 7) % 256) - 128));
          const wScale = Float32Array.from({ length: perChannel ? N : 1 }, (_, i) => 0.001 + 0.0007 * i);
          const bias = Float32Array.from({ length: N }, (_, i) => Math.sin(i) * 3);
          for (const seed of [11, 29]) {
            for (const [b, relu] of [[bias, false], [null, true], [bias, true]] as const) {
              for (const m of [M, 1]) {
                // ties: multiples of the scale's half steps; one huge value; one NaN; one zero row.
                const x = Float32Array.from({ length: m * K }, (_, i) => (i % 97 === 0 ? 0.5 * (i % 9) : Math.sin(i * seed) * 2 - 0.3));
                if (seed === 29) { x[3 % x.length] = 1e30; x[5 % x.length] = NaN; }
                if (m > 1) x.fill(0, 0, K);
                const want = new Float32Array(m * N), got = new Float32Array(m * N);
                REFERENCE_PRIMITIVES.quantizedLinear(m, N, K, x, reduceRange, w, wScale, b, want, relu);
                q(m, N, K, x, reduceRange, w, wScale, b, got, relu);
                expect(bits(got)).toEqual(bits(want));
              }
            }
          }
        });
      }
    }
  }

  it('an all-negative and an all-zero activation (range clamped to hold 0)', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const q = wasmQuantizedLinear(heap);
    const [M, N, K] = [2, 8, 300];
    const w = Int8Array.from({ length: N * K }, (_, i) => ((i * 31) % 255) - 127);
    for (const x of [Float32Array.from({ length: M * K }, (_, i) => -1 - (i % 13) / 7), new Float32Array(M * K)]) {
      const want = new Float32Array(M * N), got = new Float32Array(M * N);
      REFERENCE_PRIMITIVES.quantizedLinear(M, N, K, x, true, w, new Float32Array([0.02]), null, want);
      q(M, N, K, x, true, w, new Float32Array([0.02]), null, got);
      expect(bits(got)).toEqual(bits(want));
    }
  });
});
