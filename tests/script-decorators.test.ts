// The jit decorators with the real TypeScript 5 syntax. Node 20 and the test transform do not
// lower standard decorators, so tests/script-models/decorated.ts is compiled with esbuild
// (es2022 target) into a temporary .ts module first, then imported through the test runner.
import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';
import { jit, manualSeed, randn, noGrad, nn, type Tensor } from 'kiln';
import { createModel, load } from '@kiln/runtime';
import { eliminateCommonSubexpressions, eliminateDeadCode } from '@kiln/compiler';

type Ctor = new () => nn.Module;
let mod: Record<string, Ctor>;
let genFile: string;

beforeAll(async () => {
  const src = readFileSync(fileURLToPath(new URL('./script-models/decorated.ts', import.meta.url)), 'utf8');
  const out = await transform(src, { loader: 'ts', target: 'es2022', format: 'esm', tsconfigRaw: { compilerOptions: { experimentalDecorators: false } } });
  genFile = join(mkdtempSync(join(tmpdir(), 'kiln-script-')), 'decorated.gen.ts');
  writeFileSync(genFile, out.code);
  mod = await import(/* @vite-ignore */ genFile) as Record<string, Ctor>;
});

function close(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const a = got.toArray(), b = want.toArray();
  for (let i = 0; i < b.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(b[i])));
}

describe('@jit.script', () => {
  it('instances run compiled (lazily, on first forward), with eager numbers on both branches', () => {
    manualSeed(11);
    const m = new mod.Decorated() as nn.Module & { fc: nn.Linear };
    for (const sign of [1, -1]) {
      const x = randn([3, 4]).abs().mul(sign);
      const want = noGrad(() => { const h = sign > 0 ? x : x.neg(); return m.fc.forward(h); });
      close(m.forward(x) as Tensor, want);
    }
    const s = jit.script(m);
    expect(s.graph.toString()).toContain('if(');
    // The decorator found the class's file from its call stack, so the checker-typed source was used.
    expect(s.graph.metadata.source).toBe(genFile);
  });

  it('@jit.export compiles another method; decorated instances run it compiled', () => {
    const m = new mod.Decorated() as nn.Module & { embed(x: Tensor): Tensor };
    const x = randn([2, 4]);
    close(m.embed(x), x.mul(3).relu());
    expect(jit.script(m).method('embed').graph.toString()).toContain('relu(');
  });

  it('@jit.ignore: the graph calls back into the method at run time (host_call); passes keep it; saving is refused', () => {
    manualSeed(13);
    const m = new mod.CallsIgnored() as nn.Module & { seen: number[] };
    // With the file, the checker says `log` returns void: compiling does not run it (debug it runs once, to type it).
    const s = jit.script(m, { inputs: [randn([2, 4])], sourceFile: genFile });
    expect(m.seen).toEqual([]);
    const text = s.graph.toString();
    expect(text).toMatch(/host_call\(%\d+, %\d+\) \{name="CallsIgnored\.log", types=\[\]\}/);
    expect(text).toMatch(/= host_call\(%\d+, %\d+\) \{name="CallsIgnored\.debug", types=\["f32\[N,4\]"\]\} : f32\[N,4\]/);
    for (const n of [3, 4]) {
      const x = randn([n, 4]);
      close(s.forward(x) as Tensor, x.mul(2).sub(3).relu());
    }
    expect(m.seen).toEqual([3, 4]); // each run called log with its batch size
    // From the runtime text alone, compiling runs log once on example inputs (batch 5) to type it.
    m.seen.length = 0;
    jit.script(m, { inputs: [randn([2, 4])] });
    expect(m.seen).toEqual([5]);
    // Dead-code elimination and CSE keep both calls (the log's result is unused: it is kept for its effect).
    const optimized = eliminateCommonSubexpressions(eliminateDeadCode(s.graph));
    expect(optimized.toString().match(/host_call\(/g)?.length).toBe(2);
    // jit.optimizeForInference (-O2) keeps the calls and wires them to the same methods.
    const fast = jit.optimizeForInference(s);
    m.seen.length = 0;
    const x6 = randn([6, 4]);
    close(fast.forward(x6) as Tensor, x6.mul(2).sub(3).relu());
    expect(m.seen).toEqual([6]);
    expect(() => s.toBytes()).toThrow(/host_call 'CallsIgnored\.(log|debug)'[\s\S]*@jit\.ignore[\s\S]*@jit\.unused[\s\S]*in this process/);
    expect(() => createModel(s.graph).runSync([randn([2, 4])])).toThrow(/host function 'CallsIgnored\.log'[\s\S]*hostFunctions/);
  });

  it('@jit.ignore calls that cannot be compiled are located ScriptErrors saying what to do', () => {
    const fail = (m: nn.Module, message: RegExp, token: string) => {
      let err: unknown;
      try { jit.script(m, { sourceFile: genFile }).forward(randn([2, 4])); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(jit.ScriptError);
      const e = err as jit.ScriptError;
      expect(e.message).toMatch(message);
      expect(e.file).toBe(genFile);
      const lines = e.frame.split('\n');
      expect(lines[lines.length - 2].slice(lines[lines.length - 2].indexOf('| ') + 2 + e.col - 1).startsWith(token)).toBe(true);
    };
    fail(new mod.IgnoredGetsString(), /argument 1 of IgnoredGetsString\.tag \(marked @jit\.ignore\) is the string "label"; a method that stays JavaScript takes tensors, numbers and booleans/, 'this.tag(');
    fail(new mod.IgnoredThrows(), /IgnoredThrows\.check \(marked @jit\.ignore\) stays JavaScript, and jit\.script runs it once on example inputs[\s\S]*one row at a time/, 'this.check(');
  });

  it('@jit.unused: dead when compiling is dropped; reachable at run time becomes raise, which saves and fails only when reached', async () => {
    const m = new mod.GuardedUnused();
    m.eval();
    const s = jit.script(m, { inputs: [randn([2, 4])] });
    expect(s.graph.toString()).toMatch(/= raise\(\) \{message="GuardedUnused\.legacy is marked @jit\.unused[^"]*", types=\["f32\[N,4\]"\]\} : f32\[N,4\]/);
    const x = randn([2, 4]).mul(0.1);
    close(s.forward(x) as Tensor, x.tanh());
    const big = randn([2, 4]).abs().add(20);
    expect(() => s.forward(big)).toThrow(/GuardedUnused\.legacy is marked @jit\.unused and was reached at run time/);
    const loaded = await load(s.toBytes());
    const [y] = await loaded.run([x]);
    Array.from(y.data).forEach((v, i) => expect(Math.abs(v - x.tanh().data[i])).toBeLessThan(1e-6));
    await expect(loaded.run([big])).rejects.toThrow(/GuardedUnused\.legacy is marked @jit\.unused/);
    m.train();
    expect(() => jit.script(m).forward(x)).toThrow(/GuardedUnused\.legacy is marked @jit\.unused and was reached/);
  });
});

describe('@jit.script with a loop whose trip count is an argument', () => {
  it('agrees with the eager loop for n = 0, 1, 5', () => {
    manualSeed(12);
    const m = new mod.DecoratedRepeat() as nn.Module & { fc: nn.Linear };
    for (const n of [0, 1, 5]) {
      const x = randn([2, 3]);
      let want = x;
      noGrad(() => { for (let i = 0; i < n; i++) want = m.fc.forward(want).tanh(); });
      close(m.forward(x, n) as Tensor, want);
    }
    expect(jit.script(m).graph.toString()).toMatch(/= loop\(%\d+, none, %x\)/);
  });
});
