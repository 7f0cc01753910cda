// String sources in Node: a file path or `file:` URL is read from disk, an http(s) URL is
// fetched. Invariant: only the Node entry (index.ts) imports this file; the browser bundle
// must not contain it (tests/runtime-bundle.test.ts checks).

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { RuntimeError } from './errors.js';
import { fetchSource } from './source-browser.js';

/** Reads a `.tsgraph` named by a path, a `file:` URL or an http(s) URL. */
export async function readNodeSource(source: string): Promise<Uint8Array> {
  if (/^https?:\/\//i.test(source)) return fetchSource(source);
  let path = source;
  try {
    if (source.startsWith('file:')) path = fileURLToPath(source);
    const buf = await readFile(path);
    return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  } catch (e) {
    const code = typeof e === 'object' && e !== null && 'code' in e ? String(e.code) : '';
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : e instanceof Error ? e.message : String(e);
    throw new RuntimeError('SOURCE', `cannot read '${path}': ${why}; pass the path of a .tsgraph file (or its bytes)`, undefined, { cause: e });
  }
}
