// The Node reader of load()'s string sources (runtime/src/source-node.ts): a big file is read as
// several parts at once; the bytes must be the file's whatever the part boundaries, read into a
// given block or a fresh array, and a missing file is a SOURCE error naming the path.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readNodeSource } from '../runtime/src/source-node.js';

const dir = mkdtempSync(join(tmpdir(), 'kiln-source-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `n` bytes that differ from their neighbours and from a shifted copy (a misplaced part shows). */
function bytes(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 2654435761) >>> 24;
  return b;
}

describe('readNodeSource', () => {
  // 1 KiB (one part), 8 MiB + 1 (one part), 20 MiB + 3 (2 parts, ragged) and 37 MiB + 5 (4 parts).
  for (const n of [1024, (8 << 20) + 1, (20 << 20) + 3, (37 << 20) + 5]) {
    it(`reads a file of ${n} bytes exactly, into a given block and into a fresh one`, async () => {
      const want = bytes(n), path = join(dir, `f${n}`);
      writeFileSync(path, want);
      const fresh = await readNodeSource(path);
      expect(fresh.length).toBe(n);
      expect(Buffer.compare(fresh, want)).toBe(0);
      const block = new Uint8Array(n + 64).subarray(32, 32 + n);
      const into = await readNodeSource(`file://${path}`, (size) => (size === n ? block : undefined));
      expect(into).toBe(block);
      expect(Buffer.compare(into, want)).toBe(0);
    });
  }

  it('refuses a missing file with a SOURCE error naming it', async () => {
    await expect(readNodeSource(join(dir, 'nope.tsgraph'))).rejects.toMatchObject({ code: 'SOURCE', message: expect.stringContaining('nope.tsgraph') });
  });
});
