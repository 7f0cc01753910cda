// String sources in Node: a file path or `file:` URL is read from disk, an http(s) URL is
// fetched. Invariant: only the Node entry (index.ts) imports this file; the browser bundle
// must not contain it (tests/runtime-bundle.test.ts checks).

import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { RuntimeError } from './errors.js';
import { fetchSource } from './source-browser.js';

/** A file is read as up to READ_THREADS parts at once (libuv's default pool has 4 threads), none under PART_MIN_BYTES. */
const READ_THREADS = 4, PART_MIN_BYTES = 8 << 20, PAGE_BYTES = 4096;

/**
 * Reads a `.tsgraph` named by a path, a `file:` URL or an http(s) URL. A file is read in one pass
 * (a big one as parts read at once) into `into(size)` when that gives a buffer (load's
 * kernel-memory block), else into a fresh one.
 */
export async function readNodeSource(source: string, into?: (size: number) => Uint8Array | undefined): Promise<Uint8Array> {
  if (/^https?:\/\//i.test(source)) return fetchSource(source);
  let path = source;
  try {
    if (source.startsWith('file:')) path = fileURLToPath(source);
    const file = await open(path, 'r');
    try {
      const size = (await file.stat()).size;
      const out = into?.(size) ?? new Uint8Array(size);
      // Parts read at once run on libuv's thread pool: the fresh pages they fill fault in on
      // several cores (most of a big file's read time is those faults, not the copy).
      const parts = Math.max(1, Math.min(READ_THREADS, Math.floor(size / PART_MIN_BYTES)));
      const ends = Array.from({ length: parts + 1 }, (_, i) => (i === parts ? size : Math.floor((size * i) / parts / PAGE_BYTES) * PAGE_BYTES));
      const got = await Promise.all(ends.slice(0, parts).map(async (from, i) => {
        let at = from;
        while (at < ends[i + 1]) {
          const { bytesRead } = await file.read(out, at, ends[i + 1] - at, at);
          if (bytesRead === 0) break;
          at += bytesRead;
        }
        return at - from;
      }));
      const at = got.reduce((a, b) => a + b, 0);
      if (at !== size) throw new RuntimeError('SOURCE', `cannot read '${path}': it shrank from ${size} to ${at} bytes while being read (is another program writing it?); read it again when it is complete`);
      return out;
    } finally {
      await file.close();
    }
  } catch (e) {
    if (e instanceof RuntimeError) throw e;
    const code = typeof e === 'object' && e !== null && 'code' in e ? String(e.code) : '';
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : e instanceof Error ? e.message : String(e);
    throw new RuntimeError('SOURCE', `cannot read '${path}': ${why}; pass the path of a .tsgraph file (or its bytes)`, undefined, { cause: e });
  }
}
