// Reading a .tsgraph for the inspection commands. Invariant: the file is decoded by ir-spec's
// checked decoder only (nothing in it runs); a refusal is the decoder's TsgraphError (exit 1).

import { readFileSync } from 'node:fs';
import { decodeTsgraph, readTsgraphHeader, type DecodedTsgraph, type TsgraphLayout } from '@kiln/ir-spec';
import { UserError } from './errors.js';

export interface GraphFile extends DecodedTsgraph {
  readonly path: string;
  readonly bytes: number;
  readonly layout: TsgraphLayout;
}

/** Reads and fully checks `path`; the TsgraphError is prefixed with the path. */
export function readGraphFile(path: string): GraphFile {
  let bytes: Uint8Array;
  try {
    const b = readFileSync(path);
    bytes = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  } catch (e) {
    throw new UserError(`cannot read ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    const layout = readTsgraphHeader(bytes);
    return { ...decodeTsgraph(bytes), path, bytes: bytes.length, layout };
  } catch (e) {
    if (e instanceof Error && e.name === 'TsgraphError') throw new UserError(`${path}: ${e.message}`, { cause: e });
    throw e;
  }
}
