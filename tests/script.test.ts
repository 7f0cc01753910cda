// jit.script end to end: each model of tests/script-models compiles (from its runtime text and
// from its .ts file with the type checker), agrees with eager within 1e-5 on inputs taking every
// branch and trip count, at several batch sizes, shows its if/loop regions, and runs again from
// .tsgraph in the runtime alone.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { load } from '@kiln/runtime';
import { verifyGraph } from '@kiln/ir-spec';
import { jit, manualSeed, randn, noGrad, ones, type Tensor, type nn } from 'kiln';
import { AdaptiveResNet, EarlyExit, Halver, Paths, Repeat, SignGate, Stack } from './script-models/control-flow.js';

const FILE = fileURLToPath(new URL('./script-models/control-flow.ts', import.meta.url));

function close(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

function agree(model: nn.Module, scripted: jit.ScriptModule, ...args: unknown[]): void {
  const want = noGrad(() => model.forward(...args)) as Tensor;
  close(scripted.forward(...args) as Tensor, want);
}

const sources = [['runtime text', {}], ['.ts file (type checker)', { sourceFile: FILE }]] as const;

describe.each(sources)('jit.script from the %s', (kind, opts) => {
  it('a data-dependent if on x.sum().item() > 0 becomes an if region; both branches match eager', () => {
    manualSeed(1);
    const m = new SignGate();
    const s = jit.script(m, opts);
    for (const n of [1, 3, 8]) {
      const x = randn([n, 4]);
      agree(m, s, x.abs());         // sum > 0: then-branch
      agree(m, s, x.abs().neg());   // sum < 0: else-branch
    }
    const text = s.graph.toString();
    expect(text).toMatch(/= if\(%\d+\) \(\{[\s\S]*relu[\s\S]*\}, \{[\s\S]*neg[\s\S]*\}\)/);
    expect(text).toContain('%x: f32[N,4]');
    expect(verifyGraph(s.graph)).toBeUndefined();
  });

  it('AdaptiveResNet: a branch on the mean against a threshold (ternary), Sequential block inlined', () => {
    manualSeed(2);
    const m = new AdaptiveResNet();
    const s = jit.script(m, opts);
    let sawThen = false, sawElse = false;
    for (const n of [2, 5]) {
      for (const shift of [0, 20, -20]) {
        const x = randn([n, 6]).add(shift);
        const h = noGrad(() => m.stem.forward(x).relu().mean().item());
        if (h > m.threshold) sawThen = true; else sawElse = true;
        agree(m, s, x);
      }
    }
    expect(sawThen && sawElse).toBe(true);
    expect(s.graph.toString()).toMatch(/linear\([^)]*%block\.0\.weight/);
  });

  it('a loop over a ModuleList unrolls, including a layer added with addLayer before scripting', () => {
    manualSeed(3);
    const m = new Stack();
    m.addLayer();
    const s = jit.script(m, opts);
    for (const n of [1, 4]) agree(m, s, randn([n, 5]));
    const linears = s.graph.toString().match(/= linear\(/g) ?? [];
    expect(linears.length).toBe(3);
    expect(s.graph.toString()).toContain('// layers.2');
  });

  it('a while loop with a data-dependent condition carries x and a counter', () => {
    const m = new Halver();
    const s = jit.script(m, opts);
    for (const scale of [0.01, 1, 10, 1000]) agree(m, s, ones([3, 2]).mul(scale));
    const text = s.graph.toString();
    expect(text).toMatch(/loop\(none, %\d+, %\w+, %\d+\) \(\{\n\s+\^\(%i: i32, %\w+: f32\[N,2\], %\w+: i32\)/);
  });

  it('a for loop whose trip count is an argument n (0, 1, 5) becomes one loop node', () => {
    manualSeed(4);
    const m = new Repeat();
    const s = jit.script(m, opts);
    for (const n of [0, 1, 5]) for (const b of [1, 3]) agree(m, s, randn([b, 3]), n);
    expect(s.graph.toString().match(/= loop\(/g)?.length).toBe(1);
    expect(s.graph.inputs.map((i) => i.name)).toContain('n');
  });

  it('this.training picks the path at compile time (recompiled on eval()); a boolean argument branches at run time', () => {
    manualSeed(5);
    const m = new Paths();
    const s = jit.script(m, opts);
    const x = randn([2, 4]);
    for (const flag of [true, false]) agree(m, s, x, flag);
    expect(s.graph.toString()).toContain('mul(');
    m.eval();
    for (const flag of [true, false]) agree(m, s, x, flag);
    expect(s.graph.toString()).not.toContain('mul(');
    expect(s.graph.toString()).toContain('if(');
  });

  it('early return, a same-file helper function and a helper method are inlined', () => {
    manualSeed(6);
    if (kind === 'runtime text') {
      // The method's runtime text does not contain the file's other functions.
      expect(() => jit.script(new EarlyExit()).forward(randn([2, 4]))).toThrow(/'clipTo' is not a local variable[\s\S]*sourceFile/);
      return;
    }
    const m = new EarlyExit();
    const s = jit.script(m, opts);
    for (const n of [1, 4]) {
      agree(m, s, randn([n, 4]).mul(0.1)); // max <= 1.5: the helper method's softmax path
      agree(m, s, randn([n, 4]).abs().add(2)); // max > 1.5: the early return through clipTo
    }
    expect(s.graph.toString()).toContain('clamp(');
  });
});

describe('jit.script graphs in the runtime alone', () => {
  it('saves to .tsgraph and runs from the file with @kiln/runtime and jit.load', async () => {
    manualSeed(7);
    const m = new SignGate();
    const s = jit.script(m, { inputs: [randn([2, 4])] });
    const bytes = s.toBytes();
    const model = await load(bytes);
    const loaded = await jit.load(bytes);
    for (const x of [randn([3, 4]).abs(), randn([5, 4]).abs().neg()]) {
      const want = noGrad(() => m.forward(x));
      const [y] = await model.run([x]);
      close(new (want.constructor as typeof import('kiln').Tensor)({ data: y.data, version: 0 }, y.shape, y.dtype), want);
      close((await loaded.run([x]))[0], want);
    }
  });

  it('a loop with a trip-count input round-trips through .tsgraph', async () => {
    manualSeed(8);
    const m = new Repeat();
    const s = jit.script(m, { inputs: [randn([2, 3]), 3] });
    const loaded = await jit.load(s.toBytes());
    for (const n of [0, 1, 5]) {
      const x = randn([4, 3]);
      const [y] = await loaded.run([x, { data: Int32Array.of(n), shape: [], dtype: 'int32' }]);
      expect(y.shape).toEqual([4, 3]);
      close(y, noGrad(() => m.forward(x, n)));
    }
  });
});

describe('jit.script of plain functions', () => {
  it('compiles a function of tensors with a data-dependent branch and a static loop', () => {
    function f(x: Tensor, y: Tensor): Tensor {
      let acc = x;
      for (let k = 0; k < 3; k++) acc = acc.add(y.mul(k));
      return acc.mean().item() > 0 ? acc.exp() : acc.neg();
    }
    const s = jit.script(f);
    for (const sign of [1, -1]) {
      const x = randn([4, 2]).abs().mul(sign * 3), y = randn([4, 2]).mul(0.1);
      close(s.forward(x, y) as Tensor, f(x, y));
    }
    expect(s.code).toContain('if (');
  });
});

describe('jit.script shapes, tuples and arrays', () => {
  it('x.shape[0] becomes a dim node that sizes a reshape and feeds a condition', async () => {
    const { ShapeUser } = await import('./script-models/shapes.js');
    manualSeed(9);
    const m = new ShapeUser();
    const s = jit.script(m);
    for (const n of [1, 2, 3, 6]) agree(m, s, randn([n, 3, 4]));
    const text = s.graph.toString();
    expect(text).toMatch(/= dim\(%x\) \{index=0\} : i32/);
    expect(text).toMatch(/reshape\(%x\) \{shape=\["N",-1\]\}|reshape\(%x\) \{shape=\["N",12\]\}/);
    expect(text).toContain('if(');
  });

  it('tuples and arrays of tensors: destructuring, push in an unrolled loop with continue, nested results', async () => {
    const { Splitter } = await import('./script-models/shapes.js');
    const m = new Splitter();
    const s = jit.script(m);
    for (const n of [1, 4]) {
      const x = randn([n, 6]);
      const [sum, parts] = s.forward(x) as [Tensor, Tensor[]];
      const [wsum, wparts] = m.forward(x);
      close(sum, wsum);
      expect(parts.length).toBe(2);
      parts.forEach((p, i) => close(p, wparts[i]));
    }
    expect(s.graph.outputs.length).toBe(3);
  });
});

describe('jit.script break and nested control flow', () => {
  it("a final 'if (...) break;' becomes the loop's continue condition (for with n, while (true))", async () => {
    const { Breaks } = await import('./script-models/control-flow.js');
    manualSeed(10);
    const m = new Breaks();
    const s = jit.script(m);
    for (const n of [0, 1, 5, 30]) for (const scale of [0.1, 3]) agree(m, s, randn([2, 3]).mul(scale), n);
    expect(s.graph.toString().match(/= loop\(/g)?.length).toBe(2);
  });

  it('an if inside a run-time loop, with Math.min/max/floor on run-time numbers', async () => {
    const { Nested } = await import('./script-models/control-flow.js');
    const m = new Nested();
    const s = jit.script(m);
    for (const n of [0, 3, 7]) for (const shift of [-1, 0.5, 4]) agree(m, s, randn([3, 2]).add(shift), n);
    expect(s.graph.toString()).toMatch(/loop\([\s\S]*if\(/);
  });
});

describe('jit.script hybrid mode', () => {
  it('a traced submodule inside a scripted model is inlined under its scope', async () => {
    const { HybridModel } = await import('./script-models/shapes.js');
    const { nn } = await import('kiln');
    manualSeed(13);
    const enc = new nn.Sequential(new nn.Linear(4, 6), new nn.Tanh());
    const traced = jit.trace(enc, [randn([2, 4])], { dynamicAxes: { 0: { 0: 'N' } } });
    const m = new HybridModel(traced);
    const s = jit.script(m);
    for (const n of [1, 3]) for (const sign of [1, -1]) agree(m, s, randn([n, 4]).mul(sign * 2));
    const text = s.graph.toString();
    expect(text).toContain('param %encoder.0.weight');
    expect(text).toMatch(/tanh\([^\n]*\/\/ encoder/);
  });
});

describe('jit.script folded attributes', () => {
  it('recompiles when an attribute the graph folded changes (threshold, training, ModuleList length)', () => {
    manualSeed(14);
    const m = new AdaptiveResNet();
    const s = jit.script(m);
    const x = randn([3, 6]);
    agree(m, s, x);
    const first = s.graph;
    m.threshold = -1e9;          // now always the residual branch
    agree(m, s, x);
    expect(s.graph).not.toBe(first);
    const again = s.graph;
    agree(m, s, x);
    expect(s.graph).toBe(again); // unchanged attributes: the cached graph is reused
    const st = new Stack();
    const ss = jit.script(st);
    agree(st, ss, randn([2, 5]));
    st.addLayer();
    agree(st, ss, randn([2, 5]));
    expect(ss.graph.toString().match(/= linear\(/g)?.length).toBe(3);
  });
});

describe('jit.script submodules', () => {
  it('user submodules are scripted recursively, their nodes carry the submodule scope', async () => {
    const { Outer } = await import('./script-models/control-flow.js');
    manualSeed(15);
    const m = new Outer();
    for (const opts of [{}, { sourceFile: FILE }]) {
      const s = jit.script(m, opts);
      for (const n of [1, 4]) for (const sign of [1, -1]) agree(m, s, randn([n, 4]).abs().mul(sign));
      const text = s.graph.toString();
      expect(text.match(/= if\(/g)?.length).toBe(3);
      expect(text).toMatch(/\}\) : f32\[N,3\]\s+\/\/ blocks\.1 @/);
      expect(text).toContain('param %blocks.0.fc.weight');
    }
  });
});

describe('jit.script of a container or library layer at the root', () => {
  it('compiles an nn.Sequential root like a Sequential submodule (scopes 0, 1, ...) and matches eager', async () => {
    const { nn: layers } = await import('kiln');
    manualSeed(3);
    const m = new layers.Sequential(new layers.Linear(4, 8), new layers.ReLU(), new layers.Linear(8, 2));
    m.eval();
    const s = jit.script(m, { inputs: [randn([2, 4])] });
    const text = s.graph.toString();
    expect(text).toContain('%input: f32[N,4]');
    expect(text).toMatch(/\/\/ 2\b/);
    for (const b of [1, 3, 8]) {
      const x = randn([b, 4]);
      const got = s.forward(x) as Tensor, want = noGrad(() => m.forward(x)) as Tensor;
      expect(got.shape).toEqual([b, 2]);
      got.toArray().forEach((v, i) => expect(Math.abs(v - want.data[i])).toBeLessThanOrEqual(1e-5 * Math.abs(want.data[i]) + 1e-6));
    }
  });
});
