// The LSTM and GRU cells' gate math after the two GEMMs (packages/core/src/nn/rnn-cells.ts: the
// sigmoid/tanh/elementwise part) on the CPU device's WebAssembly primitives against ir-spec's
// reference: as eager mode runs it (one op at a time) and as a graph runs it once fusion has
// made the chain one fused_elementwise body; batch 1 and larger, hidden sizes that are not
// multiples of 4, pre-activations from small to saturating (|x| up to 30). Each gate is within
// 2 ulp; the cell outputs agree to a few ulps of their magnitude or of the pre-activations'.

import { describe, expect, it } from 'vitest';
import { getOp, programToBody, type CpuPrimitives, type CpuTensor, type LegacyInstruction } from '@kiln/ir-spec';
import { fastPrimitives } from './primitives.js';
import { wasmKernels } from './heap.js';
import { randomFloats } from './test-helpers.js';

type T = CpuTensor;
const op = (name: string, inputs: T[], prims?: CpuPrimitives): T => getOp(name).cpu(inputs, {}, prims ? { prims } : undefined)[0];

/** LSTM: gates i, f, g, o (each [B, H], x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh) and c → [h', c']. */
function lstm([i, f, g, o, c]: T[], p?: CpuPrimitives): [T, T] {
  const c2 = op('add', [op('mul', [op('sigmoid', [f], p), c], p), op('mul', [op('sigmoid', [i], p), op('tanh', [g], p)], p)], p);
  return [op('mul', [op('sigmoid', [o], p), op('tanh', [c2], p)], p), c2];
}
/** GRU: x·W_ih parts r, z, n, h·W_hh parts r, z, n, and h → h'. */
function gru([xr, xz, xn, hr, hz, hn, h]: T[], p?: CpuPrimitives): T {
  const r = op('sigmoid', [op('add', [xr, hr], p)], p), z = op('sigmoid', [op('add', [xz, hz], p)], p);
  const n = op('tanh', [op('add', [xn, op('mul', [r, hn], p)], p)], p);
  return op('add', [n, op('mul', [z, op('sub', [h, n], p)], p)], p);
}
// The same cells as fused bodies: LSTM c' from (i, f, g, c), h' from (o, c'); GRU h' from its seven inputs.
const LSTM_C: LegacyInstruction[] = [['sigmoid', 'x1'], ['mul', 't0', 'x3'], ['sigmoid', 'x0'], ['tanh', 'x2'], ['mul', 't2', 't3'], ['add', 't1', 't4']];
const LSTM_H: LegacyInstruction[] = [['sigmoid', 'x0'], ['tanh', 'x1'], ['mul', 't0', 't1']];
const GRU_H: LegacyInstruction[] = [
  ['add', 'x0', 'x3'], ['sigmoid', 't0'], ['add', 'x1', 'x4'], ['sigmoid', 't2'], ['mul', 't1', 'x5'], ['add', 'x2', 't4'],
  ['tanh', 't5'], ['sub', 'x6', 't6'], ['mul', 't3', 't7'], ['add', 't6', 't8'],
];
const fused = (program: LegacyInstruction[], ins: T[], p?: CpuPrimitives): T =>
  getOp('fused_elementwise').cpu(ins, {}, { regions: [programToBody(program, ins.length)], ...(p ? { prims: p } : {}) })[0];

/** Within 8 ulps of the larger of the output and the pre-activations' scale (a gate's 2-ulp error is scaled by the products after it). */
function close(got: T, want: T, what: string, scale: number): void {
  expect(got.data.length).toBe(want.data.length);
  for (let k = 0; k < got.data.length; k++) {
    const tol = 8 * 2 ** -23 * Math.max(1, scale, Math.abs(want.data[k]));
    if (!(Math.abs(got.data[k] - want.data[k]) <= tol)) throw new Error(`${what}: out[${k}] = ${got.data[k]}, want ${want.data[k]}`);
  }
}

const inputs = (n: number, B: number, H: number, scale: number, seed: number): T[] =>
  Array.from({ length: n }, (_, j) => ({ data: randomFloats(B * H, seed + j).map((v) => v * scale), shape: [B, H], dtype: 'float32' as const }));

describe('LSTM and GRU cell gate math on the WebAssembly primitives', () => {
  const heap = wasmKernels();
  for (const [B, H, scale] of [[1, 2053, 4], [32, 256, 3], [3, 701, 30], [64, 130, 0.5], [1, 64, 2]] as const) {
    it(`LSTM and GRU, batch ${B}, hidden ${H}, |pre-activation| ≤ ${scale}`, () => {
      if (!heap) throw new Error('no WebAssembly SIMD in this engine');
      const prims = fastPrimitives(), before = heap.liveBytes;
      const l = inputs(5, B, H, scale, B + H), [wh, wc] = lstm(l), [gh, gc] = lstm(l, prims);
      close(gc, wc, 'LSTM c', scale); close(gh, wh, 'LSTM h', scale);
      close(fused(LSTM_C, [l[0], l[1], l[2], l[4]], prims), wc, 'fused LSTM c', scale);
      close(fused(LSTM_H, [l[3], wc], prims), wh, 'fused LSTM h', scale);
      const g = inputs(7, B, H, scale, 2 * B + H), want = gru(g);
      close(gru(g, prims), want, 'GRU h', scale);
      close(fused(GRU_H, g, prims), want, 'fused GRU h', scale);
      expect(heap.liveBytes).toBe(before);
    });
  }
});
