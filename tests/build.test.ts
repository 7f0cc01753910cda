// The built packages work the way users consume them: every workspace package's package.json
// points `main`/`types`/`exports` at files that exist in its dist after the build, and plain
// Node (no vitest aliases, no TypeScript) can import 'kiln' and train a tiny model with it.
// `npm test` builds first; this file builds again (incremental, near-instant when up to date)
// so it also checks the current sources when run on its own.

import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SMOKE = fileURLToPath(new URL('./build/smoke.mjs', import.meta.url));

interface PackageJson {
  name: string;
  private?: boolean;
  main?: string;
  types?: string;
  exports?: Record<string, string | Record<string, string>>;
}

const readJson = <T,>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const workspaces = readJson<{ workspaces: string[] }>(join(ROOT, 'package.json')).workspaces;
const published = workspaces
  .map((dir) => ({ dir, pkg: readJson<PackageJson>(join(ROOT, dir, 'package.json')) }))
  .filter((w) => !w.pkg.private);

/** Every file path a package.json entry names: main, types and each condition of each export. */
function entryFiles(pkg: PackageJson): [string, string][] {
  const out: [string, string][] = [];
  if (pkg.main) out.push(['main', pkg.main]);
  if (pkg.types) out.push(['types', pkg.types]);
  for (const [sub, target] of Object.entries(pkg.exports ?? {})) {
    if (typeof target === 'string') out.push([`exports["${sub}"]`, target]);
    else for (const [cond, file] of Object.entries(target)) out.push([`exports["${sub}"].${cond}`, file]);
  }
  return out;
}

describe('build output', () => {
  beforeAll(() => {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const r = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`npm run build (tsc -b tsconfig.build.json) failed:\n${r.stdout}${r.stderr}`);
  }, 300_000);

  for (const { dir, pkg } of published) {
    it(`${pkg.name}: main, types and exports point at built files`, () => {
      const entries = entryFiles(pkg);
      expect(entries.map(([field]) => field), `${dir}/package.json entry fields`).toEqual(
        expect.arrayContaining(['main', 'types', 'exports["."].import', 'exports["."].types']));
      const missing = entries.filter(([, file]) => !existsSync(join(ROOT, dir, file))).map(([field, file]) => `${dir}/package.json ${field}: ${file} does not exist`);
      expect(missing).toEqual([]);
      const outsideDist = entries.filter(([, file]) => !file.startsWith('./dist/')).map(([field, file]) => `${dir}/package.json ${field}: ${file} is not under ./dist/ (only dist is published)`);
      expect(outsideDist).toEqual([]);
    });
  }

  it("plain Node imports the built 'kiln' and trains a tiny model", () => {
    const r = spawnSync(process.execPath, [SMOKE], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, `node tests/build/smoke.mjs failed:\n${r.stderr}`).toBe(0);
    const result = JSON.parse(r.stdout.trim().split('\n').pop() ?? '');
    expect(result.missing, "API.md names missing from the built 'kiln'").toEqual([]);
    expect(result.grad).toEqual([2, 4, 6]); // d/dw sum(w*w) = 2w at w = [1, 2, 3]
    expect(result.nParams).toBe(3 * 2 + 2); // Linear(3, 2): weight [2, 3] and bias [2]
    // Two separable points: 20 Adam steps at lr 0.1 cut the cross-entropy by far more than half.
    expect(result.lastLoss).toBeLessThan(result.firstLoss / 2);
  });
});
