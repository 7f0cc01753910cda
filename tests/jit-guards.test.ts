// Guards: a compiled graph is used only while every module attribute the compilation read keeps
// the value it had (strings, numbers, booleans, nested submodule attributes, a swapped
// submodule, a library layer's training flag and settings). ScriptModule and the OptimizedModule
// made from it compile/optimize again; a TracedModule (and what is optimized from it) throws a
// GuardError naming the attribute. jit.optimizeForInference takes number arguments as run-time
// scalars and never calls user code to learn the output structure.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { jit, manualSeed, randn, noGrad, type Tensor, type nn } from 'kiln';
import { CountsCalls, Doubler, HoldsScripted, ModeHead, ModeHeadScripted, Outer, Tempered, UsesTraced, WithNorm } from './script-models/guarded.js';

const FILE = fileURLToPath(new URL('./script-models/guarded.ts', import.meta.url));

function close(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

function agree(model: nn.Module, compiled: { forward(...a: unknown[]): unknown }, ...args: unknown[]): void {
  close(compiled.forward(...args) as Tensor, noGrad(() => model.forward(...args)) as Tensor);
}

describe('jit.script guards', () => {
  it('follows string, number, boolean and array attributes; an unchanged or restored value reuses its graph', () => {
    manualSeed(1);
    const m = new ModeHead();
    const s = jit.script(m);
    const x = randn([3, 4]);
    agree(m, s, x);
    const cls = s.graph;
    m.mode = 'seg';
    agree(m, s, x);
    expect((s.forward(x) as Tensor).shape).toEqual([3, 5]);
    const seg = s.graph;
    expect(seg).not.toBe(cls);
    m.scale = 0.5;
    agree(m, s, x);
    m.useBias = false;
    agree(m, s, x);
    m.shifts.push(0.25, -1); // an array changed in place: its length and items
    agree(m, s, x);
    m.shifts[1] = 3;
    agree(m, s, x);
    m.mode = 'cls'; m.scale = 2; m.useBias = true; m.shifts.length = 0;
    agree(m, s, x);
    expect(s.graph).toBe(cls); // every attribute as first compiled: the cached graph
  });

  it('follows a nested submodule attribute and a swapped submodule', () => {
    manualSeed(2);
    const m = new Outer();
    const s = jit.script(m);
    const x = randn([2, 4]);
    agree(m, s, x);
    m.inner.negate = true;
    agree(m, s, x);
    (m as unknown as { inner: nn.Module }).inner = new Doubler();
    agree(m, s, x);
  });

  it("follows a library layer's settings and training flag, which forward never reads", () => {
    manualSeed(3);
    const m = new WithNorm();
    m.eval();
    const s = jit.script(m, { dynamicBatch: false });
    const x = randn([4, 4]);
    agree(m, s, x);
    (m.act as unknown as { negativeSlope: number }).negativeSlope = 0.5;
    agree(m, s, x);
    m.train(); // batch statistics now: eager and graph both normalize with them
    agree(m, s, x);
  });
});

describe('jit.optimizeForInference of a scripted module', () => {
  it('re-optimizes when an attribute the graph read changed (right head, right shape), and reuses what it optimized', () => {
    manualSeed(4);
    const m = new ModeHead();
    const s = jit.script(m);
    const x = randn([3, 4]);
    s.forward(x);
    const o = jit.optimizeForInference(s);
    agree(m, o, x);
    const first = o.graph;
    m.mode = 'seg';
    expect((o.forward(x) as Tensor).shape).toEqual([3, 5]);
    agree(m, o, x);
    expect(o.graph).not.toBe(first);
    m.mode = 'cls';
    agree(m, o, x);
    expect(o.graph).toBe(first);
  });

  it('takes number arguments as run-time scalars (int, float, the default), with the type checker too', () => {
    manualSeed(5);
    for (const opts of [{}, { sourceFile: FILE }]) {
      const m = new Tempered();
      const s = jit.script(m, opts);
      const x = randn([2, 4]);
      s.forward(x, 3);
      const o = jit.optimizeForInference(s);
      expect(o.graph.inputs.filter((i) => i.kind === 'input').map((i) => i.name)).toEqual(['x', 'temperature']);
      for (const t of [3, 7, 0.5, -1.25]) agree(m, o, x, t);
      agree(m, o, x);
      agree(m, o, randn([5, 4]), 4);
    }
  });

  it('learns the output structure from the source, never by calling user code', () => {
    manualSeed(6);
    const m = new CountsCalls();
    jit.ignore(CountsCalls.prototype.hook, undefined as never);
    const s = jit.script(m);
    const x = randn([2, 4]);
    s.forward(x);
    const before = m.calls;
    const o = jit.optimizeForInference(s);
    expect(m.calls).toBe(before);
    const [a, b] = o.forward(x) as Tensor[];
    expect(m.calls).toBe(before + 1);
    const [wa, wb] = noGrad(() => m.forward(x)) as Tensor[];
    close(a, wa);
    close(b, wb);
  });
});

describe('traces of scripted modules', () => {
  it('a TracedModule (and what is optimized from it) throws a GuardError naming the changed attribute', () => {
    manualSeed(7);
    const m = new ModeHead();
    const s = jit.script(m);
    const x = randn([3, 4]);
    const t = jit.trace(s, [x], { warn: false });
    const o = jit.optimizeForInference(t);
    agree(m, t, x);
    agree(m, o, x);
    m.mode = 'seg';
    for (const c of [t, o]) {
      expect(() => c.forward(x)).toThrow(jit.GuardError);
      expect(() => c.forward(x)).toThrow('was recorded when this.mode was "cls"; it is now "seg"');
    }
    m.mode = 'cls';
    agree(m, t, x);
  });

  it('a scripted submodule of a traced model: the error names the attribute from the traced root', () => {
    manualSeed(8);
    jit.script(ModeHeadScripted, { kind: 'class', name: 'ModeHeadScripted' } as unknown as ClassDecoratorContext<typeof ModeHeadScripted>);
    const m = new HoldsScripted();
    const x = randn([3, 4]);
    const t = jit.trace(m, [x], { warn: false });
    agree(m, t, x);
    m.head.mode = 'seg';
    expect(() => t.forward(x)).toThrow('was recorded when this.head.mode was "cls"; it is now "seg"');
  });
});

describe('a traced module inside a scripted one', () => {
  it('whose own guards fail: compiling the scripted module again fails at the call, instead of inlining the stale graph', () => {
    manualSeed(9);
    const head = new ModeHead();
    const x = randn([3, 4]);
    const traced = jit.trace(jit.script(head), [x], { warn: false, dynamicAxes: { 0: { 0: 'N' } } });
    const outer = new UsesTraced(traced);
    const s = jit.script(outer);
    close(s.forward(x) as Tensor, noGrad(() => (head.forward(x) as Tensor).relu()));
    head.mode = 'seg';
    expect(() => s.forward(x)).toThrow(jit.ScriptError);
    expect(() => s.forward(x)).toThrow(/^UsesTraced\.forward \(runtime text\):2:3: the compiled submodule @ScriptModule was recorded when this\.mode was "cls"; it is now "seg", and its graph does not follow it\. Trace \(and optimize\) it again after changing it\./);
    head.mode = 'cls';
    close(s.forward(x) as Tensor, noGrad(() => (head.forward(x) as Tensor).relu()));
  });
});
