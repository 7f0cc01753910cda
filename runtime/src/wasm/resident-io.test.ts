// Kernels reading operands where they lie in the kernel memory and writing results there
// (io.ts): for each WebAssembly-backed op (a training step's; exp/tanh, depthwise conv, amax, a
// fused elementwise body, the int8 linear), the results with every float operand and the offered
// output in resident arrays (WasmHeap.residentArray, as arena slots and recycled results are)
// must equal the results from ordinary arrays bit for bit, and be computed into the offered array
// itself; an offered output that is one of the inputs (an in-place plan) must give the same
// numbers too; unpadded direct convolutions, which read past the image, still get a zeroed copy;
// and every temporary block is returned.

import { describe, expect, it } from 'vitest';
import { getOp, programToBody, type CpuTensor } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';
import { fastPrimitives } from './primitives.js';
import { randomFloats } from './test-helpers.js';

const heap = wasmKernels()!;
const prims = fastPrimitives();
const numel = (shape: number[]) => shape.reduce((a, d) => a * d, 1);

function resident<T extends Float32Array | Int32Array | Uint8Array>(a: T): T {
  const r = heap.residentArray(a.constructor as new (b: ArrayBufferLike, at: number, n: number) => T, a.length)!;
  r.set(a as never);
  return r;
}

const f32 = (shape: number[], seed: number): CpuTensor => ({ data: randomFloats(numel(shape), seed), shape, dtype: 'float32' });
const inMemory = (t: CpuTensor | null): CpuTensor | null => (t && t.data instanceof Float32Array ? { ...t, data: resident(t.data) } : t);

const conv = (pad: number, stride = 1) => ({ stride: [stride, stride], padding: [pad, pad, pad, pad], dilation: [1, 1], groups: 1 });
const pool = { kernel_size: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1], ceil_mode: false };

/** `copied`: the result is made outside the kernel memory (a weight gradient's filter transform in JavaScript) and copied into the offer. */
const CASES: { name: string; op: string; inputs: (CpuTensor | null)[]; attrs: object; copied?: boolean }[] = [
  { name: 'mul', op: 'mul', inputs: [f32([32, 16, 8, 8], 1), f32([32, 16, 8, 8], 2)], attrs: {} },
  { name: 'add with a per-channel bias', op: 'add', inputs: [f32([32, 16, 8, 8], 3), f32([1, 16, 1, 1], 4)], attrs: {} },
  { name: 'relu', op: 'relu', inputs: [f32([32, 16, 8, 8], 5)], attrs: {} },
  { name: 'exp', op: 'exp', inputs: [f32([32, 16, 8, 8], 33)], attrs: {} },
  { name: 'tanh', op: 'tanh', inputs: [f32([4, 100], 34)], attrs: {} },
  { name: 'depthwise conv2d (x copied: the kernel reads past a plane)', op: 'conv2d', inputs: [f32([4, 16, 12, 12], 35), f32([16, 1, 3, 3], 36), f32([16], 37)], attrs: { ...conv(1), groups: 16 } },
  { name: 'conv2d, padded (direct kernel over a zero-bordered copy)', op: 'conv2d', inputs: [f32([32, 16, 8, 8], 6), f32([32, 16, 3, 3], 7), f32([32], 8)], attrs: conv(1) },
  { name: 'conv2d, unpadded (direct kernel over x itself: a zeroed copy)', op: 'conv2d', inputs: [f32([4, 16, 10, 10], 9), f32([16, 16, 3, 3], 10), null], attrs: conv(0) },
  { name: 'conv2d, strided and unpadded (im2col over x itself)', op: 'conv2d', inputs: [f32([4, 16, 11, 11], 29), f32([16, 16, 3, 3], 30), f32([16], 31)], attrs: conv(0, 2) },
  { name: 'conv2d, strided (im2col and GEMM)', op: 'conv2d', inputs: [f32([4, 16, 10, 10], 11), f32([16, 16, 3, 3], 12), f32([16], 13)], attrs: conv(1, 2) },
  { name: 'conv_transpose2d (input gradient)', op: 'conv_transpose2d', inputs: [f32([32, 32, 8, 8], 14), f32([32, 16, 3, 3], 15), null], attrs: { ...conv(1), output_padding: [0, 0] } },
  { name: 'conv2d_weight_grad, Winograd F(2×2, 3×3)', op: 'conv2d_weight_grad', inputs: [f32([32, 16, 8, 8], 16), f32([32, 32, 8, 8], 17)], attrs: { ...conv(1), kernel_size: [3, 3] }, copied: true },
  { name: 'conv2d_weight_grad, one input channel (patch rows)', op: 'conv2d_weight_grad', inputs: [f32([32, 1, 8, 8], 18), f32([32, 16, 8, 8], 19)], attrs: { ...conv(1), kernel_size: [3, 3] }, copied: true },
  { name: 'max_pool2d (values and indices)', op: 'max_pool2d', inputs: [f32([32, 32, 8, 8], 20)], attrs: pool },
  { name: 'matmul', op: 'matmul', inputs: [f32([64, 32], 21), f32([32, 512], 22)], attrs: {} },
  {
    name: 'batch_norm_backward with relu', op: 'batch_norm_backward', attrs: { eps: 1e-5 },
    inputs: [f32([32, 16, 8, 8], 23), f32([32, 16, 8, 8], 24), f32([16], 25), { ...f32([16], 26), data: randomFloats(16, 26).map((v) => 1 + Math.abs(v)) }, f32([16], 27), f32([32, 16, 8, 8], 28)],
  },
];

/** Arrays for the op's results: resident arrays of the results' types. */
const offers = (outs: readonly CpuTensor[]) => outs.map((o) => resident(new (o.data.constructor as new (n: number) => Float32Array)(o.data.length)));

describe('WebAssembly kernels over resident operands', () => {
  for (const c of CASES) {
    it(`${c.name}: in place, the same bits as from ordinary arrays`, () => {
      const def = getOp(c.op);
      const want = def.cpu(c.inputs, c.attrs as never, { prims });
      const ins = c.inputs.map(inMemory), out = offers(want);
      const before = heap.liveBytes;
      const got = def.cpu(ins, c.attrs as never, { prims, out });
      expect(heap.liveBytes).toBe(before);
      for (let i = 0; i < want.length; i++) expect(Array.from(got[i].data)).toEqual(Array.from(want[i].data));
      // The first result (the big one) went straight into the offered array (or was copied there).
      if (!c.copied) expect(got[0].data).toBe(out[0]);
      // The inputs were read, never written.
      for (let i = 0; i < ins.length; i++) if (ins[i]) expect(Array.from(ins[i]!.data)).toEqual(Array.from(c.inputs[i]!.data));
    });
  }

  it('an offered output that is an input (an in-place plan) gives the same numbers', () => {
    for (const op of ['mul', 'relu']) {
      const ins = op === 'mul' ? [f32([32, 16, 8, 8], 30), f32([32, 16, 8, 8], 31)] : [f32([32, 16, 8, 8], 32)];
      const want = getOp(op).cpu(ins, {}, { prims })[0];
      const a = resident(ins[0].data as Float32Array);
      const got = getOp(op).cpu([{ ...ins[0], data: a }, ...ins.slice(1)], {}, { prims, out: [a] })[0];
      expect(Array.from(got.data)).toEqual(Array.from(want.data));
    }
  });

  it('a fused elementwise body reads and writes resident arrays in place (n a multiple of 4), or copies (a ragged n)', () => {
    for (const n of [4096, 4099]) {
      const ins = [f32([n], 45), f32([n], 46)];
      const region = programToBody([['add', 'x0', 'x1'], ['relu', 't0']], 2);
      const want = getOp('fused_elementwise').cpu(ins, {}, { regions: [region], prims })[0];
      const out = resident(new Float32Array(n));
      const got = getOp('fused_elementwise').cpu(ins.map(inMemory), {}, { regions: [region], prims, out: [out] })[0];
      expect(got.data).toBe(out);
      expect(Array.from(out)).toEqual(Array.from(want.data));
    }
  });

  it('amax and the int8 linear read and write resident arrays in place', () => {
    const shape = [32, 16, 64], x = randomFloats(numel(shape), 41), rx = resident(x);
    const m = new Float32Array(32 * 64), rm = resident(new Float32Array(32 * 64));
    prims.extreme(x, shape, [1], m, true);
    prims.extreme(rx, shape, [1], rm, true);
    expect(Array.from(rm)).toEqual(Array.from(m));
    const w = Int8Array.from(randomFloats(64 * 512, 42), (v) => Math.round(v * 127)), scale = Float32Array.of(0.02), bias = randomFloats(64, 43);
    const y = new Float32Array(32 * 64), ry = resident(new Float32Array(32 * 64)), xs = randomFloats(32 * 512, 44);
    prims.quantizedLinear(32, 64, 512, xs, false, w, scale, bias, y, true);
    prims.quantizedLinear(32, 64, 512, resident(xs), false, w, scale, bias, ry, true);
    expect(Array.from(ry)).toEqual(Array.from(y));
  });

  it('the sum and batch-norm primitives read and write resident arrays in place', () => {
    const shape = [32, 16, 8, 8], x = randomFloats(numel(shape), 40), rx = resident(x);
    const sum = new Float32Array(16), rsum = resident(new Float32Array(16));
    prims.sum(x, shape, [0, 2, 3], sum);
    prims.sum(rx, shape, [0, 2, 3], rsum);
    expect(Array.from(rsum)).toEqual(Array.from(sum));
    const [m, v] = prims.batchNormStats(x, 32, 16, 64), [rm, rv] = prims.batchNormStats(rx, 32, 16, 64);
    expect([Array.from(rm), Array.from(rv)]).toEqual([Array.from(m), Array.from(v)]);
    const scale = Float64Array.from({ length: 16 }, (_, c) => 1 + c / 16), shift = Float64Array.from({ length: 16 }, (_, c) => c / 32 - 0.25);
    const y = prims.batchNormAffine(x, 32, 16, 64, scale, shift, new Float32Array(x.length));
    const into = resident(new Float32Array(x.length));
    expect(prims.batchNormAffine(rx, 32, 16, 64, scale, shift, into)).toBe(into);
    expect(Array.from(into)).toEqual(Array.from(y));
  });
});
