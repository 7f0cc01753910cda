// The `kiln` command on model files that used to fail badly: the documented decorators
// (@jit.export, which esbuild's parser rejects as written, @jit.ignore, @jit.unused) compile;
// a file calling process.exit fails with exit 1 and says so; bad --input specs are usage errors
// naming the bad part, reported before the model file is imported; `kiln run` checks its flags
// before it starts a backend; compiled files do not depend on the folder they were built in.

import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { decodeTsgraph } from '@kiln/ir-spec';
import { manualSeed, randn, type nn, type Tensor } from 'kiln';
import { buildCli, expectMatchesEager, weightsFile } from './helpers/cli-models.js';
import { parenthesizeReservedDecorators } from '../packages/cli/src/decorator-names.js';
import { SmallCnn } from './cli-fixtures/small-cnn.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/kiln.mjs');
const FIX = 'tests/cli-fixtures';
const TMP = mkdtempSync(join(tmpdir(), 'kiln-cli-errors-'));

interface Result { code: number | null; stdout: string; stderr: string }

function kiln(args: string[], cwd = ROOT, env: NodeJS.ProcessEnv = process.env): Result {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', timeout: 120_000, env });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('kiln CLI: model files and flags that used to fail badly', () => {
  beforeAll(() => buildCli(ROOT), 300_000);

  describe('the jit decorators by their documented names', () => {
    it('kiln compile accepts @jit.export, @jit.ignore and @jit.unused; the file matches eager', async () => {
      // The same model built eagerly here (tsc's decorator emit, below); its weights go to the CLI.
      const model = (await importWithTsc(`${FIX}/decorated.ts`)).default as nn.Module;
      const w = weightsFile(model, TMP, 'decorated.safetensors');
      const out = join(TMP, 'decorated.tsgraph');
      const r = kiln(['compile', `${FIX}/decorated.ts`, '--weights', w, '-o', out]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toContain('Expected identifier');
      await expectMatchesEager(out, model, [randn([2, 4]), randn([5, 4])]);
    });

    it('tsc emits the same decorators (standard decorators, @jit.export as written), and they run', async () => {
      const mod = await importWithTsc(`${FIX}/decorated.ts`);
      const model = mod.default as nn.Module & { head(y: Tensor): Tensor };
      const x = randn([3, 4]);
      expect((model.forward(x) as Tensor).shape).toEqual([3, 3]);
      expect(model.head(x.neg()).toArray().every((v) => v >= 0)).toBe(true);
    });

    it('only the decorators esbuild rejects are rewritten; strings and comments stay as they are', async () => {
      const src = [
        "// @jit.export in a comment",
        "const s = '@jit.export in a string';",
        'class A {',
        '  @jit.export',
        '  f() {}',
        '  @ jit . export g() {}',
        '  @jit.ignore h() {}',
        '  @a.b.default k() {}',
        '}',
      ].join('\n');
      const out = await parenthesizeReservedDecorators(src, 'ts');
      expect(out.split('\n')).toEqual([
        "// @jit.export in a comment",
        "const s = '@jit.export in a string';",
        'class A {',
        '  @(jit.export)',
        '  f() {}',
        '  @ (jit . export) g() {}',
        '  @jit.ignore h() {}',
        '  @(a.b.default) k() {}',
        '}',
      ]);
      expect(await parenthesizeReservedDecorators('class A { @jit.ignore f() {} }', 'ts')).toBe('class A { @jit.ignore f() {} }');
      // Another syntax error is left for the bundler to report.
      expect(await parenthesizeReservedDecorators('class A { @jit.export f( {} }', 'ts')).toBe('class A { @(jit.export) f( {} }');
    });
  });

  describe('a model file that calls process.exit', () => {
    it('at import: exit 1 and a message saying the file exited during import, located', () => {
      const r = kiln(['compile', `${FIX}/exits-on-import.ts`, '-o', join(TMP, 'never.tsgraph')]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`error: ${FIX}/exits-on-import.ts:8:9: the model file exited during import (it called process.exit(0)). ` +
        'kiln imports the model file to get the model, so its top-level code runs');
    });

    it('later (in forward, while tracing): exit 1 and a message, not a silent exit 0', () => {
      const r = kiln(['compile', `${FIX}/exits-in-forward.ts`, '--trace', '-o', join(TMP, 'never.tsgraph')]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("error: the process exited (process.exit in the model's code) before 'kiln compile' finished; nothing was written.");
    });
  });

  describe('--input specs', () => {
    const cases: [string, string][] = [
      ['x:f32[-1]', "bad dim '-1': a dim is a size (0, 1, 2, ...) or a symbol such as N"],
      ['x:constructor[N,2]', "unknown dtype 'constructor' (use f32, i32 or bool)"],
      ['x:__proto__[N,2]', "unknown dtype '__proto__' (use f32, i32 or bool)"],
      ['x:f32', "the type 'f32' is not dtype[dims]"],
      ['x', "no ':' between the name and the type"],
      [':f32[N]', 'the name is missing'],
      ['x-y:f32[N]', "the name 'x-y' is not an identifier"],
      ['x:f32[N,2-5]', "bad dim '2-5': a dim is a size (0, 1, 2, ...) or a symbol such as N"],
    ];
    it.each(cases)('%s is a usage error naming the bad part, before the model file is imported', (spec, part) => {
      const r = kiln(['compile', `${FIX}/small-cnn.ts`, '--input', spec, '-o', join(TMP, 'never.tsgraph')]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`kiln: --input '${spec}': ${part}; write it as name:type`);
      expect(r.stderr).toContain('Usage: kiln compile <model.ts | model.onnx>');
      expect(r.stderr).not.toMatch(/internal error|^ +load /m);
    });

    it('user text never finds a prototype entry: --constructor is an unknown option, constructor an unknown command', () => {
      const o = kiln(['compile', `${FIX}/small-cnn.ts`, '--constructor', 'x', '-o', join(TMP, 'never.tsgraph')]);
      expect([o.code, o.stderr.includes("unknown option '--constructor' for 'kiln compile'")]).toEqual([1, true]);
      const c = kiln(['constructor']);
      expect([c.code, c.stderr.includes("unknown command 'constructor'")]).toEqual([1, true]);
      const e = kiln(['compile', `${FIX}/small-cnn.ts`, '--export', 'toString', '-o', join(TMP, 'never.tsgraph')]);
      expect([e.code, e.stderr.includes("no export 'toString'")]).toEqual([1, true]);
    });
  });

  describe('kiln run checks its flags before it starts a backend', () => {
    let graph: string;
    beforeAll(() => {
      graph = join(TMP, 'cnn.tsgraph');
      const r = kiln(['compile', `${FIX}/small-cnn.ts`, '-q', '-o', graph]);
      expect(r.code, r.stderr).toBe(0);
    }, 120_000);
    // No Vulkan driver: starting the WebGPU backend would fail (or hang), so an answer about the
    // flags shows they were checked first.
    const noGpu = { ...process.env, VK_ICD_FILENAMES: '/nonexistent.json' };

    it('a missing --input file', () => {
      const r = kiln(['run', graph, '--backend', 'webgpu', '--input', `x=${join(TMP, 'missing.json')}`], ROOT, noGpu);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`error: --input x: no such file: ${join(TMP, 'missing.json')}`);
      expect(r.stderr).not.toMatch(/webgpu|adapter|vulkan/i);
    });

    it('an --input name the graph does not declare', () => {
      const f = join(TMP, 'x.json');
      writeFileSync(f, JSON.stringify({ data: [0], shape: [1] }));
      const r = kiln(['run', graph, '--backend', 'webgpu', '--input', `y=${f}`], ROOT, noGpu);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("error: --input y: the graph has no input 'y'; its inputs are x: f32[N,3,8,8]");
      expect(r.stderr).not.toMatch(/webgpu|adapter|vulkan/i);
    });

    it('a malformed --input and a repeated one are usage errors', () => {
      const a = kiln(['run', graph, '--backend', 'webgpu', '--input', 'x='], ROOT, noGpu);
      expect([a.code, a.stderr.includes("kiln: --input takes name=file, got 'x='")]).toEqual([1, true]);
      const f = join(TMP, 'x.json');
      writeFileSync(f, JSON.stringify({ data: [0], shape: [1] }));
      const b = kiln(['run', graph, '--backend', 'webgpu', '--input', `x=${f}`, '--input', `x=${f}`], ROOT, noGpu);
      expect([b.code, b.stderr.includes('kiln: --input x is given twice')]).toEqual([1, true]);
    });
  });

  it('a jit.script error inside inlined library code is reported at the user\'s line, with the inner place as a note', () => {
    const r = kiln(['compile', 'tests/script-models/library-calls.ts', '--export', 'CallsParameters', '--input', 'x:f32[N,3]', '-o', join(TMP, 'never.tsgraph')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: tests/script-models/library-calls.ts:14:16: MLP.parameters() is Kiln library code that jit.script cannot compile');
    expect(r.stderr).toMatch(/\n {2}while inlining MLP\.parameters, at nn\.Module\.namedParameters \(Kiln library code\):\d+:\d+:\n/);
  });

  it('kiln compile --help says that the model file\'s top-level code runs', () => {
    const r = kiln(['compile', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('The model file is imported (bundled with esbuild, then run by Node), so its top-level code\nruns');
  });

  it('the same model compiled in two copies of a folder gives byte-identical files', () => {
    manualSeed(3);
    const w = weightsFile(new SmallCnn(), TMP, 'same.safetensors');
    const outs = ['copy-a', 'copy-b'].map((name) => {
      const dir = join(TMP, name, 'project');
      mkdirSync(dir, { recursive: true });
      copyFileSync(join(ROOT, FIX, 'small-cnn.ts'), join(dir, 'model.ts'));
      const out = join(dir, 'model.tsgraph');
      const r = kiln(['compile', 'model.ts', '--weights', w, '-q', '-o', 'model.tsgraph'], dir);
      expect(r.code, r.stderr).toBe(0);
      return readFileSync(out);
    });
    expect(outs[0].equals(outs[1])).toBe(true);
    const { header } = decodeTsgraph(new Uint8Array(outs[0]));
    expect(header.metadata.source).toBe('model.tsgraph'.replace('.tsgraph', '.ts'));
    expect(JSON.stringify(header)).not.toContain(TMP);
    expect(JSON.stringify(header.graph)).toMatch(/"loc":"model\.ts:\d+:\d+"/);
  });
});

/** Imports a model file compiled by TypeScript's own emit (standard decorators lowered by tsc). */
async function importWithTsc(rel: string): Promise<Record<string, unknown>> {
  const src = readFileSync(join(ROOT, rel), 'utf8');
  const out = ts.transpileModule(src, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, experimentalDecorators: false }, reportDiagnostics: true });
  expect(out.diagnostics ?? []).toEqual([]);
  const file = join(mkdtempSync(join(tmpdir(), 'kiln-tsc-')), 'decorated.gen.ts');
  writeFileSync(file, out.outputText);
  return await import(/* @vite-ignore */ file) as Record<string, unknown>;
}
