// Hybrid mode: jit.trace of a model whose submodule is scripted (jit.script result, or an
// instance of a @jit.script class) records the scripted graph whole — its `if` regions inlined
// into the trace — so the traced model agrees with eager on inputs taking either branch, not
// just the example's; and a traced model (holding such regions) still works inside a scripted one.
import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';
import { load } from '@kiln/runtime';
import { jit, manualSeed, randn, noGrad, nn, type Tensor } from 'kiln';
import { Around, CallsTraced, Gate } from './script-models/hybrid.js';

function close(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

/** Inputs whose block input sums positive and negative, as the eager model computes it. */
function bothBranches(m: Around & { stem: nn.Linear }): { x: Tensor; positive: boolean }[] {
  const out: { x: Tensor; positive: boolean }[] = [];
  for (let k = 0; out.length < 8 && k < 200; k++) {
    const x = randn([1 + (k % 3), 4]).mul(3);
    const positive = noGrad(() => m.stem.forward(x).tanh().sum().item()) > 0;
    if (out.filter((o) => o.positive === positive).length < 4) out.push({ x, positive });
  }
  expect(out.filter((o) => o.positive).length).toBe(4);
  return out;
}

function checkTraced(m: Around & { stem: nn.Linear }): jit.TracedModule {
  const cases = bothBranches(m);
  // The example takes one branch only; the trace must keep both.
  const traced = jit.trace(m, [cases[0].x], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
  const text = traced.graph.toString();
  expect(text).toMatch(/= if\([^)]*\) \(\{[\s\S]*linear[\s\S]*relu[\s\S]*\}, \{[\s\S]*neg[\s\S]*mul[\s\S]*\}\)/);
  expect(traced.warnings).toEqual([]);
  for (const { x } of cases) close(traced.forward(x), noGrad(() => m.forward(x)));
  return traced;
}

/** tests/script-models/decorated.ts with real TS 5 decorators (esbuild), imported once. */
let decoratedFile: Promise<{ mod: unknown; file: string }> | undefined;
function decorated(): Promise<{ mod: unknown; file: string }> {
  decoratedFile ??= (async () => {
    const src = readFileSync(fileURLToPath(new URL('./script-models/decorated.ts', import.meta.url)), 'utf8');
    const out = await transform(src, { loader: 'ts', target: 'es2022', format: 'esm', tsconfigRaw: { compilerOptions: { experimentalDecorators: false } } });
    const file = join(mkdtempSync(join(tmpdir(), 'kiln-hybrid-')), 'decorated.gen.ts');
    writeFileSync(file, out.code);
    return { mod: await import(/* @vite-ignore */ file), file };
  })();
  return decoratedFile;
}

describe('a scripted block inside a traced model', () => {
  it('jit.script(block) as a field: the trace inlines its if regions; eager-equal on both branches; runs from .tsgraph', async () => {
    manualSeed(31);
    const m = new Around(jit.script(new Gate())) as Around & { stem: nn.Linear };
    const traced = checkTraced(m);
    expect(traced.graph.toString()).toContain('param %fc.weight');
    const model = await load(traced.toBytes());
    for (const { x } of bothBranches(m)) {
      const [y] = await model.run([x]);
      const want = noGrad(() => m.forward(x));
      Array.from(y.data).forEach((v, i) => expect(Math.abs(v - want.data[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want.data[i]))));
    }
  });

  it('an instance of a @jit.script class as a submodule: its params keep their module path', async () => {
    const { mod } = await decorated() as { mod: { DecoratedGate: new () => nn.Module } };
    manualSeed(32);
    const m = new Around(new mod.DecoratedGate()) as Around & { stem: nn.Linear };
    const traced = checkTraced(m);
    const text = traced.graph.toString();
    expect(text).toContain('param %block.fc.weight');
    expect(text).toMatch(/relu\([^\n]*\/\/ block/);
  });
});

describe('@jit.ignore methods of a scripted block inside a traced model', () => {
  it('are called back from the traced graph, from its -O2 form too; saving names them', async () => {
    const { mod, file } = await decorated() as { mod: { CallsIgnored: new () => nn.Module & { seen: number[] } }; file: string };
    manualSeed(34);
    const block = new mod.CallsIgnored();
    const m = new Around(jit.script(block, { sourceFile: file }));
    const traced = jit.trace(m, [randn([3, 4])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    expect(traced.graph.toString()).toMatch(/host_call\([^)]*\) \{name="CallsIgnored\.log"/);
    const fast = jit.optimizeForInference(traced);
    for (const n of [2, 5]) {
      const x = randn([n, 4]);
      block.seen.length = 0;
      close(traced.forward(x), noGrad(() => m.forward(x)));
      close(fast.forward(x), noGrad(() => m.forward(x)));
      expect(block.seen).toEqual([n, n, n, n]); // traced, eager, -O2, eager: each run called log
    }
    expect(() => traced.toBytes()).toThrow(/host_call 'CallsIgnored\.log'/);
  });

  it('two scripted instances of one class at one scope each call their own methods', async () => {
    const { mod, file } = await decorated() as { mod: { CallsIgnored: new () => nn.Module & { seen: number[] } }; file: string };
    const a = new mod.CallsIgnored(), b = new mod.CallsIgnored();
    const sa = jit.script(a, { sourceFile: file }), sb = jit.script(b, { sourceFile: file });
    const twice = { forward: (x: Tensor) => sb.forward(sa.forward(x).mul(0.5)) as Tensor };
    const traced = jit.trace(twice as unknown as nn.Module, [randn([3, 4])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false, checkTrace: false });
    const text = traced.graph.toString();
    expect(text).toContain('name="CallsIgnored.log"');
    expect(text).toContain('name="CallsIgnored.log#2"');
    a.seen.length = 0; b.seen.length = 0;
    traced.forward(randn([2, 4]));
    expect([a.seen, b.seen]).toEqual([[2], [2]]);
  });
});

describe('a traced model inside a scripted one', () => {
  it('still inlines, now with the if regions the trace kept, inside a run-time loop', () => {
    manualSeed(33);
    const inner = new Around(jit.script(new Gate())) as Around & { stem: nn.Linear };
    const traced = jit.trace(inner, [randn([2, 4])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    const outer = new CallsTraced(traced);
    const s = jit.script(outer);
    const eager = new CallsTraced(inner);
    for (const n of [0, 1, 3]) for (const shift of [-3, 3]) {
      const x = randn([2, 4]).add(shift);
      close(s.forward(x, n) as Tensor, noGrad(() => eager.forward(x, n)) as Tensor);
    }
    expect(s.graph.toString()).toMatch(/loop\([\s\S]*if\(/);
  });
});
