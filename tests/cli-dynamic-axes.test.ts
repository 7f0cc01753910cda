// `kiln compile` with an --input type that names dims beyond dim 0 (x:f32[N,T,6]): both the
// default jit.script front end and --trace give a graph whose sequence length T is symbolic
// (the LSTM loops over it), and the written file matches the eager model at several T.

import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeTsgraph } from '@kiln/ir-spec';
import { manualSeed, randn } from 'kiln';
import { SequenceTagger } from './cli-fixtures/sequence-tagger.js';
import { buildCli, expectMatchesEager, weightsFile } from './helpers/cli-models.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/kiln.mjs');
const TMP = mkdtempSync(join(tmpdir(), 'kiln-cli-dynaxes-'));

describe('kiln compile with a symbolic sequence length', () => {
  beforeAll(() => buildCli(ROOT), 300_000);

  for (const mode of ['script', 'trace'] as const) {
    it(`${mode}: x:f32[N,T,6] gives a graph over symbolic N and T that matches eager at T = 2, 7`, async () => {
      manualSeed(21);
      const model = new SequenceTagger();
      const w = weightsFile(model, TMP, `tagger-${mode}.safetensors`);
      const out = join(TMP, `tagger-${mode}.tsgraph`);
      const r = spawnSync(process.execPath, [CLI, 'compile', 'tests/cli-fixtures/sequence-tagger.ts', '--export', 'SequenceTagger', ...(mode === 'trace' ? ['--trace'] : []), '--weights', w, '-q', '-o', out], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      const text = decodeTsgraph(new Uint8Array(readFileSync(out))).graph.toString();
      expect(text).toContain('%x: f32[N,T,6]');
      expect(text).toMatch(/= loop\(/);
      await expectMatchesEager(out, model, [randn([2, 2, 6]), randn([3, 7, 6])]);
    }, 180_000);
  }
});
