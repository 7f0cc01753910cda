// jit.script control flow beyond if/for/while: data-dependent break/continue in run-time and
// unrolled loops, do...while, switch (an if-chain), compound assignments. Each model agrees
// with eager on inputs taking every path and trip count, from its runtime text and from its
// .ts file, and one is saved to .tsgraph and run by @kiln/runtime alone.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { load } from '@kiln/runtime';
import { jit, manualSeed, randn, noGrad, ones, type Tensor, type nn } from 'kiln';
import { Compound, DoubleUntil, EarlyStop, LayerSkip, Switcher, SwitchReturn, WhileTrue } from './script-models/loops.js';

const FILE = fileURLToPath(new URL('./script-models/loops.ts', import.meta.url));

function close(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

function agree(model: nn.Module, scripted: jit.ScriptModule, ...args: unknown[]): void {
  close(scripted.forward(...args) as Tensor, noGrad(() => model.forward(...args)) as Tensor);
}

const sources = [['runtime text', {}], ['.ts file (type checker)', { sourceFile: FILE }]] as const;

describe.each(sources)('jit.script control flow from the %s', (_, opts) => {
  it('a data-dependent break and continue mid-body of a loop with trip count n (0, 1, 5, 12)', () => {
    manualSeed(21);
    const m = new EarlyStop();
    const s = jit.script(m, opts);
    for (const n of [0, 1, 5, 12]) for (const shift of [-2, 0.3, 3]) agree(m, s, randn([2, 3]).add(shift), n);
    const text = s.graph.toString();
    expect(text.match(/= loop\(/g)?.length).toBe(1);
    // The rest of the trip after each exit is guarded by an if region.
    expect(text.match(/= if\(/g)?.length).toBeGreaterThanOrEqual(3);
  });

  it("while (true) left by a break that is not the body's last statement", () => {
    const m = new WhileTrue();
    const s = jit.script(m, opts);
    for (const scale of [0.001, 0.3, 5, -1]) agree(m, s, ones([2, 2]).mul(scale));
  });

  it('do ... while runs the body before testing the condition', () => {
    const m = new DoubleUntil();
    const s = jit.script(m, opts);
    for (const scale of [100, 1, 0.01, 0]) agree(m, s, ones([3, 2]).mul(scale));
    expect(s.graph.toString()).toMatch(/= loop\(none, %\d+/);
  });

  it('continue and break under data-dependent conditions in an unrolled ModuleList loop', () => {
    manualSeed(22);
    const m = new LayerSkip();
    const s = jit.script(m, opts);
    for (let k = 0; k < 12; k++) agree(m, s, randn([2, 3]).mul(2).add(k % 3 - 1));
    expect(s.graph.toString().match(/= linear\(/g)?.length).toBe(3);
  });

  it('switch: grouped labels and default on a run-time number, a static string field, cases that return', () => {
    manualSeed(23);
    const m = new Switcher(), r = new SwitchReturn();
    const s = jit.script(m, opts), sr = jit.script(r, opts);
    for (const k of [0, 1, 2, 3, 7]) {
      const x = randn([2, 3]);
      agree(m, s, x, k);
      agree(r, sr, x, k);
    }
    expect(s.graph.toString()).not.toContain('0.5'); // the 'half' case is folded away
    m.mode = 'half';
    agree(m, s, randn([2, 3]), 1);
    expect(s.graph.toString()).toContain('0.5');
  });

  it('compound assignments and ++/-- on run-time numbers', () => {
    const m = new Compound();
    const s = jit.script(m, opts);
    for (const n of [0, 3, -4]) agree(m, s, randn([2, 2]), n);
  });
});

describe('control flow in the runtime alone', () => {
  it('the early-stopping loop saves to .tsgraph and runs from the file with @kiln/runtime', async () => {
    manualSeed(24);
    const m = new EarlyStop();
    const s = jit.script(m, { inputs: [randn([2, 3]), 3] });
    const model = await load(s.toBytes());
    for (const n of [0, 1, 5, 12]) {
      const x = randn([4, 3]).add(n % 2 ? 1 : -1);
      const [y] = await model.run([x, n]);
      const want = noGrad(() => m.forward(x, n));
      expect(y.shape).toEqual(want.shape);
      Array.from(y.data).forEach((v, i) => expect(Math.abs(v - want.data[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want.data[i]))));
    }
  });
});
