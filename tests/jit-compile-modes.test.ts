// jit.compile's modes give the default mode's (and eager's) outputs: 'reduce-overhead' reuses the
// last call's graph on its guards alone (a changed shape or attribute still recompiles);
// 'max-autotune' times pass-list candidates per graph, keeps the fastest, shows the choice in
// explain() and caches it per device and graph.
import { describe, it, expect } from 'vitest';
import { F, jit, manualSeed, nn, noGrad, optim, randn, tensor, type Tensor } from 'kiln';
import { ModeHead } from './script-models/guarded.js';

function expectClose(a: Tensor, b: Tensor, tol = 1e-5): void {
  expect(a.shape).toEqual(b.shape);
  const x = a.toArray(), y = b.toArray();
  for (let i = 0; i < y.length; i++) expect(Math.abs(x[i] - y[i])).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(y[i])));
}

const convNet = () => new nn.Sequential(
  new nn.Conv2d(2, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(),
  new nn.Conv2d(8, 8, 3, { padding: 1 }), new nn.ReLU(), new nn.Flatten(), new nn.Linear(8 * 6 * 6, 4));

describe("jit.compile mode 'reduce-overhead'", () => {
  it('repeated calls reuse the last graph on its guards; a new shape or a changed attribute recompiles; outputs as eager and as the default mode', () => {
    manualSeed(41);
    const m = new ModeHead().eval();
    const fast = jit.compile(m, { mode: 'reduce-overhead' }), plain = jit.compile(m);
    const check = (x: Tensor) => {
      const want = noGrad(() => m.forward(x));
      expectClose(noGrad(() => fast.forward(x)), want);
      expectClose(noGrad(() => plain.forward(x)), want);
    };
    const x = randn([2, 4]);
    for (let i = 0; i < 4; i++) check(x.add(i));
    expect(fast.explain().fastCalls).toBe(3);
    check(randn([3, 4]));
    m.mode = 'seg';
    check(randn([3, 4]));
    check(randn([3, 4]));
    const e = fast.explain();
    expect(e.mode).toBe('reduce-overhead');
    expect(e.compiles).toBe(plain.explain().compiles);
    expect(e.recompiles).toEqual(plain.explain().recompiles);
    expect(e.recompiles[1]).toBe('this.mode changed from "cls" to "seg"');
    expect(e.fastCalls).toBe(4);
    expect(plain.explain().fastCalls).toBe(0);
  });

  it('training steps: same losses and parameters as eager', () => {
    manualSeed(42);
    const a = convNet(), b = convNet();
    b.loadStateDict(a.stateDict());
    const c = jit.compile(b, { mode: 'reduce-overhead' });
    const oa = new optim.Adam(a.parameters(), { lr: 0.01 }), ob = new optim.Adam(b.parameters(), { lr: 0.01 });
    const y = tensor(new Int32Array([0, 1, 2, 3]), { shape: [4] });
    for (let s = 0; s < 4; s++) {
      const x = randn([4, 2, 6, 6]);
      oa.zeroGrad(); ob.zeroGrad();
      const la = F.crossEntropy(a.forward(x), y), lb = F.crossEntropy(c.forward(x) as Tensor, y);
      expectClose(lb, la);
      la.backward(); lb.backward();
      oa.step(); ob.step();
    }
    // 0.bias feeds a training-mode BatchNorm: its gradient is 0 in exact arithmetic, and Adam
    // scales the rounding noise left (which differs between eager's decomposed batch-norm
    // gradient and the compiled one-kernel batch_norm_backward) up to lr-sized steps; it changes
    // no output (the losses above agree). Every other parameter must agree.
    const names = b.namedParameters().map(([n]) => n);
    b.parameters().forEach((p, i) => { if (names[i] !== '0.bias') expectClose(p, a.parameters()[i], 1e-4); });
    expect(c.explain().fastCalls).toBe(3);
  });
});

describe("jit.compile mode 'max-autotune'", () => {
  it('inference: eager outputs; the timed candidates and the choice are in explain(); a second model with the same graph reuses the choice', () => {
    manualSeed(43);
    const m = convNet().eval();
    const c = jit.compile(m, { mode: 'max-autotune' });
    const x = randn([2, 2, 6, 6]);
    expectClose(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    const [choice] = c.explain().graphs[0].autotune!;
    expect(choice.graph).toBe('inference');
    expect(Object.keys(choice.ms)).toEqual(['-O2', '-O2 without fuse-elementwise', '-O2 without fuse-epilogue and fuse-elementwise']);
    expect(Object.keys(choice.ms)).toContain(choice.chosen);
    expect(choice.ms[choice.chosen]).toBe(Math.min(...Object.values(choice.ms)));
    expect(choice.cached).toBe(false);
    const other = convNet().eval();
    const c2 = jit.compile(other, { mode: 'max-autotune' });
    expectClose(noGrad(() => c2.forward(x)), noGrad(() => other.forward(x)));
    expect(c2.explain().graphs[0].autotune![0]).toMatchObject({ chosen: choice.chosen, cached: true });
  });

  it('training: forward and backward graphs are tuned; losses and parameters as eager; the random stream is untouched by the timing', () => {
    manualSeed(44);
    const mk = () => new nn.Sequential(new nn.Linear(6, 16), new nn.ReLU(), new nn.Dropout(0.3), new nn.Linear(16, 3));
    const a = mk(), b = mk();
    b.loadStateDict(a.stateDict());
    const c = jit.compile(b, { mode: 'max-autotune' });
    const oa = new optim.SGD(a.parameters(), { lr: 0.1 }), ob = new optim.SGD(b.parameters(), { lr: 0.1 });
    const y = tensor(new Int32Array([0, 1, 2, 0, 1]), { shape: [5] });
    for (let s = 0; s < 3; s++) {
      const x = randn([5, 6]);
      oa.zeroGrad(); ob.zeroGrad();
      manualSeed(100 + s);
      const la = F.crossEntropy(a.forward(x), y);
      manualSeed(100 + s);
      const lb = F.crossEntropy(c.forward(x) as Tensor, y);
      expectClose(lb, la);
      la.backward(); lb.backward();
      oa.step(); ob.step();
    }
    b.parameters().forEach((p, i) => expectClose(p, a.parameters()[i], 1e-4));
    const tuned = c.explain().graphs[0].autotune!;
    expect(tuned.map((t) => t.graph)).toEqual(['forward', 'backward']);
    for (const t of tuned) expect(['unfused elementwise', 'fused elementwise']).toContain(t.chosen);
  });

  it('an unknown mode is refused, naming the modes', () => {
    expect(() => jit.compile(new nn.Linear(2, 2), { mode: 'fastest' as never })).toThrow(/unknown mode 'fastest'; use 'default', 'reduce-overhead' or 'max-autotune'/);
  });
});
