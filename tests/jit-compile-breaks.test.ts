// Graph breaks in jit.compile: a forward the compiler cannot capture (syntax the scripter
// refuses together with a branch on a tensor's value, which makes a trace unusable) runs eagerly
// with its submodules compiled, giving eager's outputs, gradients and buffer updates; explain()
// lists the break with its source location and the submodules' graphs; fullgraph makes it a
// located error.
import { describe, it, expect, vi, afterEach } from 'vitest';
import { F, jit, manualSeed, nn, noGrad, randn, type Tensor } from 'kiln';

afterEach(() => { vi.restoreAllMocks(); });

class Gated extends nn.Module {
  enc = new nn.Sequential(new nn.Linear(4, 8), new nn.BatchNorm1d(8), new nn.ReLU());
  dec = new nn.Linear(8, 3);
  forward(x: Tensor): Tensor {
    const h = this.enc.forward(x);
    const gate = typeof this.dec === 'object' && h.mean().item() > 0.3 ? 1 : -1;
    return this.dec.forward(h.mul(gate));
  }
}

function expectClose(a: Tensor, b: Tensor, tol = 1e-5): void {
  expect(a.shape).toEqual(b.shape);
  const x = a.toArray(), y = b.toArray();
  for (let i = 0; i < y.length; i++) expect(Math.abs(x[i] - y[i])).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(y[i])));
}

describe('jit.compile: graph breaks', () => {
  it('the forward runs eagerly around the break with its submodules compiled: eager outputs, gradients and BatchNorm statistics; explain lists the break and the parts', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    manualSeed(21);
    const m = new Gated(), ref = new Gated();
    ref.loadStateDict(m.stateDict());
    const c = jit.compile(m);
    for (let step = 0; step < 3; step++) {
      const x = randn([6, 4]), y = randn([6, 3]);
      const lossC = F.mseLoss(c.forward(x) as Tensor, y);
      const lossE = F.mseLoss(ref.forward(x) as Tensor, y);
      expectClose(lossC, lossE);
      lossC.backward(); lossE.backward();
      m.parameters().forEach((p, i) => expectClose(p.grad!, ref.parameters()[i].grad!));
      m.buffers().forEach((b, i) => expectClose(b, ref.buffers()[i]));
    }
    m.eval(); ref.eval();
    const x = randn([2, 4]);
    expectClose(noGrad(() => c.forward(x)) as Tensor, noGrad(() => ref.forward(x)) as Tensor);

    const e = c.explain();
    expect(e.graphBreaks.length).toBe(2); // grad mode and noGrad: one entry per signature
    expect(e.graphBreaks[0].reason).toMatch(/^cannot capture Gated\.forward: the scripter: .*'typeof' is .*the tracer: the trace is not reusable/s);
    expect(e.graphBreaks[0].where).toMatch(/Gated\.forward.*:3:\d+$/);
    // The parts: each submodule's training graph, then its inference graph after eval().
    expect(e.graphs.map((g) => `${g.module} ${g.training ? 'train' : 'infer'}`)).toEqual(['enc train', 'enc infer', 'dec train', 'dec infer']);
    expect(warn.mock.calls.filter(([s]) => /graph break/.test(String(s))).length).toBe(2);
  });

  it('a second call with the same signature reuses the parts (no recompilation)', () => {
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    const m = new Gated().eval();
    const c = jit.compile(m);
    for (let i = 0; i < 3; i++) { const x = randn([2, 4]); expectClose(noGrad(() => c.forward(x)) as Tensor, noGrad(() => m.forward(x)) as Tensor); }
    const e = c.explain();
    expect(e.compiles).toBe(1);
    expect(e.graphs.length).toBe(2);
    expect(e.graphBreaks.length).toBe(1);
  });

  it('fullgraph: true throws at the break, with its location', () => {
    const c = jit.compile(new Gated(), { fullgraph: true });
    expect(() => c.forward(randn([2, 4]))).toThrow(/^jit\.compile\(Gated, \{ fullgraph: true \}\): Gated\.forward.*:3:\d+: cannot capture Gated\.forward: the scripter: .*'typeof'/s);
  });
});
