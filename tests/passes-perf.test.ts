// The -O2 conv path (issues 6 and 14): fused_conv2d on the CPU runs the device's conv primitive
// (WebAssembly SIMD im2col + GEMM) with its activation and max-pool epilogue; files keep weights
// in plain OIHW (devices pack them at load: the WebGPU packer is tested in webgpu-models.test.ts);
// files written before issue 14 with hi/lo Winograd weights (fused_conv2d {layout="winograd4x4"})
// still load and compute the same conv. Every case checks numbers: fused_conv2d against conv2d
// (+ activation + max_pool2d) and a float64 convolution, the optimized seed model against eager
// at several batch sizes and after a `.tsgraph` round trip. Speed is measured by
// `npm run bench:peers:cpu`, not here.

import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { decodeTsgraph, encodeTsgraph, fused, getOp, GraphBuilder, parseOpAttrs, tensorType, walkNodes, type CpuPrimitives, type CpuTensor, type TensorData } from '@kiln/ir-spec';
import { createModel, type Output } from '@kiln/runtime';
import { fastPrimitives } from '../runtime/src/wasm/primitives.js';
import { LEVELS, runPipeline } from '@kiln/compiler';
import { jit, manualSeed, noGrad, rand, randn, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/seed/models.mjs';
import { rng } from './helpers/rng.js';
import { weights } from './fixtures/tsgraph-graphs.js';

const uniform = rng(6), next = () => uniform() * 2 - 1; // seeded, in [-1, 1)
const tensor = (shape: number[]): CpuTensor => ({ dtype: 'float32', shape, data: Float32Array.from({ length: shape.reduce((a, d) => a * d, 1) }, next) });

/**
 * |got − want| ≤ atol + 1e-5·|want| element by element (NaN matches NaN). Two float32
 * convolutions summing in different orders (direct, F(2×2), F(4×4)) differ by ~1e-7 of the
 * output's scale, so kernel-vs-kernel checks pass atol = 1e-5 · RMS(want) (scaleTol).
 */
function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, what: string, atol = 1e-6): void {
  expect(got.length, what).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const a = got[i], b = want[i];
    if (!(Math.abs(a - b) <= atol + 1e-5 * Math.abs(b)) && !(Number.isNaN(a) && Number.isNaN(b))) expect.fail(`${what}: element ${i} is ${a}, expected ${b}`);
  }
}

/** 1e-5 of the root mean square of `v`: the absolute tolerance between two float32 convolutions. */
function scaleTol(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  return 1e-5 * Math.sqrt(s / Math.max(1, v.length));
}

interface Case { N: number; C: number; H: number; W: number; Cout: number; pad: [number, number, number, number] }

/** Primitives that count the conv2d calls they pass on to `inner`. */
function counting(inner: CpuPrimitives): CpuPrimitives & { convs: number } {
  const p = { ...inner, convs: 0, conv2d: (...args: Parameters<CpuPrimitives['conv2d']>) => { p.convs++; return inner.conv2d(...args); } };
  return p;
}

/** conv2d in float64, the accuracy reference. */
function conv64(x: CpuTensor, w: CpuTensor, c: Case): Float64Array {
  const OH = c.H + c.pad[0] + c.pad[2] - 2, OW = c.W + c.pad[1] + c.pad[3] - 2;
  const out = new Float64Array(c.N * c.Cout * OH * OW);
  for (let n = 0; n < c.N; n++) for (let co = 0; co < c.Cout; co++) for (let oy = 0; oy < OH; oy++) for (let ox = 0; ox < OW; ox++) {
    let s = 0;
    for (let ci = 0; ci < c.C; ci++) for (let ky = 0; ky < 3; ky++) for (let kx = 0; kx < 3; kx++) {
      const iy = oy + ky - c.pad[0], ix = ox + kx - c.pad[1];
      if (iy >= 0 && iy < c.H && ix >= 0 && ix < c.W) s += x.data[((n * c.C + ci) * c.H + iy) * c.W + ix] * w.data[((co * c.C + ci) * 3 + ky) * 3 + kx];
    }
    out[((n * c.Cout + co) * OH + oy) * OW + ox] = s;
  }
  return out;
}

const CASES: Case[] = [
  { N: 1, C: 64, H: 16, W: 16, Cout: 128, pad: [1, 1, 1, 1] }, // the seed model's second conv
  { N: 2, C: 3, H: 13, W: 10, Cout: 6, pad: [1, 1, 1, 1] }, // partial tiles, Cout % 4 ≠ 0
  { N: 1, C: 8, H: 7, W: 9, Cout: 5, pad: [0, 0, 0, 0] },
  { N: 3, C: 1, H: 5, W: 6, Cout: 4, pad: [2, 0, 1, 2] }, // asymmetric padding
];

describe('fused_conv2d on the CPU', () => {
  for (const c of CASES) {
    it(`equals conv2d and a float64 conv through the device primitives: N${c.N} C${c.C} ${c.H}×${c.W} → ${c.Cout}, padding ${c.pad}`, () => {
      const x = tensor([c.N, c.C, c.H, c.W]), w = tensor([c.Cout, c.C, 3, 3]), b = tensor([c.Cout]);
      const conv = { stride: [1, 1], padding: c.pad, dilation: [1, 1], groups: 1 };
      const want = getOp('conv2d').cpu([x, w, b], conv)[0];
      const prims = counting(fastPrimitives());
      const got = getOp('fused_conv2d').cpu([x, w, b], { ...conv, activation: 'none', pool: null }, { prims })[0];
      expect(prims.convs).toBe(1);
      expect(got.shape).toEqual(want.shape);
      expectClose(got.data, want.data, 'vs conv2d', scaleTol(want.data));
      const exact = conv64(x, w, c);
      const nobias = getOp('fused_conv2d').cpu([x, w], { ...conv, activation: 'none', pool: null }, { prims })[0].data;
      let rms = 0, worst = 0;
      for (let i = 0; i < exact.length; i++) { rms += exact[i] * exact[i]; worst = Math.max(worst, Math.abs(nobias[i] - exact[i])); }
      expect(worst / Math.sqrt(rms / exact.length)).toBeLessThan(1e-5);
    });
  }

  it('with activation and max pool: the device conv in image or channel tiles, then the pool epilogue', () => {
    // [2, 64, 16, 16] runs both images in one tile; 130² planes run in output-channel blocks
    // (15 + 5); a 3×2 window takes the generic pool; 9×9 drops a last row and column.
    for (const [N, C, H, Cout, act, k, s, calls] of [[2, 64, 16, 128, 'relu', 2, 2, 1], [1, 2, 130, 20, 'relu', 2, 2, 2], [2, 5, 9, 6, 'sigmoid', 3, 2, 1], [1, 3, 9, 7, 'tanh', 2, 2, 1]] as const) {
      const x = tensor([N, C, H, H]), w = tensor([Cout, C, 3, 3]), b = tensor([Cout]);
      const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
      const pool = { kernel_size: [k, k], stride: [s, s] };
      let want = getOp('conv2d').cpu([x, w, b], conv)[0];
      want = getOp(act).cpu([want], {})[0];
      want = getOp('max_pool2d').cpu([want], { ...pool, padding: [0, 0], dilation: [1, 1], ceil_mode: false })[0];
      const prims = counting(fastPrimitives());
      const got = getOp('fused_conv2d').cpu([x, w, b], { ...conv, activation: act, pool }, { prims })[0];
      expect(prims.convs, `conv primitive calls for ${H}×${H}`).toBe(calls);
      expect(got.shape).toEqual(want.shape);
      expectClose(got.data, want.data, `${act} pool ${k}/${s} on ${H}×${H}`, scaleTol(want.data));
    }
  });

  it('keeps a NaN in a pool window, as max_pool2d does', () => {
    const x = tensor([1, 4, 8, 8]), w = tensor([4, 4, 3, 3]);
    x.data[2 * 8 + 5] = NaN; // channel 0, row 2, column 5
    const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
    const pool = { kernel_size: [2, 2], stride: [2, 2] };
    const want = getOp('max_pool2d').cpu([getOp('relu').cpu([getOp('conv2d').cpu([x, w], conv)[0]], {})[0]], { ...pool, padding: [0, 0], dilation: [1, 1], ceil_mode: false })[0];
    const got = getOp('fused_conv2d').cpu([x, w], { ...conv, activation: 'relu', pool }, { prims: fastPrimitives() })[0];
    expect(Array.from(want.data).some(Number.isNaN)).toBe(true);
    expectClose(got.data, want.data, 'NaN propagation');
  });
});

describe('files written before issue 14: fused_conv2d {layout="winograd4x4"}', () => {
  // tests/fixtures/winograd-legacy.tsgraph was written by the prepack-weights pass: two 3×3 convs
  // (one with relu and a 2×2 pool) over the exact weights of `weights()`, stored as hi/lo Winograd tiles.
  const legacy = decodeTsgraph(new Uint8Array(readFileSync(new URL('./fixtures/winograd-legacy.tsgraph', import.meta.url))));
  const plain = () => {
    const b = new GraphBuilder('plain');
    const x = b.input('x', tensorType('float32', ['N', 3, 6, 6]));
    const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
    const y = b.op1('fused_conv2d', [x, b.constant('w1', weights([4, 3, 3, 3], 1)), b.constant('b1', weights([4], 2))], { ...conv, activation: 'relu', pool: { kernel_size: [2, 2], stride: [2, 2] } });
    b.output('y', b.op1('conv2d', [y, b.constant('w2', weights([5, 4, 3, 3], 3)), null], conv));
    return b.build();
  };

  it('unpacks the hi/lo weights back to the OIHW weights, bit for bit', () => {
    const packed = [...legacy.graph.tensors.values()].filter((t) => t.shape[1] === 36);
    expect(packed.map((t) => t.shape)).toEqual([[4, 36, 2, 3], [5, 36, 2, 4]]);
    const [w1, w2] = packed.map((t) => fused.winograd4Unpack(t.data as Float32Array, t.shape[0], t.shape[3]));
    expect(Array.from(w1)).toEqual(Array.from(weights([4, 3, 3, 3], 1).data));
    expect(Array.from(w2)).toEqual(Array.from(weights([5, 4, 3, 3], 3).data));
  });

  it('loads and runs on the CPU, equal to the same convs over OIHW weights', () => {
    expect([...walkNodes(legacy.graph.body)].filter((n) => n.attrs.layout === 'winograd4x4')).toHaveLength(2);
    for (const n of [1, 3]) {
      const x = tensor([n, 3, 6, 6]);
      const want = createModel(plain()).runSync([x])[0];
      const got = createModel(legacy.graph).runSync([x])[0];
      expect(got.shape).toEqual(want.shape);
      expectClose(got.data, want.data, `legacy file at batch ${n}`);
    }
  });

  it('validates the layout and the packed weight, naming what to do', () => {
    expect(() => parseOpAttrs('fused_conv2d', { layout: 'nchw8' })).toThrow(/fused_conv2d: invalid attribute 'layout'/);
    const x = { dtype: 'float32' as const, shape: [1, 8, 6, 6] };
    const attrs = (more: Record<string, unknown>) => parseOpAttrs('fused_conv2d', { padding: [1, 1, 1, 1], layout: 'winograd4x4', ...more });
    expect(getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 36, 2, 8] }, null], attrs({}))[0].shape).toEqual([1, 4, 6, 6]);
    expect(() => getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 8, 3, 3] }, null], attrs({}))).toThrow(/needs a packed weight \[Cout, 36, 2, C\], got \[4,8,3,3\]; this layout comes only from files written before issue 14: compile the model again, which stores the OIHW weight/);
    expect(() => getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 36, 2, 8] }, null], attrs({ stride: [2, 2] }))).toThrow(/needs stride \[1,1\], dilation \[1,1\] and groups 1, got stride \[2,2\]/);
    expect(() => getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 36, 2, 3] }, null], attrs({}))).toThrow(/conv2d: input \[1,8,6,6\] has 8 channel/);
  });
});

describe('the host Winograd F(4×4, 3×3) weight transform (the oracle of the WebGPU packer)', () => {
  it('gives the 6×6 tiles G g Gᵀ of every filter as [Cout, 36, C]', () => {
    const w = tensor([3, 2, 3, 3]).data as Float32Array;
    const U = fused.winograd4Weights(w, 3, 2);
    const G = [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]];
    for (let co = 0; co < 3; co++) for (let c = 0; c < 2; c++) for (let i = 0; i < 6; i++) for (let j = 0; j < 6; j++) {
      let u = 0;
      for (let a = 0; a < 3; a++) for (let b = 0; b < 3; b++) u += G[i][a] * w[(co * 2 + c) * 9 + a * 3 + b] * G[j][b];
      expect(U[(co * 36 + i * 6 + j) * 2 + c]).toBeCloseTo(u, 6);
    }
  });
});

function toOutput(t: Tensor): Output {
  return { name: 'output', data: t.data as Float32Array, shape: [...t.shape], dtype: 'float32' };
}

describe('-O2 on the seed ResearchModel keeps OIHW weights', () => {
  manualSeed(5);
  const model = new ResearchModel();
  model.eval();
  for (const [name, p] of Object.entries(model.stateDict())) {
    if (name.endsWith('running_var')) p.copy_(rand(p.shape).add(0.5));
    if (name.endsWith('running_mean')) p.copy_(randn(p.shape).mul(0.1));
  }
  const traced = jit.trace(model, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } } });

  it('has no weight-packing pass, fuses both convs over their OIHW weights, and matches eager within 1e-5 at batch 1, 4 and 32', () => {
    // Packing is a device load-time transform now (issue 14): no level packs weights into the file.
    for (const level of [0, 1, 2] as const) expect(LEVELS[level]).not.toContain('prepack-weights');
    const fast = jit.optimizeForInference(traced, { verifyEach: true });
    const convs = [...walkNodes(fast.graph.body)].filter((n) => n.op === 'fused_conv2d');
    expect(convs).toHaveLength(2);
    expect(convs.map((n) => n.attrs.layout)).toEqual([undefined, undefined]);
    const shapes = [...fast.graph.tensors.values()].map((t) => t.shape.join('x'));
    expect(shapes).toContain('64x3x3x3');
    expect(shapes).toContain('128x64x3x3');
    expect(shapes.filter((s) => s.includes('x36x'))).toEqual([]);
    for (const batch of [1, 4, 32]) {
      const x = randn([batch, 3, 32, 32]);
      const want = toOutput(noGrad(() => model.forward(x)));
      expectClose(toOutput(fast.forward(x)).data, want.data, `-O2 vs eager at batch ${batch}`);
    }
  });

  it('saves the weights in .tsgraph and loads them back bit for bit', () => {
    const { graph } = runPipeline(traced.graph, { level: 2 });
    const back = decodeTsgraph(encodeTsgraph(graph)).graph;
    for (const [name, t] of graph.tensors) {
      const u = back.tensors.get(name) as TensorData;
      expect(u.shape).toEqual(t.shape);
      expect(Buffer.from(u.data.buffer, u.data.byteOffset, u.data.byteLength).equals(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))).toBe(true);
    }
    const x = tensor([3, 3, 32, 32]);
    expectClose(createModel(back).runSync([x])[0].data, createModel(graph).runSync([x])[0].data, 'loaded vs in memory');
    expectClose(createModel(graph).runSync([x])[0].data, createModel(traced.graph).runSync([x])[0].data, '-O2 vs -O0 in the runtime');
  });
});
