// The layering check (DESIGN.md, "Where things live"): each package imports only the layers
// below it, never reaches into another package by a relative path, and its package.json and
// tsconfig.json declare exactly the workspace packages its sources import. Examples and
// benchmarks use the public `kiln` package only. Imports are read with TypeScript's own
// pre-processor, so comments and strings that merely look like imports are not counted.

import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The allowed workspace dependencies of each library package (DESIGN.md layers). */
const ALLOWED: Record<string, readonly string[]> = {
  '@kiln/ir-spec': [],
  '@kiln/runtime': ['@kiln/ir-spec'],
  '@kiln/compiler': ['@kiln/ir-spec', '@kiln/runtime'],
  // core loads the compiler's WGSL generators only when eager WebGPU starts (initWebGpu).
  '@kiln/core': ['@kiln/ir-spec', '@kiln/runtime', '@kiln/compiler'],
  kiln: ['@kiln/core', '@kiln/compiler', '@kiln/runtime', '@kiln/ir-spec'],
  // The CLI reads .tsgraph headers (ir-spec) and runs files on a chosen backend (runtime) directly.
  '@kiln/cli': ['kiln', '@kiln/ir-spec', '@kiln/runtime'],
};

/**
 * Third-party packages a library package may import, where DESIGN.md restricts them:
 * ir-spec depends on zod only; the runtime must bundle small (no compiler toolchain).
 * Other packages may import any third-party package they declare.
 */
const EXTERNAL_ONLY: Record<string, readonly string[]> = { '@kiln/ir-spec': ['zod'] };
const EXTERNAL_FORBIDDEN: Record<string, readonly string[]> = { '@kiln/runtime': ['typescript', 'ts-morph'] };

/**
 * Workspace dependencies declared ahead of their first import because DESIGN.md plans them
 * (the placeholder packages arrive with later issues). Each entry must still be unused: the
 * test below fails once the import exists, so this list only ever shrinks.
 */
const PLANNED: Record<string, readonly string[]> = {};

interface Workspace { dir: string; name: string; pkg: PackageJson }
interface PackageJson {
  name: string;
  private?: boolean;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}
interface ImportSite { file: string; line: number; spec: string }

const readJson = <T,>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const rootPkg = readJson<PackageJson & { workspaces: string[] }>(join(ROOT, 'package.json'));
const workspaces: Workspace[] = rootPkg.workspaces.map((dir) => {
  const pkg = readJson<PackageJson>(join(ROOT, dir, 'package.json'));
  return { dir, name: pkg.name, pkg };
});
const libraries = workspaces.filter((w) => w.name in ALLOWED);
const workspaceNames = new Set(workspaces.map((w) => w.name));
const nodeBuiltins = new Set(builtinModules);

const SOURCE = /\.(ts|mts|cts|tsx|js|mjs|cjs)$/;

/** Every source file under `dir` (skipping node_modules and build output). */
function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(p));
    else if (SOURCE.test(entry.name) && !/\.d\.[cm]?ts$/.test(entry.name)) out.push(p);
  }
  return out.sort();
}

/** Static imports, re-exports, `import()` with a literal and `require()` of one file. */
function importsOf(file: string): ImportSite[] {
  const text = readFileSync(file, 'utf8');
  const info = ts.preProcessFile(text, true, true);
  const lineOf = (pos: number) => text.slice(0, pos).split('\n').length;
  return info.importedFiles.map((f) => ({ file: relative(ROOT, file), line: lineOf(f.pos), spec: f.fileName }));
}

/** The package a bare specifier names: `@scope/name/sub` → `@scope/name`, `zod/v4` → `zod`. */
function packageOf(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}
const isRelative = (spec: string) => spec.startsWith('./') || spec.startsWith('../') || spec === '.' || spec === '..';
const isBuiltin = (spec: string) => spec.startsWith('node:') || nodeBuiltins.has(packageOf(spec));
const isTestFile = (file: string) => /\.(test|spec)\.[cm]?[jt]sx?$/.test(file);
const where = (s: ImportSite) => `${s.file}:${s.line} imports '${s.spec}'`;

const declared = (pkg: PackageJson) =>
  new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);

/** What each library package's src imports, split by kind. */
function scan(w: Workspace) {
  const srcDir = join(ROOT, w.dir, 'src');
  const sites = sourceFiles(srcDir).flatMap(importsOf);
  const workspace = sites.filter((s) => !isRelative(s.spec) && workspaceNames.has(packageOf(s.spec)));
  const external = sites.filter((s) => !isRelative(s.spec) && !isBuiltin(s.spec) && !workspaceNames.has(packageOf(s.spec)));
  const escaping = sites.filter((s) => {
    if (!isRelative(s.spec)) return false;
    const target = resolve(ROOT, dirname(s.file), s.spec);
    return target !== srcDir && !target.startsWith(srcDir + sep);
  });
  return { srcDir, sites, workspace, external, escaping };
}

describe('layering (DESIGN.md)', () => {
  it('knows every library package of the workspace', () => {
    const missing = Object.keys(ALLOWED).filter((n) => !libraries.some((w) => w.name === n));
    expect(missing, 'packages named in DESIGN.md but not in the root package.json workspaces').toEqual([]);
    const unknown = workspaces.filter((w) => !(w.name in ALLOWED) && !w.pkg.private).map((w) => `${w.dir} (${w.name})`);
    expect(unknown, 'a published workspace package without a layer: add it to ALLOWED in tests/layering.test.ts and DESIGN.md').toEqual([]);
  });

  for (const w of libraries) {
    describe(`${w.name} (${w.dir})`, () => {
      const s = scan(w);

      it('has sources to check', () => {
        expect(sourceFiles(s.srcDir).length, `${w.dir}/src holds no source files`).toBeGreaterThan(0);
      });

      it('imports only workspace packages from the layers below it', () => {
        const bad = s.workspace
          .filter((site) => !ALLOWED[w.name].includes(packageOf(site.spec)))
          .map((site) => `${where(site)}: ${w.name} may use only [${ALLOWED[w.name].join(', ') || 'no workspace package'}]`);
        expect(bad).toEqual([]);
      });

      it('imports no other package by a relative path', () => {
        const bad = s.escaping.map((site) => `${where(site)}: leaves ${w.dir}/src; import the other package by its name (and declare it), or move the file`);
        expect(bad).toEqual([]);
      });

      it('imports only the third-party packages its layer allows, all declared', () => {
        const decl = declared(w.pkg);
        const bad: string[] = [];
        for (const site of s.external) {
          const name = packageOf(site.spec);
          if (isTestFile(site.file) && name in (rootPkg.devDependencies ?? {})) continue; // vitest etc. for unit tests
          if (EXTERNAL_ONLY[w.name] && !EXTERNAL_ONLY[w.name].includes(name)) bad.push(`${where(site)}: ${w.name} may depend on [${EXTERNAL_ONLY[w.name].join(', ')}] only`);
          else if (EXTERNAL_FORBIDDEN[w.name]?.includes(name)) bad.push(`${where(site)}: ${w.name} must not depend on ${name}`);
          else if (!decl.has(name)) bad.push(`${where(site)}: '${name}' is not declared in ${w.dir}/package.json dependencies`);
        }
        expect(bad).toEqual([]);
      });

      it('declares exactly the workspace packages it imports (package.json and tsconfig references)', () => {
        const imported = new Set(s.workspace.map((site) => packageOf(site.spec)));
        const planned = PLANNED[w.name] ?? [];
        const decl = [...declared(w.pkg)].filter((n) => workspaceNames.has(n));
        const undeclared = [...imported].filter((n) => !decl.includes(n)).map((n) => `imports ${n} but ${w.dir}/package.json does not declare it`);
        const unused = decl.filter((n) => !imported.has(n) && !planned.includes(n)).map((n) => `${w.dir}/package.json declares ${n} but src never imports it; remove it`);
        const stale = planned.filter((n) => imported.has(n)).map((n) => `${n} is imported now: drop it from PLANNED['${w.name}'] in tests/layering.test.ts`);
        const undeclaredPlanned = planned.filter((n) => !decl.includes(n)).map((n) => `PLANNED lists ${n}, which ${w.dir}/package.json does not declare`);
        expect([...undeclared, ...unused, ...stale, ...undeclaredPlanned]).toEqual([]);

        // tsc -b builds in reference order, so the references must name the same packages.
        const tsconfig = readJson<{ references?: { path: string }[] }>(join(ROOT, w.dir, 'tsconfig.json'));
        const refs = (tsconfig.references ?? []).map((r) => {
          const target = resolve(ROOT, w.dir, r.path);
          return workspaces.find((o) => resolve(ROOT, o.dir) === target)?.name ?? `<unknown ${r.path}>`;
        });
        expect(refs.sort(), `${w.dir}/tsconfig.json references`).toEqual(decl.sort());
      });
    });
  }

  it('the cross-package tests declare every workspace package they import', () => {
    const testsWs = workspaces.find((w) => w.dir === 'tests');
    expect(testsWs, 'tests/ is a workspace').toBeDefined();
    const decl = declared(testsWs!.pkg);
    const files = sourceFiles(join(ROOT, 'tests')).filter((f) => !f.includes(`${sep}golden${sep}`));
    const bad = files.flatMap(importsOf)
      .filter((site) => !isRelative(site.spec) && workspaceNames.has(packageOf(site.spec)) && !decl.has(packageOf(site.spec)))
      .map((site) => `${where(site)}: add ${packageOf(site.spec)} to tests/package.json dependencies`);
    expect(bad).toEqual([]);
  });

  it('examples use only the public kiln and @kiln/runtime packages; benchmarks only workspace packages and bench/package.json peers', () => {
    // Benchmarks may time internals (a kernel from @kiln/ir-spec) and the peers bench/package.json
    // declares (installed only for `npm run bench:peers`); examples show users' code (which runs
    // saved files with the runtime alone).
    const EXAMPLE_PACKAGES = new Set(['kiln', '@kiln/runtime']);
    // The playground is an app, not user code: it compiles in the page, so it may import what its
    // own package.json declares (the compiler, ts-morph, CodeMirror), and the example model files
    // its build inlines ('playground:examples').
    const playgroundDir = join('examples', 'playground') + sep;
    const playgroundPkg = readJson<PackageJson>(join(ROOT, 'examples', 'playground', 'package.json'));
    const PLAYGROUND_PACKAGES = new Set([...EXAMPLE_PACKAGES, ...Object.keys(playgroundPkg.dependencies ?? {}), ...Object.keys(playgroundPkg.devDependencies ?? {}), 'playground:examples']);
    const benchPkg = join(ROOT, 'bench', 'package.json');
    const peers = new Set(existsSync(benchPkg) ? Object.keys((JSON.parse(readFileSync(benchPkg, 'utf8')) as { dependencies?: object }).dependencies ?? {}) : []);
    const benchAllows = (spec: string) => workspaceNames.has(packageOf(spec)) || peers.has(packageOf(spec));
    const bad: string[] = [];
    for (const dir of ['examples', 'bench']) {
      const base = join(ROOT, dir);
      for (const site of sourceFiles(base).flatMap(importsOf)) {
        if (isRelative(site.spec)) {
          const target = resolve(ROOT, dirname(site.file), site.spec);
          // The bench runs the examples' models and training, so the two folders may share files.
          const inside = ['examples', 'bench'].some((d) => target.startsWith(join(ROOT, d) + sep));
          if (!inside) bad.push(`${where(site)}: reaches outside examples/ and bench/; import the package by name instead`);
        } else if (isBuiltin(site.spec)) {
          continue;
        } else if (dir === 'examples' && site.file.startsWith(playgroundDir)) {
          if (!PLAYGROUND_PACKAGES.has(site.spec) && !PLAYGROUND_PACKAGES.has(packageOf(site.spec))) bad.push(`${where(site)}: the playground imports what examples/playground/package.json declares only`);
        } else if (dir === 'examples' ? !EXAMPLE_PACKAGES.has(site.spec) : !benchAllows(site.spec)) {
          bad.push(`${where(site)}: ${dir === 'examples' ? "examples import the public packages 'kiln' and '@kiln/runtime' only" : 'benchmarks import workspace packages and the peers of bench/package.json only'}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });

  it('scans real files (sanity check of the scanner itself)', () => {
    // core's Tensor imports ir-spec; if the scanner found nothing, every check above would pass vacuously.
    const core = libraries.find((w) => w.name === '@kiln/core')!;
    const found = scan(core).workspace.map((s) => packageOf(s.spec));
    expect(found).toContain('@kiln/ir-spec');
    expect(statSync(join(ROOT, core.dir, 'src')).isDirectory()).toBe(true);
  });
});
