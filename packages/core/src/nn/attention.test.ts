// MultiheadAttention against a manual softmax(Q Kᵀ/√d + mask) V computed per batch and head in
// plain JS from the module's own weights; masks (bool and float), layouts, kdim/vdim, gradients.
import { describe, expect, it } from 'vitest';
import { nn, randn, tensor, manualSeed, Tensor } from '../index.js';

type Mat = number[][];
const rows = (t: Tensor): Mat => t.tolist() as Mat;
const proj = (x: Mat, w: Mat, b: number[] | null): Mat =>
  x.map((xr) => w.map((wr, o) => wr.reduce((acc, wv, i) => acc + wv * xr[i], b ? b[o] : 0)));

/**
 * Reference for one batch element: q [L][E], k [S][kdim], v [S][vdim]; mask [L][S] additive
 * (-Infinity = masked). Returns the output [L][E] and per-head weights [H][L][S].
 */
function manual(m: nn.MultiheadAttention, q: Mat, k: Mat, v: Mat, mask: Mat | null): { out: Mat; w: Mat[] } {
  const E = m.embedDim, H = m.numHeads, hd = E / H;
  let wq: Mat, wk: Mat, wv: Mat;
  if (m.in_proj_weight) {
    const w = rows(m.in_proj_weight);
    [wq, wk, wv] = [w.slice(0, E), w.slice(E, 2 * E), w.slice(2 * E)];
  } else {
    [wq, wk, wv] = [rows(m.q_proj_weight!), rows(m.k_proj_weight!), rows(m.v_proj_weight!)];
  }
  const b = m.in_proj_bias ? [...m.in_proj_bias.toArray()] : null;
  const Q = proj(q, wq, b && b.slice(0, E)), K = proj(k, wk, b && b.slice(E, 2 * E)), V = proj(v, wv, b && b.slice(2 * E));
  const L = q.length, S = k.length;
  const ctx: Mat = Array.from({ length: L }, () => new Array<number>(E).fill(0));
  const weights: Mat[] = [];
  for (let h = 0; h < H; h++) {
    const wh: Mat = [];
    for (let l = 0; l < L; l++) {
      const scores = Array.from({ length: S }, (_, s) => {
        let dot = 0;
        for (let j = 0; j < hd; j++) dot += Q[l][h * hd + j] * K[s][h * hd + j];
        return dot / Math.sqrt(hd) + (mask ? mask[l][s] : 0);
      });
      const mx = Math.max(...scores);
      const ex = scores.map((s) => Math.exp(s - mx));
      const z = ex.reduce((a, c) => a + c, 0);
      const p = ex.map((e) => e / z);
      wh.push(p);
      for (let j = 0; j < hd; j++) for (let s = 0; s < S; s++) ctx[l][h * hd + j] += p[s] * V[s][h * hd + j];
    }
    weights.push(wh);
  }
  const out = proj(ctx, rows(m.out_proj.weight), m.out_proj.bias ? [...m.out_proj.bias.toArray()] : null);
  return { out, w: weights };
}

function expectClose(a: number[], b: number[], tol = 2e-5): void {
  expect(a.length).toBe(b.length);
  a.forEach((v, i) => expect(Math.abs(v - b[i])).toBeLessThan(tol));
}

/** Randomises the biases too (PyTorch starts them at zero, which would hide bias mistakes). */
function randomBiases(m: nn.MultiheadAttention): void {
  if (m.in_proj_bias) nn.init.uniform_(m.in_proj_bias, -0.5, 0.5);
  if (m.out_proj.bias) nn.init.uniform_(m.out_proj.bias, -0.5, 0.5);
}

describe('MultiheadAttention', () => {
  it('matches softmax(QKᵀ/√d)V per head, with averaged and per-head weights', () => {
    manualSeed(1);
    const m = new nn.MultiheadAttention(8, 2);
    randomBiases(m);
    const L = 3, S = 4, N = 2;
    const q = randn([L, N, 8]), k = randn([S, N, 8]), v = randn([S, N, 8]);
    const [out, w] = m.forward(q, k, v);
    const [, wHeads] = m.forward(q, k, v, { averageAttnWeights: false });
    expect(out.shape).toEqual([L, N, 8]);
    expect(w!.shape).toEqual([N, L, S]);
    expect(wHeads!.shape).toEqual([N, 2, L, S]);
    const O = out.tolist() as number[][][], W = w!.tolist() as number[][][], WH = wHeads!.tolist() as number[][][][];
    for (let n = 0; n < N; n++) {
      const pick = (t: Tensor) => (t.tolist() as number[][][]).map((r) => r[n]);
      const ref = manual(m, pick(q), pick(k), pick(v), null);
      expectClose(O.map((r) => r[n]).flat(), ref.out.flat());
      expectClose(WH[n].flat(2), ref.w.flat(2));
      expectClose(W[n].flat(), ref.w[0].map((r, l) => r.map((x, s) => (x + ref.w[1][l][s]) / 2)).flat());
    }
  });

  it('applies bool and float attention masks and key padding masks', () => {
    manualSeed(2);
    const m = new nn.MultiheadAttention(6, 3, { batchFirst: true });
    randomBiases(m);
    const N = 2, L = 3, S = 3;
    const x = randn([N, L, 6]);
    // Causal mask: true above the diagonal = may not attend to later positions.
    const causal = tensor([[false, true, true], [false, false, true], [false, false, false]]);
    const kpm = tensor([[false, false, true], [false, false, false]]); // batch 0 ignores key 2
    const [out, w] = m.forward(x, x, x, { attnMask: causal, keyPaddingMask: kpm });
    const floatMask = tensor([[0, -1, 2], [0.5, 0, 0], [1, 1, -3]]);
    const [outF] = m.forward(x, x, x, { attnMask: floatMask });
    const X = x.tolist() as number[][][];
    for (let n = 0; n < N; n++) {
      const mask = [0, 1, 2].map((l) => [0, 1, 2].map((s) => (s > l || (n === 0 && s === 2) ? -Infinity : 0)));
      const ref = manual(m, X[n], X[n], X[n], mask);
      expectClose((out.tolist() as number[][][])[n].flat(), ref.out.flat());
      const wn = (w!.tolist() as number[][][])[n];
      expect(wn[0][1]).toBe(0); // masked entries get exactly zero weight
      if (n === 0) expect(wn[2][2]).toBe(0);
      const refF = manual(m, X[n], X[n], X[n], floatMask.tolist() as Mat);
      expectClose((outF.tolist() as number[][][])[n].flat(), refF.out.flat());
    }
    // A 3-D mask [N·heads, L, S] equal to the 2-D one broadcast gives the same result.
    const [out3] = m.forward(x, x, x, { attnMask: causal.unsqueeze(0).expand([N * 3, L, S]), keyPaddingMask: kpm });
    expectClose([...out3.toArray()], [...out.toArray()], 1e-6);
  });

  it('supports kdim/vdim (separate projections), no bias and unbatched input', () => {
    manualSeed(3);
    const m = new nn.MultiheadAttention(4, 2, { kdim: 3, vdim: 5, bias: false });
    expect(m.in_proj_weight).toBeNull();
    expect(Object.keys(m.stateDict())).toEqual(['q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'out_proj.weight']);
    const q = randn([2, 4]), k = randn([3, 3]), v = randn([3, 5]);
    const [out, w] = m.forward(q, k, v, { keyPaddingMask: tensor([false, true, false]) });
    expect(out.shape).toEqual([2, 4]);
    expect(w!.shape).toEqual([2, 3]);
    const mask = [[0, -Infinity, 0], [0, -Infinity, 0]];
    const ref = manual(m, rows(q), rows(k), rows(v), mask);
    expectClose([...out.toArray()], ref.out.flat());
    const [, none] = m.forward(q, k, v, { needWeights: false });
    expect(none).toBeNull();
  });

  it('has PyTorch parameter names and init', () => {
    const m = new nn.MultiheadAttention(8, 4);
    expect(Object.keys(m.stateDict())).toEqual(['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']);
    expect(m.in_proj_weight!.shape).toEqual([24, 8]);
    expect(m.in_proj_bias!.toArray().every((x) => x === 0)).toBe(true);
    expect(m.out_proj.bias!.toArray().every((x) => x === 0)).toBe(true);
    // xavier_uniform on [24, 8]: bound √(6 / (8 + 24)).
    expect(Math.max(...m.in_proj_weight!.toArray().map(Math.abs))).toBeLessThanOrEqual(Math.sqrt(6 / 32));
    expect(() => new nn.MultiheadAttention(10, 3)).toThrow(/divisible by numHeads/);
  });

  it('sends gradients to every parameter and input', () => {
    manualSeed(4);
    const m = new nn.MultiheadAttention(4, 2, { kdim: 3, vdim: 2 });
    const q = randn([2, 1, 4], { requiresGrad: true }), k = randn([3, 1, 3], { requiresGrad: true }), v = randn([3, 1, 2], { requiresGrad: true });
    const [out, w] = m.forward(q, k, v);
    out.pow(2).sum().add(w!.pow(2).sum()).backward();
    for (const [name, p] of m.namedParameters()) expect(p.grad?.toArray().some((g) => g !== 0), name).toBe(true);
    for (const t of [q, k, v]) expect(t.grad?.shape).toEqual(t.shape);
  });

  it('rejects mismatched shapes and masks with clear errors', () => {
    const m = new nn.MultiheadAttention(4, 2);
    const x = randn([3, 2, 4]);
    expect(() => m.forward(x, x, randn([3, 2]))).toThrow(/must all be batched/);
    expect(() => m.forward(x, x, x, { attnMask: tensor([[true]]) })).toThrow(/attnMask of shape \[1,1\] should be \[L, S\] = \[3,3\]/);
    expect(() => m.forward(x, x, x, { keyPaddingMask: tensor([[true, false]]) })).toThrow(/keyPaddingMask of shape \[1,2\] should be \[2,3\]/);
    expect(() => m.forward(randn([3, 2, 5]), x, x)).toThrow(/expected embedDim=4/);
  });
});
