// The WebAssembly element body of fused_elementwise against ir-spec's JavaScript loop, through
// the op entry: add+relu (the residual block's body), chains with literals and with exp/sigmoid/tanh, every op the kernel
// has, on ragged sizes (not multiples of 4 or of its 256-float block), batch 1, odd channel
// counts, a broadcast input and NaN/±0/±inf values. A body of one node must be bit-identical; a
// chain equal up to float32 rounding of its intermediates; a body with an op the kernel lacks, or
// too few elements, must fall back (identical); and the kernel memory is returned.

import { describe, expect, it } from 'vitest';
import { getOp, programToBody, type CpuTensor, type LegacyInstruction } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { MIN_ELEMENTS } from './elementwise.js';
import { MIN_MATH_ELEMENTS } from './math.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

function tensorOf(shape: number[], seed: number): CpuTensor {
  const data = randomFloats(shape.reduce((a, d) => a * d, 1), seed);
  const special = [NaN, -0, 0, Infinity, -Infinity, 0.5, -0.5];
  for (let i = 0; i < data.length; i += 41) data[i] = special[(i / 41 + seed) % special.length];
  return { data, shape, dtype: 'float32' };
}

const run = (program: LegacyInstruction[], inputs: CpuTensor[], fast: boolean) =>
  getOp('fused_elementwise').cpu(inputs, {}, { regions: [programToBody(program, inputs.length)], ...(fast ? { prims: fastPrimitives() } : {}) })[0].data as Float32Array;

/** Max |got − want| / max(1, |want|), with NaN/±inf required at the same places (and equal). */
function relErr(got: Float32Array, want: Float32Array): number {
  expect(got.length).toBe(want.length);
  let e = 0;
  for (let i = 0; i < got.length; i++) {
    if (!Number.isFinite(want[i]) || !Number.isFinite(got[i])) {
      if (!Object.is(got[i], want[i])) throw new Error(`out[${i}] = ${got[i]}, want ${want[i]}`);
      continue;
    }
    e = Math.max(e, Math.abs(got[i] - want[i]) / Math.max(1, Math.abs(want[i])));
  }
  return e;
}

const SHAPES: number[][][] = [
  [[1, 16, 32, 32], [1, 16, 32, 32]], // the small ResNet's residual at batch 1
  [[3, 19, 13, 11], [3, 19, 13, 11]], // ragged, odd channels
  [[2, 19, 9, 7], [19, 1, 1]], // a per-channel operand (expanded before the kernel)
  [[2051], [2051]], // just above MIN_ELEMENTS, not a multiple of 4
];
const SINGLE: LegacyInstruction[][] = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum'].map((op) => [[op, 'x0', 'x1']]);
const UNARY: LegacyInstruction[][] = ['neg', 'relu', 'abs'].map((op) => [[op, 'x1']]);
const CHAINS: LegacyInstruction[][] = [
  [['add', 'x0', 'x1'], ['relu', 't0']],
  [['mul', 'x0', 0.5], ['add', 't0', 'x1'], ['relu', 't1']],
  [['sub', 'x0', 'x1'], ['abs', 't0'], ['maximum', 't1', 0.25], ['div', 't2', 3], ['neg', 't3']],
  [['minimum', 'x0', 'x1'], ['mul', 't0', 't0'], ['add', 't1', 'x0']], // a temporary read twice
  // exp, sigmoid and tanh (within 2 ulp each): softmax's shifted exponential, an LSTM cell's h
  [['sub', 'x0', 'x1'], ['exp', 't0']],
  [['sigmoid', 'x0'], ['mul', 'x1', 3], ['tanh', 't1'], ['mul', 't0', 't2']],
  [['exp', 'x0'], ['neg', 'x1'], ['sigmoid', 't1'], ['tanh', 't0'], ['add', 't2', 't3']],
];

describe('WebAssembly fused_elementwise body', () => {
  const heap = wasmKernels();
  it('one-node bodies equal the JavaScript loop bit for bit', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const before = heap.liveBytes;
    for (const program of [...SINGLE, ...UNARY]) {
      SHAPES.forEach(([sa, sb], i) => {
        const ins = [tensorOf(sa, 2 * i + 1), tensorOf(sb, 2 * i + 2)];
        const got = run(program, ins, true), want = run(program, ins, false);
        for (let k = 0; k < got.length; k++) if (!Object.is(got[k], want[k])) throw new Error(`${JSON.stringify(program)} ${sa}: out[${k}] = ${got[k]}, want ${want[k]}`);
      });
    }
    expect(heap.liveBytes).toBe(before);
  });

  it('chains equal the JavaScript loop up to float32 rounding of each node', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const before = heap.liveBytes;
    for (const program of CHAINS) {
      SHAPES.forEach(([sa, sb], i) => {
        const ins = [tensorOf(sa, 3 * i + 1), tensorOf(sb, 3 * i + 2)];
        expect(relErr(run(program, ins, true), run(program, ins, false))).toBeLessThan(1e-6);
      });
    }
    expect(heap.liveBytes).toBe(before);
  });

  it('takes the kernel only for its ops and enough elements', () => {
    if (!heap) throw new Error('no WebAssembly SIMD in this engine');
    const body = fastPrimitives().elementBody!;
    const big = [tensorOf([4099], 1).data, tensorOf([4099], 2).data], out = new Float32Array(4099);
    expect(body(programToBody([['add', 'x0', 'x1'], ['relu', 't0']], 2), big, out, 4099)).toBe(true);
    expect(body(programToBody([['add', 'x0', 'x1'], ['log', 't0']], 2), big, out, 4099)).toBe(false);
    const small = big.map((d) => d.slice(0, MIN_ELEMENTS - 1));
    expect(body(programToBody([['add', 'x0', 'x1']], 2), small, out.subarray(0, MIN_ELEMENTS - 1), MIN_ELEMENTS - 1)).toBe(false);
    // A body with e^x, sigmoid or tanh takes the kernel from MIN_MATH_ELEMENTS.
    const few = big.map((d) => d.slice(0, MIN_MATH_ELEMENTS));
    expect(body(programToBody([['add', 'x0', 'x1'], ['tanh', 't0']], 2), few, out.subarray(0, MIN_MATH_ELEMENTS), MIN_MATH_ELEMENTS)).toBe(true);
    expect(body(programToBody([['add', 'x0', 'x1'], ['tanh', 't0']], 2), few.map((d) => d.slice(1)), out.subarray(1, MIN_MATH_ELEMENTS), MIN_MATH_ELEMENTS - 1)).toBe(false);
    // A fallback body through the op still matches the reference exactly.
    const ins = [tensorOf([3, 19, 13, 11], 5), tensorOf([3, 19, 13, 11], 6)];
    const program: LegacyInstruction[] = [['add', 'x0', 'x1'], ['sqrt', 't0']];
    expect(run(program, ins, true)).toEqual(run(program, ins, false));
  });
});
