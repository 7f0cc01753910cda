// Random ops are graph ops that draw at run time (issue 12): rand/randn/randLike and
// training-mode dropout inside jit.script and jit.trace give exactly eager's numbers after the
// same manualSeed, new numbers on each call, and a saved .tsgraph draws from its own seedable
// generator. Passes never fold, merge or drop them.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { jit, manualSeed, randn, rand, noGrad, Generator, type Tensor, type nn } from 'kiln';
import { GraphBuilder, tensorType, hasEffects } from '@kiln/ir-spec';
import { createModel, load, createDevice } from '@kiln/runtime';
import { eliminateCommonSubexpressions, foldConstants, eliminateDeadCode } from '@kiln/compiler';
import { CoinFlip, DropNet, Noisy } from './script-models/random.js';

const FILE = fileURLToPath(new URL('./script-models/random.ts', import.meta.url));

function eagerUnder(seed: number, model: nn.Module, x: Tensor): Float32Array {
  manualSeed(seed);
  return (noGrad(() => model.forward(x)) as Tensor).data.slice() as Float32Array;
}
function compiledUnder(seed: number, run: () => Tensor): Float32Array {
  manualSeed(seed);
  return run().data.slice() as Float32Array;
}

describe.each([['runtime text', {}], ['.ts file', { sourceFile: FILE }]] as const)('jit.script from the %s', (_kind, opts) => {
  it('a branch on rand([]).item() is drawn on every run, as eager draws it', () => {
    const m = new CoinFlip();
    const s = jit.script(m, opts);
    const x = randn([2, 3]);
    expect(s.forward(x)).toBeDefined(); // compile
    expect(s.graph.toString()).toContain('uniform');
    const seen = new Set<number>();
    for (let seed = 0; seed < 30; seed++) {
      const want = eagerUnder(seed, m, x);
      const got = compiledUnder(seed, () => s.forward(x) as Tensor);
      expect(Array.from(got)).toEqual(Array.from(want));
      seen.add(Math.round(got[0] - x.data[0]));
    }
    expect([...seen].sort()).toEqual([-1, 1]); // both branches taken
  });

  it('rand, randn, randLike and randint values equal eager for a seed and differ between calls', () => {
    const m = new Noisy();
    const s = jit.script(m, opts);
    const x = randn([3, 4]);
    const want = eagerUnder(7, m, x);
    manualSeed(7);
    const a = s.forward(x) as Tensor, b = s.forward(x) as Tensor;
    expect(Array.from(a.data)).toEqual(Array.from(want));
    expect(Array.from(b.data)).not.toEqual(Array.from(a.data));
    // Other batch sizes (dim 0 is symbolic): randLike follows x.
    const x5 = randn([5, 4]);
    expect(Array.from(compiledUnder(3, () => s.forward(x5) as Tensor))).toEqual(Array.from(eagerUnder(3, m, x5)));
  });

  it('training-mode dropout (layer and F.dropout) draws a new mask per call, identical to eager', () => {
    const m = new DropNet();
    m.train();
    const s = jit.script(m, opts);
    const x = randn([4, 6]);
    for (const seed of [1, 2, 3]) expect(Array.from(compiledUnder(seed, () => s.forward(x) as Tensor))).toEqual(Array.from(eagerUnder(seed, m, x)));
    manualSeed(9);
    const a = (s.forward(x) as Tensor).data.slice(), b = (s.forward(x) as Tensor).data.slice();
    expect(Array.from(a)).not.toEqual(Array.from(b));
    const zeros = Array.from(a).filter((v) => v === 0).length;
    expect(zeros).toBeGreaterThan(0);
  });

  it('compiling does not move the global generator', () => {
    const m = new DropNet();
    m.train();
    const x6 = randn([2, 6]), x3 = randn([2, 3]);
    manualSeed(5);
    const expected = rand([3]).data.slice();
    manualSeed(5);
    jit.script(m, { ...opts, inputs: [x6] });
    jit.script(new CoinFlip(), { ...opts, inputs: [x3] });
    expect(Array.from(rand([3]).data)).toEqual(Array.from(expected));
  });
});

describe('jit.trace of random ops', () => {
  it('records dropout in training mode as graph ops (no constant), checkTrace passes, eager numbers per seed', () => {
    const m = new DropNet();
    m.train();
    const x = randn([4, 6]);
    const t = jit.trace(m, [x], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    expect(t.graph.toString()).toContain('uniform(');
    expect([...t.graph.tensors.keys()].filter((k) => k.startsWith('const'))).toEqual([]);
    for (const seed of [4, 5]) expect(Array.from(compiledUnder(seed, () => t.forward(x) as Tensor))).toEqual(Array.from(eagerUnder(seed, m, x)));
    const x3 = randn([3, 6]);
    expect(Array.from(compiledUnder(8, () => t.forward(x3) as Tensor))).toEqual(Array.from(eagerUnder(8, m, x3)));
  });
});

describe('jit.trace of a draw from a private generator', () => {
  it('warns (strict: refuses) naming the op and what to do, since the graph draws from kiln\'s generator', () => {
    const g = new Generator(3);
    const m = { forward: (x: Tensor) => x.add(rand([2], { generator: g })) };
    const t = jit.trace(m, [randn([2])], { warn: false, checkTrace: false });
    expect(t.warnings.map((w) => w.kind)).toEqual(['random-generator']);
    expect(t.warnings[0].message).toMatch(/uniform at .*random-ops\.test\.ts:\d+:\d+ draws from a generator passed as \{ generator \}.*seed with manualSeed/);
    expect(() => jit.trace(m, [randn([2])], { strict: true, warn: false })).toThrow(/draws from a generator passed as \{ generator \}/);
  });
});

describe('a saved graph with random ops', () => {
  it('draws from its own generator: load(bytes, { seed }) is reproducible, successive runs differ', async () => {
    const m = new DropNet();
    m.train();
    const s = jit.script(m, { inputs: [randn([2, 6])] });
    const bytes = s.toBytes();
    const x = randn([2, 6]);
    const a = await load(bytes, { backend: 'cpu', seed: 11 });
    const b = await load(bytes, { backend: 'cpu', seed: 11 });
    const [a1] = await a.run([x]), [a2] = await a.run([x]), [b1] = await b.run([x]);
    expect(Array.from(a1.data)).toEqual(Array.from(b1.data));
    expect(Array.from(a1.data)).not.toEqual(Array.from(a2.data));
    a.manualSeed(11);
    expect(Array.from((await a.run([x]))[0].data)).toEqual(Array.from(a1.data));
    const c = await load(bytes, { backend: 'cpu', seed: 12 });
    expect(Array.from((await c.run([x]))[0].data)).not.toEqual(Array.from(a1.data));
    // Same seed, same numbers as eager on kiln's generator.
    expect(Array.from(a1.data)).toEqual(Array.from(eagerUnder(11, m, x)));
  });

  it("runs on WebGPU too: the device draws on the host from the model's generator, the CPU's numbers for the same seed", async () => {
    const m = new DropNet();
    m.train();
    const bytes = jit.script(m, { inputs: [randn([2, 6])] }).toBytes();
    const gpu = await load(bytes, { backend: 'webgpu' }), cpu = await load(bytes, { backend: 'cpu' });
    expect(gpu.backend).toBe('webgpu');
    const x = randn([2, 6]);
    gpu.manualSeed(5); cpu.manualSeed(5);
    for (let i = 0; i < 2; i++) {
      const [a] = await gpu.run([x]), [b] = await cpu.run([x]);
      Array.from(b.data).forEach((v, k) => expect(a.data[k]).toBeCloseTo(v, 5));
    }
  });
});

describe('optimized graphs keep their draws', () => {
  it('jit.optimizeForInference (-O2) of an eval-mode model that draws (rand branch, noise) still matches eager per seed', () => {
    for (const m of [new CoinFlip(), new Noisy()]) {
      m.eval();
      const x = randn([3, 4]);
      const fast = jit.optimizeForInference(jit.script(m, { inputs: [x] }));
      expect(fast.graph.toString()).toContain('uniform');
      // Fusion rounds once per fused chain: equal within float32 tolerance, with the same draws.
      for (const seed of [0, 1, 2, 3]) {
        const got = compiledUnder(seed, () => fast.forward(x) as Tensor), want = eagerUnder(seed, m, x);
        want.forEach((w, i) => expect(Math.abs(got[i] - w)).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(w))));
      }
    }
  });
});

describe('passes keep random ops', () => {
  const graph = () => {
    const b = new GraphBuilder('g');
    const x = b.input('x', tensorType('float32', ['N', 4]));
    const u1 = b.op1('uniform', [x]);
    const u2 = b.op1('uniform', [x]);
    b.op1('normal', [], { shape: [2] }); // unused: still drawn, so later draws match eager
    b.output('y', b.op1('add', [u1, u2]));
    return b.build();
  };
  it('CSE does not merge two identical draws, DCE keeps an unused one, folding leaves a constant-shaped one', () => {
    const g = eliminateDeadCode(foldConstants(eliminateCommonSubexpressions(graph())));
    const text = g.toString();
    expect(text.match(/uniform\(/g)?.length).toBe(2);
    expect(text).toContain('normal(');
    expect(g.body.nodes.filter(hasEffects).length).toBe(3);
  });
  it('a runtime Model draws: the two uniforms differ; the same seed repeats', () => {
    const g = graph();
    const run = (seed: number) => createModel(g, { seed }).runSync([{ data: new Float32Array(4), shape: [1, 4], dtype: 'float32' }])[0].data;
    expect(Array.from(run(1))).toEqual(Array.from(run(1)));
    expect(Array.from(run(1))).not.toEqual(Array.from(run(2)));
  });
  it('a random op run without a generator fails naming the op', async () => {
    const { getOp } = await import('@kiln/ir-spec');
    expect(() => getOp('uniform').cpu([null], { shape: [2] })).toThrow(/uniform.*needs a generator/);
    void createDevice;
  });
});
