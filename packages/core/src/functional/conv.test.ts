// Unit tests of F's convolutions beyond the PyTorch golden cases: every kernel path (implicit
// GEMM with and without a padded copy, Winograd, pointwise, depthwise, groups, unit-stride and
// strided transposed convolutions, output_padding ≥ stride) against a direct double reference,
// gradients against directional derivatives of that reference (exact: convolutions are linear),
// double backward, unbatched inputs and the error messages.

import { describe, it, expect } from 'vitest';
import { autograd, randn, manualSeed, tensor, F, type Tensor } from '../index.js';
import { dispatch1 } from '../dispatch.js';

interface Conv { stride: number[]; pad: number[]; dil: number[]; groups: number }

/** Direct conv2d in double precision; pad = [top, left, bottom, right]. */
function conv2dRef(x: Tensor, w: Tensor, b: Tensor | null, c: Conv): { data: Float64Array; shape: number[] } {
  const [N, C, H, W] = x.shape, [Co, Cg, kh, kw] = w.shape, X = x.toArray(), Wt = w.toArray();
  const OH = Math.floor((H + c.pad[0] + c.pad[2] - c.dil[0] * (kh - 1) - 1) / c.stride[0]) + 1;
  const OW = Math.floor((W + c.pad[1] + c.pad[3] - c.dil[1] * (kw - 1) - 1) / c.stride[1]) + 1;
  const out = new Float64Array(N * Co * OH * OW), cog = Co / c.groups;
  for (let n = 0; n < N; n++) for (let co = 0; co < Co; co++) for (let oy = 0; oy < OH; oy++) for (let ox = 0; ox < OW; ox++) {
    let s = b ? b.toArray()[co] : 0;
    const g = Math.floor(co / cog);
    for (let ci = 0; ci < Cg; ci++) for (let ky = 0; ky < kh; ky++) for (let kx = 0; kx < kw; kx++) {
      const iy = oy * c.stride[0] - c.pad[0] + ky * c.dil[0], ix = ox * c.stride[1] - c.pad[1] + kx * c.dil[1];
      if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
      s += X[((n * C + g * Cg + ci) * H + iy) * W + ix] * Wt[((co * Cg + ci) * kh + ky) * kw + kx];
    }
    out[((n * Co + co) * OH + oy) * OW + ox] = s;
  }
  return { data: out, shape: [N, Co, OH, OW] };
}

/** Direct transposed conv2d (scatter form) in double precision; symmetric padding. */
function convT2dRef(x: Tensor, w: Tensor, b: Tensor | null, c: Conv & { outPad: number[] }): { data: Float64Array; shape: number[] } {
  const [N, C, H, W] = x.shape, [, Cog, kh, kw] = w.shape, X = x.toArray(), Wt = w.toArray();
  const OH = (H - 1) * c.stride[0] - 2 * c.pad[0] + c.dil[0] * (kh - 1) + c.outPad[0] + 1;
  const OW = (W - 1) * c.stride[1] - 2 * c.pad[1] + c.dil[1] * (kw - 1) + c.outPad[1] + 1;
  const Co = Cog * c.groups, Cig = C / c.groups, out = new Float64Array(N * Co * OH * OW);
  for (let n = 0; n < N; n++) for (let co = 0; co < Co; co++) out.fill(b ? b.toArray()[co] : 0, (n * Co + co) * OH * OW, (n * Co + co + 1) * OH * OW);
  for (let n = 0; n < N; n++) for (let ci = 0; ci < C; ci++) for (let iy = 0; iy < H; iy++) for (let ix = 0; ix < W; ix++) {
    const g = Math.floor(ci / Cig), v = X[((n * C + ci) * H + iy) * W + ix];
    for (let co = 0; co < Cog; co++) for (let ky = 0; ky < kh; ky++) for (let kx = 0; kx < kw; kx++) {
      const oy = iy * c.stride[0] - c.pad[0] + ky * c.dil[0], ox = ix * c.stride[1] - c.pad[1] + kx * c.dil[1];
      if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
      out[((n * Co + g * Cog + co) * OH + oy) * OW + ox] += v * Wt[((ci * Cog + co) * kh + ky) * kw + kx];
    }
  }
  return { data: out, shape: [N, Co, OH, OW] };
}

function expectNear(got: Tensor, want: { data: ArrayLike<number>; shape: number[] }, tol = 1e-5): void {
  expect(got.shape).toEqual(want.shape);
  const g = got.toArray();
  let scale = 0;
  for (let i = 0; i < want.data.length; i++) scale = Math.max(scale, Math.abs(want.data[i]));
  for (let i = 0; i < want.data.length; i++) {
    if (!(Math.abs(g[i] - want.data[i]) <= tol * (1 + scale))) throw new Error(`element ${i}: got ${g[i]}, want ${want.data[i]}`);
  }
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

/**
 * Checks autograd's input gradients of Σ f(inputs)·R against the reference: for a random
 * direction d_i, ⟨∂/∂input_i, d_i⟩ must equal Σ (ref(…input_i + d_i…) − ref(…)) · R, which is
 * exact because the reference is linear in each input.
 */
function checkLinearGrads(
  f: (...xs: Tensor[]) => Tensor, ref: (...xs: Tensor[]) => { data: Float64Array }, inputs: Tensor[],
): void {
  const xs = inputs.map((t) => t.detach().clone().requiresGrad_());
  const y = f(...xs);
  const R = randn(y.shape);
  const grads = autograd.grad(y.mul(R).sum(), xs);
  const base = ref(...inputs).data, r = R.toArray();
  inputs.forEach((t, i) => {
    const d = randn(t.shape);
    const moved = inputs.map((u, j) => (j === i ? u.add(d) : u));
    const want = dot(ref(...moved).data, r) - dot(base, r);
    const got = dot(grads[i]!.toArray(), d.toArray());
    expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(want)));
  });
}

describe('conv2d matches a direct convolution', () => {
  const cases: [string, number[], number[], Partial<Conv>][] = [
    ['3x3 pad 1 (padded copy)', [2, 3, 7, 6], [5, 3, 3, 3], { pad: [1, 1, 1, 1] }],
    ['no padding (reads the input directly)', [2, 4, 6, 5], [6, 4, 3, 2], {}],
    ['stride 2 with unreached last rows', [1, 3, 8, 9], [4, 3, 3, 3], { stride: [2, 2] }],
    ['dilation and asymmetric padding', [1, 2, 9, 8], [3, 2, 3, 2], { stride: [1, 2], pad: [2, 0, 1, 3], dil: [2, 1] }],
    ['pointwise 1x1', [2, 5, 4, 4], [7, 5, 1, 1], {}],
    ['groups 2', [2, 4, 6, 6], [6, 2, 3, 3], { pad: [1, 1, 1, 1], groups: 2 }],
    ['depthwise (one output row per group)', [2, 5, 6, 7], [5, 1, 3, 3], { pad: [1, 1, 1, 1], groups: 5 }],
    ['long contraction (K > one K block)', [1, 130, 5, 5], [9, 130, 3, 3], { pad: [1, 1, 1, 1], stride: [1, 2] }],
    // 3x3, unit stride, ≥ 8 channels: Winograd F(2x2, 3x3) forward, input and weight gradients.
    ['Winograd, odd output size', [2, 8, 7, 5], [9, 8, 3, 3], { pad: [1, 1, 1, 1] }],
    ['Winograd without padding, 5 output channels', [1, 9, 6, 8], [5, 9, 3, 3], {}],
    ['Winograd with per-side padding', [2, 10, 5, 6], [8, 10, 3, 3], { pad: [1, 0, 2, 1] }],
  ];
  for (const [name, xs, ws, c0] of cases) {
    it(name, () => {
      manualSeed(1);
      const c: Conv = { stride: [1, 1], pad: [0, 0, 0, 0], dil: [1, 1], groups: 1, ...c0 };
      const x = randn(xs), w = randn(ws), b = randn([ws[0]]);
      const opts = { stride: c.stride, dilation: c.dil, groups: c.groups };
      // F takes symmetric padding (or 'same'); per-side padding goes to the primitive directly.
      const sym = c.pad[0] === c.pad[2] && c.pad[1] === c.pad[3];
      const run = (xx: Tensor, ww: Tensor, bb: Tensor) => (sym
        ? F.conv2d(xx, ww, bb, { ...opts, padding: [c.pad[0], c.pad[1]] })
        : dispatch1('conv2d', [xx, ww, bb], { ...opts, padding: c.pad }));
      expectNear(run(x, w, b), conv2dRef(x, w, b, c));
      checkLinearGrads(run, (xx, ww, bb) => conv2dRef(xx, ww, bb, c), [x, w, b]);
    });
  }

  it("padding 'same' with an even kernel pads 1 before and 2 after", () => {
    manualSeed(2);
    const x = randn([1, 2, 5, 6]), w = randn([3, 2, 4, 4]);
    const y = F.conv2d(x, w, null, { padding: 'same' });
    expectNear(y, conv2dRef(x, w, null, { stride: [1, 1], pad: [1, 1, 2, 2], dil: [1, 1], groups: 1 }));
    const yd = F.conv2d(x, w.index(':', ':', '0:3', '0:3'), null, { padding: 'same', dilation: 2 });
    expect(yd.shape).toEqual([1, 3, 5, 6]);
  });

  it('unbatched [C, H, W] input gives [Cout, OH, OW]', () => {
    manualSeed(3);
    const x = randn([3, 6, 6]), w = randn([4, 3, 3, 3]);
    const y = F.conv2d(x, w, null, { padding: 1 });
    expect(y.shape).toEqual([4, 6, 6]);
    expectNear(y.unsqueeze(0), conv2dRef(x.unsqueeze(0), w, null, { stride: [1, 1], pad: [1, 1, 1, 1], dil: [1, 1], groups: 1 }));
  });

  it('conv1d runs as a height-1 conv2d', () => {
    manualSeed(4);
    const x = randn([2, 3, 11]), w = randn([4, 3, 3]), b = randn([4]);
    const y = F.conv1d(x, w, b, { stride: [2], padding: 2, dilation: 2 });
    const ref = conv2dRef(x.unsqueeze(2), w.unsqueeze(2), b, { stride: [1, 2], pad: [0, 2, 0, 2], dil: [1, 2], groups: 1 });
    expectNear(y, { data: ref.data, shape: [2, 4, ref.shape[3]] });
  });
});

describe('convTranspose2d matches a direct scatter', () => {
  const cases: [string, number[], number[], Partial<Conv & { outPad: number[] }>][] = [
    ['unit stride (runs as a flipped conv2d)', [2, 4, 5, 6], [4, 3, 3, 3], { pad: [1, 1] }],
    ['unit stride, padding beyond the kernel reach (scatter path)', [1, 3, 6, 6], [3, 2, 2, 2], { pad: [2, 2] }],
    ['stride 2, output padding 1', [1, 4, 4, 4], [4, 3, 3, 3], { stride: [2, 2], pad: [1, 1], outPad: [1, 1] }],
    ['stride 2, groups 2', [2, 4, 3, 3], [4, 3, 3, 3], { stride: [2, 2], groups: 2 }],
    ['stride 2, dilation 2', [1, 2, 3, 4], [2, 2, 3, 3], { stride: [2, 2], pad: [1, 1], dil: [2, 2] }],
    ['unit stride, groups 3, dilation 2', [2, 6, 4, 5], [6, 2, 3, 3], { pad: [1, 2], dil: [2, 2], groups: 3 }],
  ];
  for (const [name, xs, ws, c0] of cases) {
    it(name, () => {
      manualSeed(5);
      const c = { stride: [1, 1], pad: [0, 0], dil: [1, 1], groups: 1, outPad: [0, 0], ...c0 };
      const x = randn(xs), w = randn(ws), b = randn([ws[1] * c.groups]);
      const run = (xx: Tensor, ww: Tensor, bb: Tensor) => F.convTranspose2d(xx, ww, bb, {
        stride: c.stride, padding: c.pad, outputPadding: c.outPad, dilation: c.dil, groups: c.groups,
      });
      expectNear(run(x, w, b), convT2dRef(x, w, b, c));
      checkLinearGrads(run, (xx, ww, bb) => convT2dRef(xx, ww, bb, c), [x, w, b]);
    });
  }

  it('output_padding of a stride or more (allowed by a larger dilation) adds bias-only rows', () => {
    manualSeed(6);
    const c = { stride: [1, 1], pad: [0, 0], dil: [3, 3], groups: 1, outPad: [2, 1] };
    const x = randn([1, 2, 3, 3]), w = randn([2, 2, 2, 2]), b = randn([2]);
    const run = (xx: Tensor, ww: Tensor, bb: Tensor) => F.convTranspose2d(xx, ww, bb, { dilation: 3, outputPadding: [2, 1] });
    expectNear(run(x, w, b), convT2dRef(x, w, b, c));
    checkLinearGrads(run, (xx, ww, bb) => convT2dRef(xx, ww, bb, c), [x, w, b]);
  });

  it('convTranspose1d runs as a height-1 convTranspose2d', () => {
    manualSeed(7);
    const x = randn([2, 3, 5]), w = randn([3, 2, 3]);
    const y = F.convTranspose1d(x, w, null, { stride: 2, padding: 1, outputPadding: 1 });
    const ref = convT2dRef(x.unsqueeze(2), w.unsqueeze(2), null, { stride: [1, 2], pad: [0, 1], dil: [1, 1], groups: 1, outPad: [0, 1] });
    expectNear(y, { data: ref.data, shape: [2, 2, ref.shape[3]] });
  });
});

describe('double backward', () => {
  it('a gradient penalty through conv2d differentiates the weight gradient op', () => {
    manualSeed(8);
    const x = randn([2, 3, 6, 6], { requiresGrad: true }), w = randn([4, 3, 3, 3], { requiresGrad: true });
    const R = randn([2, 4, 3, 3]);
    // P(x, w) = Σ (∂L/∂w)², L = Σ conv(x, w)·R: ∂L/∂w = conv2d_weight_grad(x, R) is linear in x.
    const penalty = (xx: Tensor, ww: Tensor) => {
      const [gw] = autograd.grad(F.conv2d(xx, ww, null, { stride: 2, padding: 1 }).mul(R).sum(), [ww], { createGraph: true });
      return gw!.mul(gw!).sum();
    };
    const P = penalty(x, w);
    const [gx] = autograd.grad(P, [x]);
    // P is quadratic in x: its central difference along d is exact up to float32 rounding.
    const d = randn(x.shape), t = 0.5;
    const noGradPenalty = (xx: Tensor) => penalty(xx.detach().requiresGrad_(), w).item();
    const want = (noGradPenalty(x.add(d.mul(t))) - noGradPenalty(x.sub(d.mul(t)))) / (2 * t);
    const got = dot(gx!.toArray(), d.toArray());
    expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-3 * (1 + Math.abs(want)));
  });

  it('the input gradient of conv2d (a conv_transpose2d) is differentiable in the weight', () => {
    manualSeed(9);
    const x = randn([1, 2, 5, 5], { requiresGrad: true }), w = randn([3, 2, 3, 3], { requiresGrad: true });
    const R = randn([1, 3, 5, 5]);
    const penalty = (ww: Tensor) => {
      const [gx] = autograd.grad(F.conv2d(x, ww, null, { padding: 1 }).mul(R).sum(), [x], { createGraph: true });
      return gx!.mul(gx!).sum();
    };
    const [gw] = autograd.grad(penalty(w), [w]);
    const d = randn(w.shape), t = 0.5;
    const p = (ww: Tensor) => penalty(ww.detach().requiresGrad_()).item();
    const want = (p(w.add(d.mul(t))) - p(w.sub(d.mul(t)))) / (2 * t);
    expect(Math.abs(dot(gw!.toArray(), d.toArray()) - want)).toBeLessThanOrEqual(1e-3 * (1 + Math.abs(want)));
  });
});

describe('errors name the op, the shapes and the fix', () => {
  const x = randn([1, 3, 8, 8]);
  it('conv2d', () => {
    expect(() => F.conv2d(x, randn([4, 2, 3, 3]))).toThrow('conv2d: input [1,3,8,8] has 3 channels but weight [4,2,3,3] with groups=1 expects 2');
    expect(() => F.conv2d(x, randn([4, 3, 3, 3]), null, { groups: 2 })).toThrow(/conv2d: groups=2 must divide both the input channels \(3\)/);
    expect(() => F.conv2d(x, randn([4, 3, 9, 9]))).toThrow(/conv2d: input \[1,3,8,8\] padded by \[0,0,0,0\] is smaller than the kernel 9x9/);
    expect(() => F.conv2d(x, randn([4, 3, 3, 3]), null, { padding: 'same', stride: 2 })).toThrow(/padding='same' is not supported for strided convolutions/);
    expect(() => F.conv2d(x, randn([4, 3, 3, 3]), tensor([1, 2]))).toThrow('conv2d: bias must be float32 of shape [4], got float32[2]');
    expect(() => F.conv2d(randn([8, 8]), randn([4, 3, 3, 3]))).toThrow(/conv2d: expected a 4-D \(batched\) or 3-D \(unbatched\) input, got \[8,8\]/);
  });
  it('convTranspose2d', () => {
    expect(() => F.convTranspose2d(x, randn([2, 3, 3, 3]))).toThrow(/conv_transpose2d: input \[1,3,8,8\] has 3 channels but weight \[2,3,3,3\]/);
    expect(() => F.convTranspose2d(x, randn([3, 3, 3, 3]), null, { stride: 2, outputPadding: 2 })).toThrow(/outputPadding \[2,2\] must be smaller than either stride \[2,2\] or dilation \[1,1\]/);
  });
});
