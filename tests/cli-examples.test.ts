// Every model file in examples/cli compiles with the bundled `kiln` CLI into a .tsgraph that
// `kiln run`, `kiln inspect` and `kiln viz` handle, and whose outputs match the eager model
// (same weights via --weights) within 1e-5 — for AdaptiveResNet on inputs taking both sides of
// its data-dependent branch.

import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeTsgraph } from '@kiln/ir-spec';
import { load } from '@kiln/runtime';
import { manualSeed, noGrad, randn, saveSafetensors, zeros, type nn, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/cli/research-model.js';
import { AdaptiveResNet } from '../examples/cli/adaptive-resnet.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/kiln.mjs');
const TMP = mkdtempSync(join(tmpdir(), 'kiln-cli-examples-'));

function ok(...args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  expect(r.status, `kiln ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return r.stdout;
}

function saveWeights(model: nn.Module, name: string): string {
  for (const [k, b] of Object.entries(model.stateDict())) {
    if (k.endsWith('running_mean')) b.copy_(randn(b.shape).mul(0.1));
    if (k.endsWith('running_var')) b.copy_(randn(b.shape).abs().add(0.5));
  }
  const path = join(TMP, name);
  writeFileSync(path, saveSafetensors(model.stateDict()));
  return path;
}

async function matchesEager(file: string, model: nn.Module, xs: Tensor[]): Promise<void> {
  model.eval();
  const g = await load(file, { backend: 'cpu' });
  for (const x of xs) {
    const want = (noGrad(() => model.forward(x)) as Tensor).toArray();
    const [got] = await g.run([x]);
    for (let i = 0; i < want.length; i++) expect(Math.abs(got.data[i] - want[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want[i])));
  }
}

const cases = [
  { file: 'examples/cli/research-model.ts', make: () => new ResearchModel(), inputs: (n: number) => [randn([n, 3, 32, 32])], batch: '2' },
  { file: 'examples/cli/adaptive-resnet.ts', make: () => new AdaptiveResNet(), inputs: (n: number) => [randn([n, 3, 16, 16]).mul(4), zeros([n, 3, 16, 16])], batch: '3' },
];

describe('kiln on examples/cli', () => {
  beforeAll(() => {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const b = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
    if (b.status !== 0) throw new Error(`tsc -b failed:\n${b.stdout}${b.stderr}`);
    const e = spawnSync(process.execPath, ['packages/cli/bundle.mjs'], { cwd: ROOT, encoding: 'utf8' });
    if (e.status !== 0) throw new Error(`the CLI bundle failed:\n${e.stdout}${e.stderr}`);
  }, 300_000);

  for (const c of cases) {
    it(`${c.file}: compile (-O2, --weights), then run, inspect and viz; the file matches eager`, async () => {
      manualSeed(5);
      const model = c.make();
      const out = join(TMP, `${c.file.replace(/\W+/g, '_')}.tsgraph`);
      ok('compile', c.file, '--weights', saveWeights(model, 'w.safetensors'), '-q', '-o', out);
      const xs = [1, 2].flatMap(c.inputs);
      await matchesEager(out, model, xs);

      const { graph } = decodeTsgraph(new Uint8Array(readFileSync(out)));
      expect(ok('run', out, '--batch', c.batch)).toMatch(new RegExp(`output output: float32 \\[${c.batch},10\\]`));
      expect(ok('inspect', out)).toContain(graph.toString().trim());
      expect(ok('viz', out)).toMatch(/^digraph /);
      if (model instanceof AdaptiveResNet) {
        const text = graph.toString();
        expect(text).toMatch(/= if\(/);
        expect(text).toMatch(/= loop\(/);
        // Both sides of the residual branch are exercised by the inputs above.
        const taken = new Set(xs.map((x) => noGrad(() => model.stem.forward(x).mean().item()) > model.threshold));
        expect(taken.size).toBe(2);
      } else {
        expect(graph.toString()).not.toContain('dropout');
        expect(graph.toString()).not.toContain('batch_norm');
      }
    });
  }
});
