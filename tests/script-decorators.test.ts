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

  it('@jit.ignore: calling an ignored method from compiled code is a located ScriptError naming it', () => {
    const m = new mod.CallsIgnored();
    expect(() => jit.script(m).forward(randn([2, 4]))).toThrow(/CallsIgnored\.debug is marked @jit\.ignore[\s\S]*not supported yet[\s\S]*\^/);
  });

  it('@jit.unused: allowed on a path that is dead when compiling, refused when it can run', () => {
    const m = new mod.GuardedUnused();
    m.eval();
    const x = randn([2, 4]);
    close(jit.script(m).forward(x) as Tensor, x.tanh());
    m.train();
    expect(() => jit.script(m).forward(x)).toThrow(/GuardedUnused\.legacy is marked @jit\.unused/);
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
