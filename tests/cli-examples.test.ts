// Every model file in examples/cli compiles with the bundled `kiln` CLI into a .tsgraph that
// `kiln run`, `kiln inspect` and `kiln viz` handle, and whose outputs match the eager model
// (same weights via --weights) within 1e-5 — for AdaptiveResNet on inputs taking both sides of
// its data-dependent branch.

import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeTsgraph } from '@kiln/ir-spec';
import { manualSeed, noGrad, randn, zeros } from 'kiln';
import { ResearchModel } from '../examples/cli/research-model.js';
import { AdaptiveResNet } from '../examples/cli/adaptive-resnet.js';
import { buildCli, expectMatchesEager, weightsFile } from './helpers/cli-models.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/kiln.mjs');
const TMP = mkdtempSync(join(tmpdir(), 'kiln-cli-examples-'));

function ok(...args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  expect(r.status, `kiln ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return r.stdout;
}

const cases = [
  { file: 'examples/cli/research-model.ts', make: () => new ResearchModel(), inputs: (n: number) => [randn([n, 3, 32, 32])], batch: '2' },
  { file: 'examples/cli/adaptive-resnet.ts', make: () => new AdaptiveResNet(), inputs: (n: number) => [randn([n, 3, 16, 16]).mul(4), zeros([n, 3, 16, 16])], batch: '3' },
];

describe('kiln on examples/cli', () => {
  beforeAll(() => buildCli(ROOT), 300_000);

  for (const c of cases) {
    it(`${c.file}: compile (-O2, --weights), then run, inspect and viz; the file matches eager`, async () => {
      manualSeed(5);
      const model = c.make();
      const out = join(TMP, `${c.file.replace(/\W+/g, '_')}.tsgraph`);
      ok('compile', c.file, '--weights', weightsFile(model, TMP, 'w.safetensors', 0.1), '-q', '-o', out);
      const xs = [1, 2].flatMap(c.inputs);
      await expectMatchesEager(out, model, xs);

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
