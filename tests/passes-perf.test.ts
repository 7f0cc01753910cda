// The -O2 speed work (issue 6): the prepack-weights pass, the packed Winograd F(4×4, 3×3) layout of
// fused_conv2d (ir-spec/src/kernels/winograd4.ts) and its fused 2×2 pool. Every case checks
// numbers: the packed kernel against conv2d (+ activation + max_pool2d) and against a float64
// convolution, the optimized seed model against eager at several batch sizes and after a
// `.tsgraph` round trip. Speed itself is measured by `node bench/passes.mjs`, not here.

import { describe, expect, it } from 'vitest';
import { decodeTsgraph, encodeTsgraph, fused, getOp, parseOpAttrs, walkNodes, type CpuTensor, type TensorData } from '@kiln/ir-spec';
import { createModel, type Output } from '@kiln/runtime';
import { LEVELS, prepackWeights, runPipeline } from '@kiln/compiler';
import { jit, manualSeed, noGrad, rand, randn, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/seed/models.mjs';
import { rng } from './helpers/rng.js';

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

/** The packed weight of `w` for a 3×3, stride-1 conv. */
function pack(w: CpuTensor): CpuTensor {
  const p = fused.packConvWeight('winograd4x4', w.data as Float32Array, w.shape, { stride: [1, 1], dilation: [1, 1], groups: 1 });
  if (!p) throw new Error('packConvWeight refused a 3×3 stride-1 weight');
  return { dtype: 'float32', shape: p.shape, data: p.data };
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

describe('fused_conv2d {layout="winograd4x4"}', () => {
  for (const c of CASES) {
    it(`equals conv2d and a float64 conv: N${c.N} C${c.C} ${c.H}×${c.W} → ${c.Cout}, padding ${c.pad}`, () => {
      const x = tensor([c.N, c.C, c.H, c.W]), w = tensor([c.Cout, c.C, 3, 3]), b = tensor([c.Cout]);
      const conv = { stride: [1, 1], padding: c.pad, dilation: [1, 1], groups: 1 };
      const want = getOp('conv2d').cpu([x, w, b], conv)[0];
      const got = getOp('fused_conv2d').cpu([x, pack(w), b], { ...conv, activation: 'none', pool: null, layout: 'winograd4x4' })[0];
      expect(got.shape).toEqual(want.shape);
      expectClose(got.data, want.data, 'vs conv2d', scaleTol(want.data));
      // The hi/lo weights and double intermediates keep it about as close to exact as direct
      // float32 (an all-float32 F(4×4) measured ~5e-6 of the RMS here).
      const exact = conv64(x, w, c);
      const nobias = getOp('fused_conv2d').cpu([x, pack(w)], { ...conv, activation: 'none', pool: null, layout: 'winograd4x4' })[0].data;
      let rms = 0, worst = 0;
      for (let i = 0; i < exact.length; i++) { rms += exact[i] * exact[i]; worst = Math.max(worst, Math.abs(nobias[i] - exact[i])); }
      expect(worst / Math.sqrt(rms / exact.length)).toBeLessThan(1e-6);
    });
  }

  it('with activation and max pool: 2×2/2 inside the tiles, other windows, channel blocks', () => {
    // [2, 64, 16, 16] pools in its tiles; 130² planes run in output-channel blocks (15 + 5);
    // a 3×2 window takes the generic pool; 9×9 leaves partial tiles and a dropped last row.
    for (const [N, C, H, Cout, act, k, s] of [[2, 64, 16, 128, 'relu', 2, 2], [1, 2, 130, 20, 'relu', 2, 2], [2, 5, 9, 6, 'sigmoid', 3, 2], [1, 3, 9, 7, 'tanh', 2, 2]] as const) {
      const x = tensor([N, C, H, H]), w = tensor([Cout, C, 3, 3]), b = tensor([Cout]);
      const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
      const pool = { kernel_size: [k, k], stride: [s, s] };
      let want = getOp('conv2d').cpu([x, w, b], conv)[0];
      want = getOp(act).cpu([want], {})[0];
      want = getOp('max_pool2d').cpu([want], { ...pool, padding: [0, 0], dilation: [1, 1], ceil_mode: false })[0];
      const got = getOp('fused_conv2d').cpu([x, pack(w), b], { ...conv, activation: act, pool, layout: 'winograd4x4' })[0];
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
    const got = getOp('fused_conv2d').cpu([x, pack(w)], { ...conv, activation: 'relu', pool, layout: 'winograd4x4' })[0];
    expect(Array.from(want.data).some(Number.isNaN)).toBe(true);
    expectClose(got.data, want.data, 'NaN propagation');
  });

  it('validates the layout and the packed weight, naming what to do', () => {
    expect(() => parseOpAttrs('fused_conv2d', { layout: 'nchw8' })).toThrow(/fused_conv2d: invalid attribute 'layout'/);
    const x = { dtype: 'float32' as const, shape: [1, 8, 6, 6] };
    const attrs = (more: Record<string, unknown>) => parseOpAttrs('fused_conv2d', { padding: [1, 1, 1, 1], layout: 'winograd4x4', ...more });
    expect(getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 36, 2, 8] }, null], attrs({}))[0].shape).toEqual([1, 4, 6, 6]);
    expect(() => getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 8, 3, 3] }, null], attrs({}))).toThrow(/needs a packed weight \[Cout, 36, 2, C\], got \[4,8,3,3\]; pack the OIHW weight with packConvWeight/);
    expect(() => getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 36, 2, 8] }, null], attrs({ stride: [2, 2] }))).toThrow(/needs stride \[1,1\], dilation \[1,1\] and groups 1, got stride \[2,2\]/);
    expect(() => getOp('fused_conv2d').infer([x, { dtype: 'float32', shape: [4, 36, 2, 3] }, null], attrs({}))).toThrow(/conv2d: input \[1,8,6,6\] has 8 channel/);
    const w = tensor([4, 8, 5, 5]).data as Float32Array;
    expect(fused.packConvWeight('winograd4x4', w, [4, 8, 5, 5], { stride: [1, 1], dilation: [1, 1], groups: 1 })).toBeNull();
    expect(fused.packConvWeight('winograd4x4', w.subarray(0, 288), [4, 8, 3, 3], { stride: [1, 1], dilation: [2, 2], groups: 1 })).toBeNull();
  });
});

function toOutput(t: Tensor): Output {
  return { name: 'output', data: t.data as Float32Array, shape: [...t.shape], dtype: 'float32' };
}

describe('prepack-weights on the seed ResearchModel', () => {
  manualSeed(5);
  const model = new ResearchModel();
  model.eval();
  for (const [name, p] of Object.entries(model.stateDict())) {
    if (name.endsWith('running_var')) p.copy_(rand(p.shape).add(0.5));
    if (name.endsWith('running_mean')) p.copy_(randn(p.shape).mul(0.1));
  }
  const traced = jit.trace(model, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } } });

  it('is in -O2 only, packs both convs, and matches eager within 1e-5 at batch 1, 4 and 32', () => {
    expect(LEVELS[2]).toContain('prepack-weights');
    expect(LEVELS[1]).not.toContain('prepack-weights');
    const fast = jit.optimizeForInference(traced, { verifyEach: true });
    const convs = [...walkNodes(fast.graph.body)].filter((n) => n.op === 'fused_conv2d');
    expect(convs.map((n) => n.attrs.layout)).toEqual(['winograd4x4', 'winograd4x4']);
    // The packed weights are ordinary constants; the OIHW ones are gone from the table.
    const shapes = [...fast.graph.tensors.values()].map((t) => t.shape.join('x'));
    expect(shapes).toContain('64x36x2x3');
    expect(shapes).toContain('128x36x2x64');
    expect(shapes).not.toContain('128x64x3x3');
    for (const batch of [1, 4, 32]) {
      const x = randn([batch, 3, 32, 32]);
      const want = toOutput(noGrad(() => model.forward(x)));
      expectClose(toOutput(fast.forward(x)).data, want.data, `-O2 vs eager at batch ${batch}`);
    }
    // -O0 is untouched: the traced graph has plain conv2d nodes.
    expect([...walkNodes(traced.graph.body)].some((n) => n.attrs.layout !== undefined)).toBe(false);
  });

  it('saves the packed weights in .tsgraph and loads them back bit for bit', () => {
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

  it('returns the graph unchanged when there is nothing to pack', () => {
    const once = prepackWeights(runPipeline(traced.graph, { level: 2, passes: LEVELS[2].filter((p) => p !== 'plan-memory') }).graph);
    expect(prepackWeights(once)).toBe(once);
  });
});
