// jit.compile: the seed documents' models give eager's outputs and gradients; graphs are cached
// per input signature and guard set (recompilation counts for fixed shapes, a varying batch, a
// changed attribute, the recompile limit); parameters stay the module's own and are read live;
// code that cannot be captured (training through data-dependent control flow) runs eagerly and
// is listed, or fails with fullgraph.
import { describe, it, expect, vi, afterEach } from 'vitest';
import { autograd, F, jit, manualSeed, nn, noGrad, optim, randn, tensor, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/seed/models.mjs';
import { AdaptiveResNet } from '../examples/cli/adaptive-resnet.js';
import { AttentionBlock, causalMask, LstmModel } from './models/trace-models.js';
import { Stack } from './script-models/control-flow.js';
import { ModeHead } from './script-models/guarded.js';

afterEach(() => { vi.restoreAllMocks(); });

/** Calls two methods that stay eager JavaScript (marked @jit.ignore by hand: no decorator syntax here). */
class CallsIgnored extends nn.Module {
  seen: number[] = [];
  forward(x: Tensor): Tensor {
    const h = x.mul(2);
    this.log(h.sum(), x.shape[0]);
    return this.debug(h, 3).relu();
  }
  debug(x: Tensor, k: number): Tensor { return x.sub(k); }
  log(_total: Tensor, n: number): void { this.seen.push(n); }
}
jit.ignore(CallsIgnored.prototype.debug, {} as ClassMethodDecoratorContext);
jit.ignore(CallsIgnored.prototype.log, {} as ClassMethodDecoratorContext);

function flat(v: unknown): Tensor[] {
  if (Array.isArray(v)) return v.flatMap(flat);
  if (v && typeof v === 'object' && !('shape' in v)) return Object.values(v).flatMap(flat);
  return [v as Tensor];
}

function close(got: unknown, want: unknown, tol = 1e-5): void {
  const g = flat(got), w = flat(want);
  expect(g.length).toBe(w.length);
  g.forEach((t, k) => {
    expect(t.shape).toEqual(w[k].shape);
    const a = t.toArray(), b = w[k].toArray();
    let worst = 0; // the largest excess over the tolerance (one expect: millions of weights)
    for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) - tol * Math.max(1, Math.abs(b[i])));
    expect(worst).toBeLessThanOrEqual(0);
  });
}

function grads(m: nn.Module): Tensor[] {
  return m.parameters().map((p) => p.grad!.clone());
}

describe('jit.compile: same outputs as eager (inference)', () => {
  const cases: [string, () => nn.Module, () => unknown[]][] = [
    ['ResearchModel', () => new ResearchModel(), () => [randn([2, 3, 32, 32])]],
    ['AdaptiveResNet (if and while on the data)', () => new AdaptiveResNet(), () => [randn([2, 3, 16, 16])]],
    ['a ModuleList loop', () => new Stack(), () => [randn([3, 5])]],
    ['an LSTM', () => new LstmModel(), () => [randn([2, 5, 6])]],
    ['an attention block', () => new AttentionBlock(tensor(causalMask(4)), false), () => [randn([2, 4, 16])]],
  ];
  for (const [name, make, inputs] of cases) {
    it(name, () => {
      manualSeed(3);
      const m = make().eval();
      const c = jit.compile(m);
      const args = inputs();
      const want = noGrad(() => m.forward(...args));
      close(noGrad(() => c.forward(...args)), want);
      close(noGrad(() => c.forward(...args)), want);
      expect(c.explain().compiles).toBe(1);
      expect(c.explain().graphBreaks).toEqual([]);
    });
    it(`${name}: other batch sizes (the batch dim becomes symbolic)`, () => {
      manualSeed(3);
      const m = make().eval();
      const c = jit.compile(m);
      for (const n of [2, 3, 5]) {
        const args = inputs().map((a) => (a as Tensor).shape ? randn([n, ...(a as Tensor).shape.slice(1)]) : a);
        close(noGrad(() => c.forward(...args)), noGrad(() => m.forward(...args)));
      }
      expect(c.explain().compiles).toBe(2);
    });
  }
});

describe('jit.compile: training through compiled graphs', () => {
  const cases: [string, () => nn.Module, () => unknown[]][] = [
    ['ResearchModel', () => new ResearchModel(), () => [randn([2, 3, 32, 32])]],
    ['a ModuleList loop', () => new Stack(), () => [randn([3, 5])]],
    ['an LSTM', () => new LstmModel(), () => [randn([2, 5, 6])]],
    ['an attention block', () => new AttentionBlock(tensor(causalMask(4)), false), () => [randn([2, 4, 16])]],
  ];
  for (const [name, make, inputs] of cases) {
    it(`${name}: gradients reach the parameters and eager code before and after`, () => {
      manualSeed(4);
      const m = make();
      const pre = new nn.Linear(flat(inputs())[0].shape.at(-1)!, flat(inputs())[0].shape.at(-1)!);
      const args = inputs();
      const lossOf = (f: (...a: unknown[]) => unknown) => flat(f(pre.forward(args[0] as Tensor), ...args.slice(1))).reduce((s: Tensor, t) => s.add(t.square().mean()), tensor(0));
      manualSeed(5);
      const want = lossOf((...a) => m.forward(...a));
      want.backward();
      const gm = grads(m), gp = grads(pre);
      m.zeroGrad(); pre.zeroGrad();
      const c = jit.compile(m);
      manualSeed(5);
      const got = lossOf((...a) => c.forward(...a));
      got.backward();
      close(got, want);
      grads(m).forEach((g, i) => close(g, gm[i], 1e-4));
      grads(pre).forEach((g, i) => close(g, gp[i], 1e-4));
      expect(c.explain().graphs.map((g) => g.training)).toEqual([true]);
    });
  }

  it('a compiled function: gradients of its tensor arguments', () => {
    const f = jit.compile((x: Tensor, w: Tensor) => x.matmul(w).tanh().sum());
    const x = randn([3, 4], { requiresGrad: true }), w = randn([4, 2], { requiresGrad: true });
    f(x, w).backward();
    const [gx, gw] = [x.grad!.clone(), w.grad!.clone()];
    x.grad = null; w.grad = null;
    x.matmul(w).tanh().sum().backward();
    close(gx, x.grad!); close(gw, w.grad!);
  });

  it('the saved tensors are freed after backward: a second backward fails as in eager', () => {
    const c = jit.compile(new nn.Linear(3, 2));
    const y = c.forward(randn([2, 3])).sum();
    y.backward();
    expect(() => y.backward()).toThrow(/backward through the graph a second time/);
  });

  it('higher-order gradients run the forward again eagerly (one warning): a gradient penalty gives eager\'s gradients', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const make = () => { manualSeed(2); return new nn.Sequential(new nn.Linear(3, 4), new nn.Tanh(), new nn.Linear(4, 1)); };
      const m = make(), ref = make(), c = jit.compile(m);
      const x = randn([2, 3], { requiresGrad: true }), xr = x.detach().clone().requiresGrad_(true);
      for (let step = 0; step < 2; step++) {
        const [gx] = autograd.grad((c.forward(x) as Tensor).sum(), x, { createGraph: true });
        gx!.square().sum().backward();
        const [gr] = autograd.grad((ref.forward(xr) as Tensor).sum(), xr, { createGraph: true });
        gr!.square().sum().backward();
        close(gx!, gr!);
      }
      // The last bias does not reach dy/dx: no gradient, as in eager.
      expect(m.parameters().map((p) => p.grad === null)).toEqual([false, false, false, true]);
      m.parameters().forEach((p, i) => { if (p.grad) close(p.grad, ref.parameters()[i].grad!); });
      expect(ref.parameters()[3].grad).toBeNull();
      close(x.grad!, xr.grad!);
      expect(warn.mock.calls.filter(([msg]) => /higher-order gradients/.test(String(msg)))).toHaveLength(1);
    } finally {
      warn.mockRestore();
    }
  });

  it('the eager re-run of a higher-order backward draws dropout\'s mask again and leaves batch-norm statistics and the generator as they were', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const make = () => { manualSeed(3); return new nn.Sequential(new nn.Linear(3, 6), new nn.BatchNorm1d(6), new nn.Tanh(), new nn.Dropout(0.4), new nn.Linear(6, 1)); };
      const m = make().train(), ref = make().train(), c = jit.compile(m);
      const x = randn([5, 3], { requiresGrad: true }), xr = x.detach().clone().requiresGrad_(true);
      manualSeed(9);
      const [gx] = autograd.grad((c.forward(x) as Tensor).sum(), x, { createGraph: true });
      const after = randn([3]);
      manualSeed(9);
      const [gr] = autograd.grad((ref.forward(xr) as Tensor).sum(), xr, { createGraph: true });
      close(after, randn([3]));
      close(gx!, gr!);
      gx!.square().sum().backward();
      gr!.square().sum().backward();
      m.parameters().forEach((p, i) => expect(p.grad === null).toBe(ref.parameters()[i].grad === null));
      m.parameters().forEach((p, i) => { if (p.grad) close(p.grad, ref.parameters()[i].grad!); });
      m.namedBuffers().forEach(([, b], i) => close(b, ref.namedBuffers()[i][1]));
    } finally {
      warn.mockRestore();
    }
  });
});

describe('jit.compile: parameters stay the module\'s own', () => {
  it('parameters() and stateDict() show them; an optimizer step is seen by the next call (no frozen copy)', () => {
    manualSeed(6);
    const m = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 2));
    const c = jit.compile(m);
    expect(c.parameters().length).toBe(m.parameters().length);
    expect(c.parameters().every((p, i) => p === m.parameters()[i])).toBe(true);
    expect(Object.keys(c.stateDict())).toEqual(Object.keys(m.stateDict()).map((k) => `_orig_mod.${k}`));
    const x = randn([5, 4]);
    const opt = new optim.SGD(c.parameters(), { lr: 0.1 });
    const before = noGrad(() => c.forward(x)) as Tensor;
    (c.forward(x) as Tensor).square().sum().backward();
    opt.step();
    const after = noGrad(() => c.forward(x)) as Tensor;
    close(after, noGrad(() => m.forward(x)));
    expect(Math.abs(after.toArray()[0] - before.toArray()[0])).toBeGreaterThan(1e-4);
    expect(c.explain().compiles).toBe(2); // one inference graph, one training graph: no recompilation for new weights
    expect(c.explain().rebinds).toBe(1);  // the inference graph took the stepped weights
  });

  it('under noGrad a training-mode module keeps its dropout (not frozen to eval), drawing what eager draws', () => {
    const m = new nn.Sequential(new nn.Linear(6, 6), new nn.Dropout(0.5));
    const c = jit.compile(m);
    const x = randn([4, 6]);
    manualSeed(12);
    const want = noGrad(() => m.forward(x));
    manualSeed(12);
    close(noGrad(() => c.forward(x)), want);
    expect((want as Tensor).toArray().filter((v) => v === 0).length).toBeGreaterThan(0);
  });

  it('a replaced parameter tensor recompiles, naming it', () => {
    const m = new nn.Linear(3, 2);
    const c = jit.compile(m);
    const x = randn([2, 3]);
    noGrad(() => c.forward(x));
    m.weight = new nn.Parameter(randn([2, 3]));
    close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    expect(c.explain().recompiles).toEqual(['this.weight changed from the tensor the graph was compiled with to another tensor (replaced)']);
  });

  it('training-mode BatchNorm: running statistics are updated as eager does', () => {
    manualSeed(7);
    const a = new nn.Sequential(new nn.Conv2d(1, 3, 3), new nn.BatchNorm2d(3));
    const b = new nn.Sequential(new nn.Conv2d(1, 3, 3), new nn.BatchNorm2d(3));
    b.loadStateDict(a.stateDict());
    const c = jit.compile(b);
    const x = randn([2, 1, 6, 6]);
    for (let i = 0; i < 2; i++) { a.forward(x); c.forward(x); }
    close(b.getBuffer('1.running_mean'), a.getBuffer('1.running_mean'));
    close(b.getBuffer('1.running_var'), a.getBuffer('1.running_var'));
  });
});

describe('jit.compile: guards and recompilation', () => {
  it('fixed shapes compile once', () => {
    const c = jit.compile(new nn.Linear(4, 3));
    for (let i = 0; i < 4; i++) noGrad(() => c.forward(randn([2, 4])));
    expect(c.explain().compiles).toBe(1);
  });

  it('a varying batch compiles twice, then the dim is symbolic', () => {
    const m = new nn.Linear(4, 3);
    const c = jit.compile(m);
    for (const n of [2, 3, 4, 7, 1]) {
      const x = randn([n, 4]);
      close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    }
    const e = c.explain();
    expect(e.compiles).toBe(2);
    expect(e.recompiles).toEqual(['argument 0 dim 0 changed from 2 to 3 (now symbolic)']);
    expect(e.graphs[1].inputs).toBe('float32[?,4]');
  });

  it('with gradients enabled, graphs keep exact shapes: a new batch size compiles again and gives eager\'s gradients', () => {
    manualSeed(13);
    const m = new ResearchModel(), ref = new ResearchModel();
    ref.loadStateDict(m.stateDict());
    const c = jit.compile(m);
    for (const n of [2, 3, 4]) {
      const x = randn([n, 3, 32, 32]);
      manualSeed(n);
      (c.forward(x) as Tensor).square().sum().backward();
      manualSeed(n);
      (ref.forward(x) as Tensor).square().sum().backward();
      m.parameters().forEach((p, i) => close(p.grad!, ref.parameters()[i].grad!, 1e-4));
      m.zeroGrad(); ref.zeroGrad();
    }
    expect(c.explain().compiles).toBe(3);
    expect(c.explain().recompiles[0]).toBe('argument 0 dim 0 changed from 2 to 3 (graphs for training keep exact shapes)');
  });

  it('dynamic: false compiles once per size', () => {
    const c = jit.compile(new nn.Linear(4, 3), { dynamic: false });
    for (const n of [2, 3, 4]) noGrad(() => c.forward(randn([n, 4])));
    expect(c.explain().compiles).toBe(3);
    expect(c.explain().recompiles[0]).toBe('argument 0 dim 0 changed from 2 to 3');
  });

  it('a changed attribute compiles once more; changing it back reuses the first graph', () => {
    const m = new ModeHead();
    const c = jit.compile(m);
    const x = randn([2, 4]);
    close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    m.mode = 'seg';
    close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    m.mode = 'cls';
    close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    expect(c.explain().compiles).toBe(2);
    expect(c.explain().recompiles).toEqual(['this.mode changed from "cls" to "seg"']);
    expect(c.explain().graphs[0].guards).toContain('this.mode');
  });

  it('after the recompile limit it runs eagerly, with one warning naming the guard', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const m = new ModeHead();
    const c = jit.compile(m, { recompileLimit: 3 });
    const x = randn([2, 4]);
    for (let i = 0; i < 8; i++) {
      m.scale = i;
      close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    }
    const e = c.explain();
    expect(e.compiles).toBe(4);
    expect(e.eagerFallback).toBe(true);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toMatch(/recompiled 3 times.*this\.scale changed from 3 to 4.*eagerly/);
  });

  it('grad mode is part of the key: inference and training graphs are separate', () => {
    const c = jit.compile(new nn.Linear(4, 3));
    const x = randn([2, 4]);
    noGrad(() => c.forward(x));
    c.forward(x);
    expect(c.explain().recompiles).toEqual(['grad mode changed (gradients now enabled)']);
  });
});

describe('jit.compile: graph breaks, options', () => {
  it('training through data-dependent control flow runs eagerly, gives eager\'s gradients and lists the break', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    manualSeed(8);
    const m = new AdaptiveResNet();
    const c = jit.compile(m);
    const x = randn([2, 3, 16, 16]);
    manualSeed(9);
    const want = (m.forward(x) as Tensor).square().sum();
    want.backward();
    const g = grads(m);
    m.zeroGrad();
    manualSeed(9);
    const got = (c.forward(x) as Tensor).square().sum();
    got.backward();
    close(got, want);
    grads(m).forEach((t, i) => close(t, g[i]));
    const breaks = c.explain().graphBreaks;
    expect(breaks.length).toBe(1);
    // Training-mode BatchNorm inside the `if`: the scripter refuses (located), the trace would bake one path.
    expect(breaks[0].reason).toMatch(/^cannot capture AdaptiveResNet\.forward: the scripter: AdaptiveResNet\.forward .*:4:\d+: .*inside an if\/loop/s);
    expect(breaks[0].reason).toMatch(/the tracer: the trace is not reusable/);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('in eval mode the same model is scripted with its regions; gradients through them run eagerly, listed', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const m = new AdaptiveResNet().eval();
    const c = jit.compile(m);
    const x = randn([2, 3, 16, 16]);
    close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    (c.forward(x) as Tensor).sum().backward();
    const g = grads(m);
    m.zeroGrad();
    (m.forward(x) as Tensor).sum().backward();
    grads(m).forEach((t, i) => close(t, g[i]));
    // The whole-model inference graph, then (training through its regions breaks) each submodule's training graph.
    expect(c.explain().graphs.map((e) => e.module ?? '')).toEqual(['', 'stem', 'block', 'pool', 'head']);
    expect(c.explain().graphBreaks.map((b) => b.reason)).toEqual([expect.stringMatching(/^training through AdaptiveResNet: the graph has a '(if|loop)' region/)]);
    expect(c.explain().graphBreaks[0].where).toMatch(/^AdaptiveResNet\.forward .*:3:3$/); // the `if` the region came from
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('fullgraph: true turns the break into an error', () => {
    const c = jit.compile(new AdaptiveResNet(), { fullgraph: true });
    expect(() => c.forward(randn([2, 3, 16, 16]))).toThrow(/^jit\.compile\(AdaptiveResNet, \{ fullgraph: true \}\): AdaptiveResNet\.forward.*:4:\d+: cannot capture .*inside an if\/loop/s);
  });

  it('@jit.ignore methods run eagerly between the compiled parts, listed as breaks; fullgraph refuses them; training through them runs eagerly', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const m = new CallsIgnored(), ref = new CallsIgnored();
    const c = jit.compile(m);
    const x = randn([2, 3]);
    close(noGrad(() => c.forward(x)), noGrad(() => ref.forward(x)));
    // The side effect happened on the call; compiling ran the method once more on the example to
    // learn its result types (jit.script's documented behaviour for @jit.ignore methods).
    expect(m.seen).toEqual([2, 2]);
    noGrad(() => c.forward(x));
    expect(m.seen).toEqual([2, 2, 2]);
    const breaks = c.explain().graphBreaks;
    expect(breaks.map((b) => b.reason)).toEqual([
      expect.stringMatching(/@jit\.ignore method .*log runs eagerly between the compiled parts/),
      expect.stringMatching(/@jit\.ignore method .*debug runs eagerly between the compiled parts/),
    ]);
    expect(() => jit.compile(new CallsIgnored(), { fullgraph: true }).forward(x)).toThrow(/fullgraph: true.*@jit\.ignore method .*log/);
    const w = randn([3, 3], { requiresGrad: true });
    (c.forward(x.matmul(w)) as Tensor).sum().backward();
    const g = w.grad!.clone();
    w.grad = null;
    (ref.forward(x.matmul(w)) as Tensor).sum().backward();
    close(g, w.grad!);
    expect(c.explain().graphBreaks.at(-1)!.reason).toMatch(/training through CallsIgnored: the @jit\.ignore method .*takes a tensor that needs a gradient/);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('backend eager runs the model as it is', () => {
    const m = new nn.Linear(2, 2);
    const c = jit.compile(m, { backend: 'eager' });
    const x = randn([1, 2]);
    close(c.forward(x), m.forward(x));
    expect(c.explain().compiles).toBe(0);
  });

  it('a module the scripter refuses is traced instead', () => {
    class Data extends nn.Module {
      fc = new nn.Linear(3, 3);
      forward(x: Tensor): Tensor { const s = JSON.stringify({ a: 1 }).length; return this.fc.forward(x).mul(s); }
    }
    const m = new Data();
    const c = jit.compile(m);
    const x = randn([2, 3]);
    close(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    expect(c.explain().graphs[0].via).toBe('trace');
  });
});

describe('jit.compile: digits training', () => {
  it('50 steps of Adam at batch 32 give eager\'s loss at every step and the same parameters (1e-5)', async () => {
    const { digitsModel, loadDigits } = await import('../examples/digits/train.mjs');
    const data = loadDigits();
    const run = (compiled: boolean) => {
      manualSeed(11);
      const model = digitsModel() as nn.Module;
      const net = compiled ? jit.compile(model) : model;
      const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
      model.train();
      const losses: number[] = [];
      for (let s = 0; s < 50; s++) {
        const from = (s * 32) % 1408;
        const x = tensor(data.x.slice(from * 64, (from + 32) * 64), { shape: [32, 1, 8, 8] });
        const y = tensor(data.y.slice(from, from + 32), { shape: [32] });
        opt.zeroGrad();
        const loss = F.crossEntropy(net.forward(x) as Tensor, y);
        loss.backward();
        opt.step();
        losses.push(loss.item());
      }
      return { losses, params: model.namedParameters().map(([n, p]) => [n, p.detach().clone()] as const), net };
    };
    const eager = run(false), compiled = run(true);
    compiled.losses.forEach((l, i) => expect(Math.abs(l - eager.losses[i])).toBeLessThanOrEqual(1e-5));
    // The biases of the convolutions feeding a BatchNorm have a gradient of exactly 0 in exact
    // arithmetic (the normalization removes them); what remains is rounding noise, which Adam
    // scales up to lr-sized steps, so they differ between any two summation orders (and do not
    // change any output: the losses above agree). Every other parameter must agree.
    const noise = new Set(['0.bias', '3.bias']);
    compiled.params.forEach(([n, p], i) => { if (!noise.has(n)) close(p, eager.params[i][1]); });
    expect(compiled.params.filter(([n]) => !noise.has(n)).length).toBe(10);
    expect((compiled.net as jit.CompiledModel).explain().compiles).toBe(1);
  });
});
