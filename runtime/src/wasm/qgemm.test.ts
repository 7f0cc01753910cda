// The WebAssembly int8 product against ir-spec's qgemm: ragged sizes (K not a multiple of 16,
// N not of 4), extreme codes (x 0/255, w −128/127, zero points 0 and 255), the weight cached in
// the kernel memory reused across calls — sums identical.

import { describe, expect, it } from 'vitest';
import { REFERENCE_PRIMITIVES } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { wasmQgemm } from './qgemm.js';

describe('WebAssembly qgemm', () => {
  const heap = wasmKernels();
  const sizes = [[1, 4, 1024], [3, 7, 33], [4, 17, 100], [2, 64, 784], [1, 10, 512], [5, 3, 4095]];
  for (const [M, N, K] of sizes) {
    for (const zp of [0, 101, 255]) {
      it(`M=${M} N=${N} K=${K} zp=${zp}: identical to the reference`, () => {
        if (!heap) throw new Error('no WebAssembly SIMD in this engine');
        const q = wasmQgemm(heap);
        const w = Int8Array.from({ length: N * K }, (_, i) => (i % 7 === 0 ? -128 : i % 11 === 0 ? 127 : ((i * 53 + 7) % 256) - 128));
        for (const seed of [11, 29]) {
          const x = Uint8Array.from({ length: M * K }, (_, i) => (i % 5 === 0 ? 255 : i % 13 === 0 ? 0 : (i * seed + 3) % 256));
          const want = new Int32Array(M * N), got = new Int32Array(M * N);
          REFERENCE_PRIMITIVES.qgemm(M, N, K, x, zp, w, want);
          q(M, N, K, x, zp, w, got);
          expect(Array.from(got)).toEqual(Array.from(want));
        }
      });
    }
  }
});
