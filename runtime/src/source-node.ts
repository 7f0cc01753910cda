// String sources in Node: a file path or `file:` URL is read from disk, an http(s) URL is
// fetched. Invariant: only the Node entry (index.ts) imports this file; the browser bundle
// must not contain it (tests/runtime-bundle.test.ts checks).

import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { RuntimeError } from './errors.js';
import { fetchSource } from './source-browser.js';

/**
 * Reads a `.tsgraph` named by a path, a `file:` URL or an http(s) URL. A file is read in one pass
 * into `into(size)` when that gives a buffer (load's kernel-memory block), else into a fresh one.
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
      let at = 0;
      while (at < size) {
        const { bytesRead } = await file.read(out, at, size - at, at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
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
