// Importing kiln (the built package, as a user's program does) must not load ts-morph and the
// TypeScript compiler inside it: only the first jit.script call does (compiler/src/script/ts-morph.ts).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs an ES module in a fresh node process at the repository root; returns its stdout. */
const node = (code: string) => execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8' });

describe('the scripter loads ts-morph lazily', () => {
  it('import kiln loads no ts-morph; jit.script then loads it and scripts', () => {
    const out = node(`
      import { createRequire } from 'node:module';
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('ts-morph'));
      const kiln = await import('kiln');
      const before = loaded();
      class Relu extends kiln.nn.Module { forward(x) { return x.relu(); } }
      const m = kiln.jit.script(new Relu(), { inputs: [kiln.randn([2])] });
      console.log(JSON.stringify({ before, after: loaded(), out: Array.from(m.forward(kiln.tensor([-1, 2])).toArray()) }));
    `);
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ before: false, after: true, out: [0, 2] });
  });
});
