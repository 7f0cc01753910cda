// `kiln run --seed`: a .tsgraph with random ops draws from a generator seeded by the flag, so the
// same seed prints the same outputs and another seed other ones (issue 12).
import { describe, it, expect, vi } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jit, randn } from 'kiln';
import { parseArgs } from '../packages/cli/src/args.js';
import { RUN_FLAGS, runCommand } from '../packages/cli/src/commands/run.js';
import { Noisy } from './script-models/random.js';

async function outputLine(file: string, input: string, seed: string): Promise<string> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => { lines.push(a.join(' ')); });
  try {
    expect(await runCommand(parseArgs('run', [file, '--backend', 'cpu', '--input', `x=${input}`, '--seed', seed], RUN_FLAGS))).toBe(0);
  } finally {
    spy.mockRestore();
  }
  return lines.find((l) => l.includes('output output:'))!;
}

describe('kiln run --seed', () => {
  it('same seed, same draws; another seed, other draws; a bad seed is a usage error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-seed-'));
    const file = join(dir, 'noisy.tsgraph'), input = join(dir, 'x.json');
    writeFileSync(file, jit.script(new Noisy(), { inputs: [randn([2, 4])] }).toBytes());
    writeFileSync(input, JSON.stringify([[1, 2, 3, 4], [5, 6, 7, 8]]));
    const a = await outputLine(file, input, '7'), b = await outputLine(file, input, '7'), c = await outputLine(file, input, '8');
    expect(a).toBe(b);
    expect(a).not.toBe(c);
    await expect(runCommand(parseArgs('run', [file, '--seed', '-1'], RUN_FLAGS))).rejects.toThrow(/--seed must be a non-negative integer/);
  });
});
