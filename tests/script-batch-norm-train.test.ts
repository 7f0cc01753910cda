// BatchNorm in training mode under jit.script and jit.trace (issue 12): compiling never moves the
// running statistics; the compiled train-mode forward updates running_mean, running_var (unbiased)
// and num_batches_tracked exactly as eager does (momentum and cumulative average, dynamic batch,
// a layer called twice); a saved train-mode graph keeps that state in the loaded model; what
// cannot be compiled is refused with a message that says what to do.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { jit, manualSeed, randn, noGrad, type Tensor, type nn } from 'kiln';
import { load } from '@kiln/runtime';
import { bufferUpdates } from '@kiln/ir-spec';
import { freeze } from '@kiln/compiler';
import { BnInBranch, BnMlp, BnTwice, FunctionalBn, VarNet } from './script-models/batch-norm.js';
import { withoutScriptAdvice } from '../packages/kiln/src/jit/script-host.js';

const FILE = fileURLToPath(new URL('./script-models/batch-norm.ts', import.meta.url));

const buffers = (m: nn.Module) => Object.fromEntries(m.namedBuffers().map(([k, t]) => [k, Array.from(t.data)]));

function expectClose(a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-6): void {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i]), `element ${i}: ${a[i]} vs ${b[i]}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(b[i])));
}
function expectSameBuffers(a: nn.Module, b: nn.Module): void {
  const x = buffers(a), y = buffers(b);
  expect(Object.keys(x)).toEqual(Object.keys(y));
  for (const k of Object.keys(y)) expectClose(x[k], y[k]);
}

/** Two identical models (same weights), both in training mode. */
function twins<M extends nn.Module>(make: () => M): [M, M] {
  manualSeed(42);
  const a = make();
  manualSeed(42);
  const b = make();
  a.train(); b.train();
  return [a, b];
}

describe.each([['runtime text', {}], ['.ts file', { sourceFile: FILE }]] as const)('jit.script, BatchNorm in training mode, from the %s', (_k, opts) => {
  it('compiling leaves the running statistics alone', () => {
    const [m] = twins(() => new BnMlp());
    const before = buffers(m);
    jit.script(m, { ...opts, inputs: [randn([5, 4])] });
    expect(buffers(m)).toEqual(before);
  });

  it('several train steps: outputs and running_mean/running_var/num_batches_tracked equal eager (momentum 0.1 and null)', () => {
    const [eager, compiled] = twins(() => new BnMlp());
    const s = jit.script(compiled, opts);
    for (const n of [5, 8, 3, 8]) {
      const x = randn([n, 4]);
      const want = noGrad(() => eager.forward(x)) as Tensor;
      const got = s.forward(x) as Tensor;
      expectClose(got.data, want.data, 1e-5);
      expectSameBuffers(compiled, eager);
    }
    expect(Array.from(compiled.bn1.num_batches_tracked!.data)).toEqual([4]);
    expect(bufferUpdates(s.graph).map((u) => u.param).sort()).toEqual(['bn1.num_batches_tracked', 'bn1.running_mean', 'bn1.running_var', 'bn2.num_batches_tracked', 'bn2.running_mean', 'bn2.running_var']);
  });

  it('a layer called twice: the second call reads the statistics the first call wrote', () => {
    const [eager, compiled] = twins(() => new BnTwice());
    const s = jit.script(compiled, opts);
    for (const n of [2, 3]) {
      const x = randn([n, 2, 4, 4]);
      expectClose((s.forward(x) as Tensor).data, (noGrad(() => eager.forward(x)) as Tensor).data, 1e-5);
      expectSameBuffers(compiled, eager);
    }
    expect(Array.from(compiled.bn.num_batches_tracked!.data)).toEqual([4]);
  });

  it('eager and compiled calls alternate on one module state; eval() recompiles to a graph that updates nothing', () => {
    const [eager, compiled] = twins(() => new BnMlp());
    const s = jit.script(compiled, opts);
    for (const k of [0, 1, 2, 3]) {
      const x = randn([6, 4]);
      noGrad(() => eager.forward(x));
      if (k % 2) noGrad(() => compiled.forward(x)); else s.forward(x);
      expectSameBuffers(compiled, eager);
    }
    compiled.bn1.resetRunningStats(); eager.bn1.resetRunningStats();
    const x = randn([4, 4]);
    noGrad(() => eager.forward(x)); s.forward(x);
    expectSameBuffers(compiled, eager);
    eager.eval(); compiled.eval();
    const y = randn([3, 4]);
    expectClose((s.forward(y) as Tensor).data, (noGrad(() => eager.forward(y)) as Tensor).data, 1e-5);
    expect(bufferUpdates(s.graph)).toEqual([]);
    expectSameBuffers(compiled, eager);
  });

  it('a call inside an if is refused, saying what to do', () => {
    const m = new BnInBranch();
    m.train();
    let msg = '';
    try { jit.script(m, opts).forward(randn([3, 4])); } catch (e) { msg = (e as Error).message; }
    expect(msg).toMatch(/updates the buffer 'bn\.running_mean'.*inside an if\/loop.*call model\.eval\(\) before scripting/);
    expect(msg).not.toMatch(/Use jit\.script/);
    m.eval();
    const x = randn([3, 4]).abs();
    expectClose((jit.script(m, opts).forward(x) as Tensor).data, (noGrad(() => m.forward(x)) as Tensor).data, 1e-5);
  });
});

describe('in-place changes a graph cannot carry back', () => {
  it('jit.script refuses F.batchNorm updating buffers passed as arguments, saying what to do', () => {
    const m = new FunctionalBn();
    let msg = '';
    try { jit.script(m).forward(randn([4, 3])); } catch (e) { msg = (e as Error).message; }
    expect(msg).toMatch(/F\.batchNorm\(\) cannot be compiled faithfully: input 1 \(shape \[3\]\) is changed in place by (mul|add).*nn\.BatchNorm\* updates are recorded\), or call model\.eval\(\)/);
    expect(Array.from(m.rm.data)).toEqual([0, 0, 0]);
  });
  it('jit.trace warns (strict: refuses) when forward changes an input in place', () => {
    const f = { forward: (x: Tensor) => x.mul_(2).add(1) };
    const t = jit.trace(f, [randn([2])], { warn: false, checkTrace: false });
    expect(t.warnings.map((w) => w.kind)).toEqual(['input-mutated']);
    expect(() => jit.trace(f, [randn([2])], { strict: true, warn: false })).toThrow(/input 0 \(shape \[2\]\) is changed in place by mul/);
  });
});

describe('a saved train-mode graph', () => {
  it('keeps the running statistics in the loaded model, run after run, as eager updates them', async () => {
    const [eager, compiled] = twins(() => new BnMlp());
    const s = jit.script(compiled);
    const x0 = randn([4, 4]);
    s.forward(x0);
    noGrad(() => eager.forward(x0));
    const loaded = await load(s.toBytes(), { backend: 'cpu' }); // stores the statistics after that step
    expect(loaded.outputs.map((o) => o.name)).toEqual(['output']);
    for (const n of [5, 3, 7]) {
      const x = randn([n, 4]);
      const [y] = await loaded.run([x]);
      expectClose(y.data, (noGrad(() => eager.forward(x)) as Tensor).data, 1e-5);
      expect([...loaded.buffers.keys()].sort()).toEqual(eager.namedBuffers().map(([k]) => k).sort());
      for (const [name, v] of loaded.buffers) expectClose(v.data, eager.getBuffer(name).data);
    }
    expect(() => loaded.setBuffer('fc1.weight', new Float32Array(24))).toThrow(/'fc1.weight' is not a buffer this graph updates/);
  });

  it('cannot be frozen or optimized for inference: the refusal says to call model.eval()', () => {
    const m = new BnMlp();
    m.train();
    const s = jit.script(m, { inputs: [randn([4, 4])] });
    expect(() => freeze(s.graph)).toThrow(/updates buffers .*call model\.eval\(\) before tracing or scripting/);
    expect(() => jit.optimizeForInference(s)).toThrow(/updates buffers .*call model\.eval\(\)/);
  });
});

describe('jit.trace, BatchNorm in training mode', () => {
  it('records the running-statistic updates as buffer updates; traced steps match eager (dynamic batch)', () => {
    const [eager, traced] = twins(() => new BnMlp());
    const x0 = randn([5, 4]);
    const t = jit.trace(traced, [x0], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    noGrad(() => eager.forward(x0)); // the trace ran one eager step
    expectSameBuffers(traced, eager);
    expect(t.warnings).toEqual([]);
    expect(bufferUpdates(t.graph).length).toBe(6);
    for (const n of [5, 9, 2]) {
      const x = randn([n, 4]);
      expectClose((t.forward(x) as Tensor).data, (noGrad(() => eager.forward(x)) as Tensor).data, 1e-5);
      expectSameBuffers(traced, eager);
    }
  });

  it('a scripted train-mode submodule inside jit.trace is refused with what to do', () => {
    const inner = new BnMlp();
    inner.train();
    const s = jit.script(inner, { inputs: [randn([4, 4])] });
    const outer = { forward: (x: Tensor) => (s.forward(x) as Tensor).relu() };
    expect(() => jit.trace(outer, [randn([4, 4])], { warn: false })).toThrow(/updates buffers .*call model\.eval\(\) before tracing, or jit\.script the whole model/);
  });
});

describe('size-dependent divisors and refusal texts inside jit.script', () => {
  it("x.var() / x.std() divide by the run's own N − 1 (the divisor is no longer baked at the example size)", () => {
    const m = new VarNet();
    const s = jit.script(m);
    for (const n of [5, 2, 9]) {
      const x = randn([n, 3]);
      expectClose((s.forward(x) as Tensor).data, (noGrad(() => m.forward(x)) as Tensor).data, 1e-5);
    }
  });

  it("a trace warning quoted by jit.script drops the tracer's 'use jit.script' advice", () => {
    const cases: [string, string][] = [
      ['the number 14 used by div was computed from a dynamic size, and is baked into the trace. Use jit.script for this module.', 'the number 14 used by div was computed from a dynamic size, and is baked into the trace.'],
      ["the traced ops change with the size of 'N'. Use jit.script for this module, or do not declare this axis dynamic.", "the traced ops change with the size of 'N'."],
      ['a tensor created inside forward is baked in as a constant. Derive it from the inputs with tensor ops, or use jit.script.', 'a tensor created inside forward is baked in as a constant. Derive it from the inputs with tensor ops.'],
      ['item() read a value. Keep it in tensor ops, or compile this module with jit.script, which keeps data-dependent control flow.', 'item() read a value. Keep it in tensor ops.'],
    ];
    for (const [from, to] of cases) expect(withoutScriptAdvice(from)).toBe(to);
  });
});
