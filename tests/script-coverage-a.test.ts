// jit.script coverage a PyTorch user expects (issue 12, part A): ModuleDict access with static
// keys, loops over a module's children (addModule included), super calls, helpers and base
// classes imported from another file, and forwards returning objects. Each model agrees with
// eager, from its runtime text and from its .ts file where both can compile it, and runs again
// from .tsgraph in the runtime alone; each refusal is a located ScriptError saying what to do.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { load } from '@kiln/runtime';
import { jit, manualSeed, randn, noGrad, type Tensor, type nn } from 'kiln';
import { BranchObjects, Heads, Imported, Outputs, ReluLinear, Top, Tuned, UsesReluLinear, Walker } from './script-models/coverage-a.js';
import { AddsModule, DictForward, DynamicSubmodule, MissingKey, NamespaceImport, RunTimeKey } from './script-models/coverage-a-refusals.js';

const FILE = fileURLToPath(new URL('./script-models/coverage-a.ts', import.meta.url));
const REFUSALS = fileURLToPath(new URL('./script-models/coverage-a-refusals.ts', import.meta.url));

/** A runtime output (`{ data, shape }`) or a Tensor, compared with eager within 1e-5. */
type Out = Tensor | { readonly data: ArrayLike<number>; readonly shape: readonly number[] };

function close(got: Out, want: Tensor): void {
  expect([...got.shape]).toEqual([...want.shape]);
  const a = 'toArray' in got ? got.toArray() : got.data, b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

function agree(model: nn.Module, scripted: jit.ScriptModule, ...args: unknown[]): void {
  close(scripted.forward(...args) as Tensor, noGrad(() => model.forward(...args)) as Tensor);
}

/** Saves the current graph, loads it with @kiln/runtime alone and compares its run with eager. */
async function savedAgrees(model: nn.Module, scripted: jit.ScriptModule, x: Tensor): Promise<void> {
  const want = noGrad(() => model.forward(x)) as Tensor;
  const loaded = await load(scripted.toBytes());
  const [y] = await loaded.run([x]);
  close(y, want);
}

const sources = [['runtime text', {}], ['.ts file (type checker)', { sourceFile: FILE }]] as const;

describe.each(sources)('jit.script coverage A from the %s', (_, opts) => {
  it('ModuleDict: get, [key], typed keys, has, keys/values/items/entries and for...of unroll over static keys', async () => {
    manualSeed(121);
    const m = new Heads();
    const s = jit.script(m, opts);
    for (const n of [1, 4]) agree(m, s, randn([n, 4]));
    const text = s.graph.toString();
    for (const k of ['cls', 'box', 'aux']) expect(text).toContain(`%heads.${k}.weight`);
    await savedAgrees(m, s, randn([3, 4]));
    // The keys are folded: switching the primary head compiles again.
    m.primary = 'box';
    agree(m, s, randn([2, 4]));
  });

  it('children(), namedChildren(), modules(), namedModules(), getSubmodule(), addModule members and m !== this.b unroll in order', async () => {
    manualSeed(122);
    const m = new Walker();
    const s = jit.script(m, opts);
    for (const n of [1, 3]) agree(m, s, randn([n, 5]));
    const text = s.graph.toString();
    for (const p of ['a', 'b.0', 'extra', 'gen0', 'gen1']) expect(text).toContain(`%${p}.weight`);
    await savedAgrees(m, s, randn([2, 5]));
  });

  it('super.forward() through two base classes in the same file', async () => {
    manualSeed(123);
    const m = new Top();
    const s = jit.script(m, opts);
    for (const n of [1, 4]) agree(m, s, randn([n, 3]));
    // Base.forward is inlined twice (two super calls in Top, one in Middle each).
    expect(s.graph.toString().match(/= linear\(/g)?.length).toBe(2);
    await savedAgrees(m, s, randn([2, 3]));
  });

  it('super.forward() of a built-in layer a model subclasses is that layer\'s forward, recorded with its weights', async () => {
    manualSeed(128);
    for (const m of [new ReluLinear(), new UsesReluLinear()]) {
      const s = jit.script(m, opts);
      for (const n of [1, 3]) agree(m, s, randn([n, 4]));
      expect(s.graph.toString().match(/= linear\(/g)?.length).toBe(2);
      expect(s.graph.toString()).toContain(m instanceof ReluLinear ? '%weight' : '%inner.weight');
      await savedAgrees(m, s, randn([2, 4]));
    }
  });

  it('returns an object literal (nested objects and arrays): the same structure, outputs named after the keys', async () => {
    manualSeed(124);
    const m = new Outputs();
    const s = jit.script(m, opts);
    const x = randn([3, 4]);
    const got = s.forward(x) as ReturnType<Outputs['forward']>;
    const want = noGrad(() => m.forward(x));
    expect(Object.keys(got)).toEqual(['logits', 'probs', 'extra']);
    expect(Object.keys(got.extra)).toEqual(['pair', 'scale']);
    close(got.logits, want.logits);
    close(got.probs, want.probs);
    close(got.extra.pair[0], want.extra.pair[0]);
    close(got.extra.pair[1], want.extra.pair[1]);
    close(got.extra.scale, want.extra.scale);
    const names = ['output.logits', 'output.probs', 'output.extra.pair.0', 'output.extra.pair.1', 'output.extra.scale'];
    expect(s.graph.outputs.map((o) => o.name)).toEqual(names);
    const loaded = await load(s.toBytes());
    expect(loaded.outputs.map((o) => o.name)).toEqual(names);
    const outs = await loaded.run([x]);
    [want.logits, want.probs, want.extra.pair[0], want.extra.pair[1], want.extra.scale].forEach((w, i) => close(outs[i], w));
    // The optimized module keeps the structure too.
    const fast = jit.optimizeForInference(s).forward(x) as ReturnType<Outputs['forward']>;
    expect(Object.keys(fast)).toEqual(['logits', 'probs', 'extra']);
    close(fast.extra.pair[1], want.extra.pair[1]);
    close(fast.probs, want.probs);
  });

  it('objects returned from and assigned in data-dependent branches cross the if regions key by key', async () => {
    manualSeed(127);
    const m = new BranchObjects();
    const s = jit.script(m, opts);
    const seen = new Set<string>();
    for (let k = 0; k < 24; k++) {
      const x = randn([3, 4]).mul(2).add((k % 5) - 2);
      const want = noGrad(() => m.forward(x));
      const h = noGrad(() => m.lin.forward(x));
      seen.add(h.sum().item() > 2 ? 'early' : h.mean().item() < -0.2 ? 'reassigned' : 'kept');
      const got = s.forward(x) as ReturnType<BranchObjects['forward']>;
      expect(Object.keys(got)).toEqual(['y', 'aux']);
      close(got.y, want.y);
      want.aux.forEach((w, i) => close(got.aux[i], w));
    }
    expect([...seen].sort()).toEqual(['early', 'kept', 'reassigned']);
    expect(s.graph.outputs.map((o) => o.name)).toEqual(['output.y', 'output.aux.0', 'output.aux.1']);
    expect(s.graph.toString().match(/= if\(/g)?.length).toBeGreaterThanOrEqual(2);
    const x = randn([2, 4]);
    const outs = await (await load(s.toBytes())).run([x]);
    const want = noGrad(() => m.forward(x));
    [want.y, ...want.aux].forEach((w, i) => close(outs[i], w));
  });
});

describe('jit.script coverage A: imports (the .ts file is needed)', () => {
  it('helpers imported from another file (renamed, re-exported) are inlined', async () => {
    manualSeed(125);
    const m = new Imported();
    const s = jit.script(m, { sourceFile: FILE });
    for (const n of [1, 4]) agree(m, s, randn([n, 4]));
    const text = s.graph.toString();
    expect(text).toContain('sigmoid');
    // Locations name the helper's own file.
    expect(text).toContain('coverage-a-helpers.ts:');
    await savedAgrees(m, s, randn([2, 4]));
  });

  it('super.forward() and super.helper() of a base class imported from another file', async () => {
    manualSeed(126);
    const m = new Tuned();
    const s = jit.script(m, { sourceFile: FILE });
    for (const n of [1, 3]) agree(m, s, randn([n, 4]));
    await savedAgrees(m, s, randn([2, 4]));
  });

  it('from the runtime text, an imported helper is a located error saying to pass sourceFile', () => {
    const err = () => jit.script(new Imported(), { inputs: [randn([2, 4])] });
    expect(err).toThrow(jit.ScriptError);
    expect(err).toThrow(/coverage-a\.ts|Imported\.forward \(runtime text\):\d+:\d+/);
    expect(err).toThrow(/pass \{ sourceFile \}/);
  });

  it('from the runtime text, a base class method calling a helper of its file asks for sourceFile', () => {
    const err = () => jit.script(new Tuned(), { inputs: [randn([2, 4])] });
    expect(err).toThrow(/Backbone\.features \(runtime text\):\d+:\d+: .*pass \{ sourceFile \}/s);
  });
});

describe('jit.script coverage A: refusals are located and say what to do', () => {
  const x = () => randn([2, 3]);
  const cases: [string, () => nn.Module, unknown[], number, string, RegExp][] = [
    ['a run-time ModuleDict key', () => new RunTimeKey(), [x(), 1], 8, 'n as unknown', /a ModuleDict key must be a string known when compiling[\s\S]*got a run-time int32 scalar[\s\S]*branch on it/],
    ['a key the ModuleDict does not have', () => new MissingKey(), [x()], 15, "'c'", /the ModuleDict heads has no key 'c' \(its keys: 'a', 'b'\)/],
    ['ModuleDict.forward()', () => new DictForward(), [x()], 22, 'this.heads.forward()', /a ModuleDict has no forward\(\); call one of its modules: heads\.get\('name'\)\.forward\(x\)/],
    ['addModule inside forward', () => new AddsModule(), [x()], 29, "this.addModule('late'", /addModule\(\) inside compiled code is not supported[\s\S]*Call it in the constructor/],
    ['a namespace import of a user file', () => new NamespaceImport(), [x()], 36, 'helpers', /namespace imports of your own files \(import \* as helpers from '\.\/coverage-a-helpers\.js'\) are not supported[\s\S]*import \{ fn \} from/],
    ['a run-time getSubmodule path', () => new DynamicSubmodule(), [x(), 0], 43, 'n as unknown', /getSubmodule\(\) needs a path known when compiling/],
  ];
  it.each(cases)('%s', (_, make, args, line, token, message) => {
    let err: unknown;
    try { jit.script(make(), { sourceFile: REFUSALS }).forward(...args); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(jit.ScriptError);
    const e = err as jit.ScriptError;
    expect(e.file).toBe(REFUSALS);
    expect(e.line).toBe(line);
    expect(e.reason).toMatch(message);
    const lines = e.frame.split('\n');
    const src = lines[lines.length - 2];
    expect(src.slice(src.indexOf('| ') + 2 + e.col - 1).startsWith(token)).toBe(true);
  });
});
