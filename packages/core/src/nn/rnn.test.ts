// LSTM and GRU against an independent step-by-step reference in plain JS (float64, from the same
// weights), closed-form cases, all layouts (batchFirst, unbatched, bidirectional, stacked), and
// gradients reaching every parameter.
import { describe, expect, it } from 'vitest';
import { nn, randn, zeros, full, manualSeed, Tensor, noGrad } from '../index.js';

const sig = (v: number) => 1 / (1 + Math.exp(-v));

interface Cfg { kind: 'LSTM' | 'GRU'; layers: number; dirs: number; H: number; bias: boolean }

/** W·v for a row-major [rows, cols] matrix. */
function matvec(w: ArrayLike<number>, rows: number, cols: number, v: ArrayLike<number>): number[] {
  const out = new Array<number>(rows).fill(0);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[r] += w[r * cols + c] * v[c];
  return out;
}

/**
 * The textbook recurrences, one batch element at a time. `x` is [T][F] per batch element;
 * `h0`/`c0` are [layers·dirs][H]. Returns output [T][dirs·H] and the final h/c per layer·dir.
 */
function reference(cfg: Cfg, p: Record<string, Float32Array>, x: number[][], h0: number[][], c0: number[][] | null) {
  const { kind, layers, dirs, H } = cfg;
  const G = kind === 'LSTM' ? 4 : 3;
  let input = x;
  const hN: number[][] = [], cN: number[][] = [];
  for (let l = 0; l < layers; l++) {
    const T = input.length, F = input[0].length;
    const out: number[][] = Array.from({ length: T }, () => new Array<number>(dirs * H).fill(0));
    for (let d = 0; d < dirs; d++) {
      const sfx = `_l${l}${d ? '_reverse' : ''}`;
      const wih = p[`weight_ih${sfx}`], whh = p[`weight_hh${sfx}`];
      const bih = cfg.bias ? p[`bias_ih${sfx}`] : new Float32Array(G * H), bhh = cfg.bias ? p[`bias_hh${sfx}`] : new Float32Array(G * H);
      let h = [...h0[l * dirs + d]], c = c0 ? [...c0[l * dirs + d]] : [];
      for (let s = 0; s < T; s++) {
        const t = d ? T - 1 - s : s;
        const xi = matvec(wih, G * H, F, input[t]).map((v, i) => v + bih[i]);
        const hh = matvec(whh, G * H, H, h).map((v, i) => v + bhh[i]);
        const nh = new Array<number>(H), nc = new Array<number>(H);
        for (let j = 0; j < H; j++) {
          if (kind === 'LSTM') {
            const gi = sig(xi[j] + hh[j]), gf = sig(xi[H + j] + hh[H + j]);
            const gg = Math.tanh(xi[2 * H + j] + hh[2 * H + j]), go = sig(xi[3 * H + j] + hh[3 * H + j]);
            nc[j] = gf * c[j] + gi * gg;
            nh[j] = go * Math.tanh(nc[j]);
          } else {
            const r = sig(xi[j] + hh[j]), z = sig(xi[H + j] + hh[H + j]);
            const n = Math.tanh(xi[2 * H + j] + r * hh[2 * H + j]);
            nh[j] = (1 - z) * n + z * h[j];
          }
        }
        h = nh;
        c = nc;
        for (let j = 0; j < H; j++) out[t][d * H + j] = h[j];
      }
      hN.push(h);
      cN.push(c);
    }
    input = out;
  }
  return { out: input, hN, cN };
}

/** [A, B, C] tensor → nested [A][B][C]. */
const nested3 = (t: Tensor) => t.tolist() as number[][][];

function params(m: nn.Module): Record<string, Float32Array> {
  return Object.fromEntries(m.namedParameters().map(([n, t]) => [n, t.toArray() as Float32Array]));
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 2e-5): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < actual.length; i++) expect(Math.abs(actual[i] - expected[i])).toBeLessThan(tol);
}

/** Runs module and reference on [T, B, F] data and compares output and final states. */
function check(kind: 'LSTM' | 'GRU', opts: nn.RNNOptions, T: number, B: number, F: number, H: number) {
  manualSeed(11);
  const m = kind === 'LSTM' ? new nn.LSTM(F, H, opts) : new nn.GRU(F, H, opts);
  const layers = opts.numLayers ?? 1, dirs = opts.bidirectional ? 2 : 1;
  const x = randn([T, B, F]), h0 = randn([layers * dirs, B, H]), c0 = randn([layers * dirs, B, H]);
  const xIn = opts.batchFirst ? x.transpose(0, 1) : x;
  let out: Tensor, h: Tensor, c: Tensor | null = null;
  if (m instanceof nn.LSTM) [out, [h, c]] = m.forward(xIn, [h0, c0]);
  else [out, h] = m.forward(xIn, h0);
  if (opts.batchFirst) out = out.transpose(0, 1);
  expect(out.shape).toEqual([T, B, dirs * H]);
  expect(h.shape).toEqual([layers * dirs, B, H]);
  const p = params(m), xs = nested3(x), hs = nested3(h0), cs = nested3(c0);
  const outA = nested3(out), hA = nested3(h), cA = c ? nested3(c) : null;
  for (let b = 0; b < B; b++) {
    const ref = reference({ kind, layers, dirs, H, bias: opts.bias ?? true }, p,
      xs.map((row) => row[b]), hs.map((row) => row[b]), kind === 'LSTM' ? cs.map((row) => row[b]) : null);
    expectClose(outA.flatMap((row) => row[b]), ref.out.flat());
    expectClose(hA.flatMap((row) => row[b]), ref.hN.flat());
    if (cA) expectClose(cA.flatMap((row) => row[b]), ref.cN.flat());
  }
  return m;
}

describe('LSTM', () => {
  it('matches the step-by-step reference (1 layer)', () => { check('LSTM', {}, 5, 3, 4, 6); });
  it('matches it stacked, bidirectional, batch first', () => { check('LSTM', { numLayers: 2, bidirectional: true, batchFirst: true }, 4, 2, 3, 5); });
  it('matches it without biases', () => { check('LSTM', { bias: false, numLayers: 2 }, 3, 2, 3, 4); });

  it('registers PyTorch parameter names and shapes in order', () => {
    const m = new nn.LSTM(3, 5, { numLayers: 2, bidirectional: true });
    expect(m.namedParameters().map(([n, t]) => `${n}:${t.shape.join('x')}`)).toEqual([
      'weight_ih_l0:20x3', 'weight_hh_l0:20x5', 'bias_ih_l0:20', 'bias_hh_l0:20',
      'weight_ih_l0_reverse:20x3', 'weight_hh_l0_reverse:20x5', 'bias_ih_l0_reverse:20', 'bias_hh_l0_reverse:20',
      'weight_ih_l1:20x10', 'weight_hh_l1:20x5', 'bias_ih_l1:20', 'bias_hh_l1:20',
      'weight_ih_l1_reverse:20x10', 'weight_hh_l1_reverse:20x5', 'bias_ih_l1_reverse:20', 'bias_hh_l1_reverse:20',
    ]);
  });

  it('closed form: zero weights halve the cell state each step', () => {
    // All gates see 0: i = f = o = σ(0) = 1/2 and g = tanh(0) = 0, so c_t = c_{t-1}/2 and
    // h_t = tanh(c_t)/2: after T steps c = c0/2^T.
    const m = new nn.LSTM(2, 3);
    for (const p of m.parameters()) nn.init.zeros_(p);
    const c0 = full([1, 1, 3], 4);
    const [out, [h, c]] = m.forward(randn([3, 1, 2]), [zeros([1, 1, 3]), c0]);
    expectClose(c.toArray(), [0.5, 0.5, 0.5], 1e-6);
    expectClose(h.toArray(), Array(3).fill(Math.tanh(0.5) / 2), 1e-6);
    expectClose(out.toArray().slice(0, 3), Array(3).fill(Math.tanh(2) / 2), 1e-6);
  });

  it('accepts unbatched 2-D input and states', () => {
    manualSeed(3);
    const m = new nn.LSTM(4, 3, { numLayers: 2 });
    const x = randn([5, 4]), h0 = randn([2, 3]), c0 = randn([2, 3]);
    const [out, [h, c]] = m.forward(x, [h0, c0]);
    expect(out.shape).toEqual([5, 3]);
    expect(h.shape).toEqual([2, 3]);
    expect(c.shape).toEqual([2, 3]);
    const [outB, [hB]] = m.forward(x.unsqueeze(1), [h0.unsqueeze(1), c0.unsqueeze(1)]);
    expectClose(out.toArray(), outB.toArray(), 1e-6);
    expectClose(h.toArray(), hB.toArray(), 1e-6);
    expect(() => m.forward(x, [h0.unsqueeze(1), c0.unsqueeze(1)])).toThrow(/unbatched input needs unbatched states/);
    expect(() => m.forward(randn([5, 2, 7]))).toThrow(/has 7 features, expected inputSize=4/);
  });

  it('defaults the initial state to zeros', () => {
    manualSeed(4);
    const m = new nn.LSTM(2, 3);
    const x = randn([4, 2, 2]);
    const [a] = m.forward(x);
    const [b] = m.forward(x, [zeros([1, 2, 3]), zeros([1, 2, 3])]);
    expect(a.toArray()).toEqual(b.toArray());
  });

  it('sends gradients to every parameter and to the input', () => {
    manualSeed(5);
    const m = new nn.LSTM(3, 4, { numLayers: 2, bidirectional: true });
    const x = randn([4, 2, 3], { requiresGrad: true });
    const [out, [h, c]] = m.forward(x);
    out.sum().add(h.sum()).add(c.sum()).backward();
    for (const [name, p] of m.namedParameters()) {
      expect(p.grad, name).not.toBeNull();
      expect(p.grad!.shape).toEqual(p.shape);
      expect(p.grad!.toArray().some((v) => v !== 0), name).toBe(true);
    }
    expect(x.grad!.shape).toEqual([4, 2, 3]);
  });
});

describe('GRU', () => {
  it('matches the step-by-step reference (1 layer)', () => { check('GRU', {}, 5, 3, 4, 6); });
  it('matches it stacked, bidirectional, batch first', () => { check('GRU', { numLayers: 2, bidirectional: true, batchFirst: true }, 4, 2, 3, 5); });

  it('closed form: zero weights halve the state each step', () => {
    // r = z = σ(0) = 1/2, n = tanh(0 + r·0) = 0, so h_t = (1-z)·0 + z·h_{t-1} = h_{t-1}/2.
    const m = new nn.GRU(2, 2);
    for (const p of m.parameters()) nn.init.zeros_(p);
    const [out, h] = m.forward(randn([3, 1, 2]), full([1, 1, 2], 8));
    expectClose(h.toArray(), [1, 1], 1e-6);
    expectClose(out.toArray(), [4, 4, 2, 2, 1, 1], 1e-6);
  });

  it('closed form: n uses r ⊙ (W_hn h + b_hn), not W_hn (r ⊙ h)', () => {
    // Zero weights, b_hn = 1, h0 = 0, z = σ(0) = 1/2. With b_ir = +100 (r = 1): n = tanh(r·1) =
    // tanh(1) and h1 = (1 - z)·n = tanh(1)/2. With b_ir = -100 (r = 0): n = tanh(0) = 0, h1 = 0;
    // the wrong form W_hn(r ⊙ h) + b_hn would still give tanh(1)/2 there.
    for (const [bir, expected] of [[100, Math.tanh(1) / 2], [-100, 0]] as const) {
      const m = new nn.GRU(1, 1);
      for (const p of m.parameters()) nn.init.zeros_(p);
      noGrad(() => {
        m.getParameter('bias_hh_l0').copy_(indicator(3, 2)); // b_hn = 1
        m.getParameter('bias_ih_l0').copy_(indicator(3, 0).mul(bir));
      });
      const [, h] = m.forward(zeros([1, 1, 1]));
      expect(h.item()).toBeCloseTo(expected, 6);
    }
  });

  it('returns [output, h] for unbatched input', () => {
    const m = new nn.GRU(3, 2, { numLayers: 3 });
    const [out, h] = m.forward(randn([4, 3]));
    expect(out.shape).toEqual([4, 2]);
    expect(h.shape).toEqual([3, 2]);
  });

  it('sends gradients to every parameter', () => {
    manualSeed(6);
    const m = new nn.GRU(3, 4, { numLayers: 2, bidirectional: true, batchFirst: true });
    const [out, h] = m.forward(randn([2, 4, 3]));
    out.pow(2).sum().add(h.sum()).backward();
    for (const [name, p] of m.namedParameters()) expect(p.grad?.toArray().some((v) => v !== 0), name).toBe(true);
  });

  it('applies inter-layer dropout only in training mode', () => {
    manualSeed(7);
    const m = new nn.GRU(3, 4, { numLayers: 2, dropout: 0.5 });
    const x = randn([3, 2, 3]);
    m.eval();
    const [a] = m.forward(x), [b] = m.forward(x);
    expect(a.toArray()).toEqual(b.toArray());
    m.train();
    const [c] = m.forward(x);
    expect(c.toArray()).not.toEqual(a.toArray());
  });
});

/** A [n] float tensor with a 1 at index i. */
function indicator(n: number, i: number): Tensor {
  const t = zeros([n]);
  (t.data as Float32Array)[i] = 1;
  return t;
}
