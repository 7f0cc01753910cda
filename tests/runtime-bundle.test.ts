// The runtime bundles small for browsers (DESIGN.md layer 2): esbuild bundles the browser entry
// that runtime/package.json names, from source, for `platform: 'browser'`; the bundle must hold
// no compiler, no ts-morph/TypeScript and no Node built-in — checked on the metafile's inputs
// and imports and on the output text — and it must still load and run a `.tsgraph`.

import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { GraphBuilder, encodeTsgraph, tensorType } from '@kiln/ir-spec';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'runtime/package.json'), 'utf8')) as {
  exports: { '.': Record<string, string> };
};

/** The source file behind a `./dist/x.js` export of the runtime package. */
const sourceOf = (dist: string) => join(ROOT, 'runtime', dist.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'));

async function bundle(entry: string, opts: { external?: string[] } = {}) {
  const r = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    minify: true,
    write: false,
    metafile: true,
    logLevel: 'silent',
    absWorkingDir: ROOT,
    // From source, as vitest.config.ts resolves the workspace packages.
    alias: { '@kiln/ir-spec': join(ROOT, 'ir-spec/src/index.ts') },
    external: opts.external,
  });
  return { text: r.outputFiles[0].text, metafile: r.metafile };
}

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, m.split('/')[0]]));
const isBuiltin = (spec: string) => spec.startsWith('node:') || BUILTINS.has(spec) || BUILTINS.has(spec.split('/')[0]);

/** Everything in a bundle that must not be there, as readable lines. */
function forbidden(text: string, metafile: Metafile): string[] {
  const bad: string[] = [];
  for (const [file, input] of Object.entries(metafile.inputs)) {
    if (/(^|\/)(compiler|packages\/core|packages\/kiln)\/|node_modules\/(ts-morph|typescript|@ts-morph)\//.test(file)) bad.push(`input ${file}`);
    for (const imp of input.imports) if (isBuiltin(imp.path) || imp.external) bad.push(`${file} imports '${imp.path}'${imp.external ? ' (external)' : ''}`);
  }
  // The output text: module specifiers in import/export/require/import() of a built-in.
  const spec = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)["']([^"']+)["']/g;
  for (const m of text.matchAll(spec)) if (isBuiltin(m[1]) || m[1].startsWith('@kiln/')) bad.push(`output references '${m[1]}'`);
  // Any string starting with `node:` (a dynamic import could build a specifier from it).
  for (const m of text.matchAll(/["'`]node:[\w/]*/g)) bad.push(`output contains the string ${m[0]}`);
  for (const word of ['@kiln/compiler', 'ts-morph', 'typescript']) {
    if (text.includes(word)) bad.push(`output contains '${word}'`);
  }
  return bad;
}

describe('runtime browser bundle', () => {
  it('package.json sends Node to index.js and everything else to browser.js', () => {
    const exp = pkg.exports['.'];
    expect(exp.node).toBe('./dist/index.js');
    for (const cond of ['browser', 'import', 'default']) expect(exp[cond], cond).toBe('./dist/browser.js');
    // The first condition that matches wins: `browser` before `node` (bundlers for browsers
    // match both), `node` before `import` (Node matches both).
    const at = (c: string) => Object.keys(exp).indexOf(c);
    expect(at('browser')).toBeLessThan(at('node'));
    expect(at('node')).toBeLessThan(at('import'));
  });

  it('builds with no compiler, TypeScript or Node built-in, and runs a .tsgraph', async ({ annotate }) => {
    const { text, metafile } = await bundle(sourceOf(pkg.exports['.'].browser));
    expect(forbidden(text, metafile)).toEqual([]);
    const inputs = Object.keys(metafile.inputs).map((f) => relative(ROOT, join(ROOT, f)));
    expect(inputs.some((f) => f.startsWith('runtime/src/executor.ts'))).toBe(true);
    expect(inputs.some((f) => f.startsWith('ir-spec/src/'))).toBe(true);

    const bytes = Buffer.byteLength(text), gzip = gzipSync(text).length;
    await annotate(`runtime browser bundle: ${(bytes / 1024).toFixed(1)} KiB minified, ${(gzip / 1024).toFixed(1)} KiB gzipped`);
    // A budget, so growth is noticed. zod is most of it: ir-spec's `import { z } from 'zod'` keeps
    // every zod locale; `import * as z from 'zod'` would bring the bundle to about 230 KiB.
    expect(bytes).toBeLessThan(700 * 1024);

    // The bundle is a working runtime: import it and run a saved graph.
    const dir = mkdtempSync(join(tmpdir(), 'kiln-bundle-'));
    try {
      const file = join(dir, 'runtime.mjs');
      writeFileSync(file, text);
      const rt = (await import(pathToFileURL(file).href)) as typeof import('@kiln/runtime');
      const b = new GraphBuilder('double');
      const x = b.input('x', tensorType('float32', ['N', 2]));
      b.output('y', b.op1('mul', [b.op1('relu', [x]), b.literal(2)]));
      const model = await rt.load(encodeTsgraph(b.build()));
      const [y] = await model.run([{ data: new Float32Array([1, -2, 3, 4]), shape: [2, 2], dtype: 'float32' }]);
      expect(Array.from(y.data)).toEqual([2, 0, 6, 8]);
      // 'auto' picks the CPU for a file without WGSL kernels (WebGPU in a browser: webgpu-browser.test.ts).
      expect(model.backend).toBe('cpu');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the check catches a Node built-in: the Node entry is refused', async () => {
    // Bundled for the browser, index.ts fails outright (node:fs cannot be resolved) ...
    await expect(bundle(sourceOf(pkg.exports['.'].node))).rejects.toThrow(/node:fs\/promises|node:url/);
    // ... and with the built-ins left external, the checker names them.
    const { text, metafile } = await bundle(sourceOf(pkg.exports['.'].node), { external: ['node:*'] });
    const bad = forbidden(text, metafile);
    expect(bad.some((l) => l.includes("'node:fs/promises'"))).toBe(true);
  });
});
