// jit.trace with non-tensor arguments (a number, a flag, a string, an options object): each is a
// constant of the trace, a note says so, and a call with another value throws a
// TraceArgumentError naming the argument; an argument that cannot be a constant (a tensor inside
// an object) is refused. And a forward that calls autograd.grad (an input-gradient model):
// checkTrace runs eager in the caller's grad mode, and the traced graph computes the gradient.
import { describe, it, expect, vi } from 'vitest';
import { jit, manualSeed, randn, noGrad, nn, autograd, type Tensor } from 'kiln';

function close(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

interface Opts { mode: string; k: number }

class Options extends nn.Module {
  fc = new nn.Linear(4, 4);
  forward(x: Tensor, scale: number, flip: boolean, act: string, opts: Opts): Tensor {
    let h = this.fc.forward(x).mul(scale);
    if (flip) h = h.neg();
    h = act === 'relu' ? h.relu() : h.tanh();
    return opts.mode === 'sum' ? h.sum(1).mul(opts.k) : h.mul(opts.k);
  }
}

class InputGradient extends nn.Module {
  fc = new nn.Linear(4, 3);
  forward(x: Tensor): Tensor {
    const xr = x.detach().requiresGrad_();
    const y = this.fc.forward(xr).tanh().sum();
    const [g] = autograd.grad(y, xr, { createGraph: true });
    return g!.pow(2).sum(1);
  }
}

/** Accumulates into .grad inside forward: a side effect the graph cannot keep. */
class BackwardInside extends nn.Module {
  fc = new nn.Linear(4, 1);
  forward(x: Tensor): Tensor {
    const y = this.fc.forward(x).sum();
    y.backward();
    return this.fc.weight.grad!.mul(x.sum());
  }
}

describe('jit.trace with non-tensor arguments', () => {
  it('bakes numbers, booleans, strings and options objects in, notes it, and checks them on every call', () => {
    manualSeed(1);
    const m = new Options();
    const x = randn([2, 4]);
    const args = [2.5, true, 'relu', { mode: 'sum', k: 3 }] as const;
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const t = jit.trace(m, [x, ...args], { dynamicAxes: { 0: { 0: 'N' } } });
    const notes = warn.mock.calls.map((c) => String(c[0]));
    warn.mockRestore();
    expect(notes).toContain("TraceNote: argument 1 ('scale') is not a tensor; its value 2.5 is baked into the graph, and the traced module must be called with the same value (it throws otherwise). Use jit.script to keep numbers and booleans as run-time arguments.");
    expect(notes.some((n) => n.includes("argument 4 ('opts')") && n.includes('{"mode":"sum","k":3}'))).toBe(true);
    expect(t.graph.inputs.filter((i) => i.kind === 'input').map((i) => i.name)).toEqual(['x']);
    const x5 = randn([5, 4]);
    close(t.forward(x5, ...args) as Tensor, noGrad(() => m.forward(x5, ...args)));
    close(t.forward(x5, 2.5, true, 'relu', { k: 3, mode: 'sum' }) as Tensor, noGrad(() => m.forward(x5, ...args)));
    expect(() => t.forward(x5, 3, true, 'relu', { mode: 'sum', k: 3 })).toThrow(jit.TraceArgumentError);
    expect(() => t.forward(x5, 3, true, 'relu', { mode: 'sum', k: 3 })).toThrow(
      "the traced Options: argument 1 ('scale') was traced as the constant 2.5, which is baked into the graph, but this call passes 3. " +
      'Pass 2.5, trace again with the new value, or compile with jit.script, whose graphs take numbers and booleans as run-time arguments.');
    expect(() => t.forward(x5, 2.5, false, 'relu', { mode: 'sum', k: 3 })).toThrow("argument 2 ('flip') was traced as the constant true");
    expect(() => t.forward(x5, 2.5, true, 'tanh', { mode: 'sum', k: 3 })).toThrow("argument 3 ('act') was traced as the constant \"relu\"");
    expect(() => t.forward(x5, 2.5, true, 'relu', { mode: 'mean', k: 3 })).toThrow("argument 4 ('opts') was traced as the constant {\"mode\":\"sum\",\"k\":3}");
    expect(() => t.forward(x5, 2.5)).toThrow('the traced Options was traced with 5 argument(s) but is called with 2');
    // Optimizing keeps the checks.
    const o = jit.optimizeForInference(t);
    close(o.forward(x5, ...args) as Tensor, noGrad(() => m.forward(x5, ...args)));
    expect(() => o.forward(x5, 1, true, 'relu', { mode: 'sum', k: 3 })).toThrow(jit.TraceArgumentError);
  });

  it('refuses an argument that cannot be a constant, and dynamicAxes on a non-tensor, with what to do', () => {
    const m = new Options();
    const x = randn([2, 4]);
    expect(() => jit.trace(m, [x, 2, true, 'relu', { mode: 'sum', k: randn([1]) }], { warn: false })).toThrow(
      "jit.trace: argument 4 ('opts') holds a tensor at opts.k; a non-tensor argument becomes a constant of the trace, so it may hold only " +
      'numbers, booleans, strings, null and arrays or plain objects of them. Pass tensors as separate arguments (or compile with jit.script).');
    expect(() => jit.trace(m, [x, 2, true, 'relu', { mode: 'sum', k: 1 }], { warn: false, dynamicAxes: { 1: { 0: 'N' } } })).toThrow(
      'jit.trace: dynamicAxes names input 1, which is number, not a tensor; only tensor dims can be dynamic');
  });
});

describe('jit.trace of a forward that calls autograd.grad', () => {
  it('checkTrace runs eager in grad mode; the graph computes the input gradient at other sizes and values', () => {
    manualSeed(2);
    const m = new InputGradient();
    const t = jit.trace(m, [randn([2, 4])], { dynamicAxes: { 0: { 0: 'N' } }, checkInputs: [[randn([5, 4])]], warn: false });
    for (const n of [1, 3, 8]) {
      const x = randn([n, 4]);
      close(t.forward(x) as Tensor, m.forward(x) as Tensor);
    }
    const o = jit.optimizeForInference(t);
    const x = randn([6, 4]);
    close(o.forward(x) as Tensor, m.forward(x) as Tensor);
  });

  it('refuses backward() inside the traced forward, at its line, saying to use autograd.grad', () => {
    const m = new BackwardInside();
    let err: unknown;
    try { jit.trace(m, [randn([2, 4])], { warn: false }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(jit.TraceError);
    expect((err as Error).message).toMatch(/^jit\.trace: backward\(\) at .*trace-arguments\.test\.ts:\d+:\d+ inside the traced forward accumulates gradients into \.grad, a side effect a graph cannot reproduce\. Compute the gradients with autograd\.grad\(outputs, inputs, \{ createGraph: true \}\) and use its result, or call backward\(\) outside the traced forward\.$/);
  });
});
