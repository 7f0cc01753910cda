// The WebAssembly Adam/AdamW update against ir-spec's adamStep: ragged lengths (odd, not
// multiples of 4), Adam with L2 decay, AdamW's decoupled decay, maximize, amsgrad, several steps
// in a row — parameters and state bit-identical; the kernel memory is returned.

import { describe, expect, it } from 'vitest';
import { REFERENCE_PRIMITIVES, type AdamScalars } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { wasmAdamStep } from './optim.js';
import { MIN_ELEMENTS } from './elementwise.js';
import { randomFloats } from './test-helpers.js';

function same(got: Float32Array, want: Float32Array, what: string): void {
  for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) throw new Error(`${what}[${i}] = ${got[i]}, want ${want[i]}`);
}

describe('WebAssembly Adam update', () => {
  const heap = wasmKernels();
  const variants: [string, Partial<AdamScalars>, boolean][] = [
    ['Adam', {}, false],
    ['Adam with L2 decay, maximize', { l2: 0.01, sign: -1 }, false],
    ['AdamW', { shrink: 1 - 1e-3 * 0.05 }, false],
    ['Adam amsgrad', { l2: 0.001 }, true],
  ];
  for (const n of [MIN_ELEMENTS, 4099, 32771]) {
    for (const [name, more, amsgrad] of variants) {
      it(`${name}, ${n} elements, 3 steps: identical to the reference`, () => {
        if (!heap) throw new Error('no WebAssembly SIMD in this engine');
        const step = wasmAdamStep(heap);
        const init = () => ({ p: randomFloats(n, 1), m: new Float32Array(n), v: new Float32Array(n), vmax: amsgrad ? new Float32Array(n) : null });
        const want = init(), got = init();
        const before = heap.liveBytes;
        for (let t = 1; t <= 3; t++) {
          const g = randomFloats(n, 10 + t);
          const s: AdamScalars = { shrink: 1, sign: 1, l2: 0, beta1: 0.9, beta2: 0.999, stepSize: 1e-3 / (1 - 0.9 ** t), bc2Sqrt: Math.sqrt(1 - 0.999 ** t), eps: 1e-8, ...more };
          REFERENCE_PRIMITIVES.adamStep(want.p, g, want.m, want.v, want.vmax, s);
          step(got.p, g, got.m, got.v, got.vmax, s);
        }
        same(got.p, want.p, 'p'); same(got.m, want.m, 'm'); same(got.v, want.v, 'v');
        if (amsgrad) same(got.vmax!, want.vmax!, 'vmax');
        expect(heap.liveBytes).toBe(before);
      });
    }
  }
});
