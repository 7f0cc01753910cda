// loss.backward() through a jit.trace'd module into the eager code around it: the traced module
// owns the traced model's parameters (same tensors, same names), a parent module and its
// optimizer see them, and gradients match eager's for the parameters and the input.
import { describe, it, expect } from 'vitest';
import { F, jit, manualSeed, nn, optim, randn, type Tensor } from 'kiln';

class Outer extends nn.Module {
  head = new nn.Linear(6, 3);
  constructor(public body: nn.Module) { super(); }
  forward(x: Tensor): Tensor { return this.head.forward(this.body.forward(x.mul(2)).tanh()); }
}

const mlp = () => new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 6));

function expectClose(a: Tensor, b: Tensor, tol = 1e-5): void {
  expect(a.shape).toEqual(b.shape);
  const x = a.toArray(), y = b.toArray();
  for (let i = 0; i < y.length; i++) expect(Math.abs(x[i] - y[i])).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(y[i])));
}

describe('backward through jit.trace', () => {
  it('a traced submodule: same loss, gradients and parameters as eager over 5 Adam steps; parameters() and stateDict() keep their names', () => {
    manualSeed(3);
    const eager = new Outer(mlp());
    const body = mlp();
    body.loadStateDict((eager.body as nn.Module).stateDict());
    const traced = jit.trace(body, [randn([5, 4])], { dynamicAxes: { 0: { 0: 'N' } } });
    const model = new Outer(traced);
    model.head.loadStateDict(eager.head.stateDict());
    expect(traced).toBeInstanceOf(nn.Module);
    expect(model.namedParameters().map(([n]) => n)).toEqual(eager.namedParameters().map(([n]) => n));
    expect(Object.keys(model.stateDict())).toEqual(Object.keys(eager.stateDict()));
    expect(traced.parameters()).toEqual(body.parameters()); // the same tensors, not copies
    const optA = new optim.Adam(eager.parameters(), { lr: 0.05 }), optB = new optim.Adam(model.parameters(), { lr: 0.05 });
    for (let step = 0; step < 5; step++) {
      const x = randn([3 + step, 4], { requiresGrad: true }), y = randn([3 + step, 3]);
      optA.zeroGrad(); optB.zeroGrad();
      const la = F.mseLoss(eager.forward(x), y);
      la.backward();
      const gx = x.grad!.clone();
      x.grad = null;
      const lb = F.mseLoss(model.forward(x), y);
      lb.backward();
      expectClose(lb, la);
      expectClose(x.grad!, gx);
      model.parameters().forEach((p, i) => expectClose(p.grad!, eager.parameters()[i].grad!));
      optA.step(); optB.step();
    }
    model.parameters().forEach((p, i) => expectClose(p, eager.parameters()[i]));
  });

  it('without gradients needed it runs the plain graph (no autograd node); a frozen body passes gradients to the input only', () => {
    manualSeed(4);
    const body = mlp();
    const traced = jit.trace(body, [randn([2, 4])]);
    const x = randn([2, 4]);
    body.requiresGrad_(false);
    expect((traced.forward(x) as Tensor).requiresGrad).toBe(false);
    const xg = randn([2, 4], { requiresGrad: true });
    (traced.forward(xg) as Tensor).sum().backward();
    const want = randn([2, 4], { requiresGrad: true });
    want.data.set(xg.data);
    (body.forward(want) as Tensor).sum().backward();
    expectClose(xg.grad!, want.grad!);
    expect(body.parameters().every((p) => p.grad === null)).toBe(true);
  });
});
