// What every `.tsgraph` this package saves holds besides the graph: the producer, and the WGSL
// kernels of every node the compiler's codegen covers, so the same file runs on the CPU and on
// WebGPU. Invariant: deterministic — the same graph gives byte-identical files, wherever it was
// built: source paths (node locations, the `source` metadata) are stored relative to the working
// directory, so one model compiled in two checkouts gives the same bytes.

import { generateWgsl } from '@kiln/compiler';
import { encodeTsgraph, type Graph } from '@kiln/ir-spec';
import type { KernelRecord } from '@kiln/runtime';

/** Who wrote a .tsgraph file: the `producer` field of every file this package saves. */
export const KILN_PRODUCER = { name: 'kiln', version: '0.1.0' };

export interface SaveOptions {
  /**
   * The WGSL kernels to store (default: `jit.generateWgsl(graph).kernels`); `[]` saves a
   * CPU-only file. The runtime's `auto` backend uses WebGPU only when they cover every node.
   */
  readonly kernels?: readonly KernelRecord[];
  /** Storage buffers a generated kernel may bind (default 8, WebGPU's default limit); match the
   * `maxStorageBuffers` the graph was optimized for. */
  readonly maxStorageBuffers?: number;
}

/** The `.tsgraph` bytes of `graph` with its WGSL kernels. */
export function graphBytes(graph: Graph, opts: SaveOptions = {}): Uint8Array {
  return encodeTsgraph(graph, { producer: KILN_PRODUCER, kernels: opts.kernels ?? generateWgsl(graph, { maxStorageBuffers: opts.maxStorageBuffers }).kernels, location: relativeLocation });
}

/**
 * `loc` (`/abs/model.ts:3:7`, `file:///abs/model.ts:3:7` or `/abs/model.ts`) with the path made
 * relative to the working directory (`model.ts:3:7`, POSIX separators); other text unchanged.
 */
export function relativeLocation(loc: string): string {
  const cwd = (globalThis as { process?: { cwd?: () => string } }).process?.cwd?.();
  if (!cwd) return loc;
  const m = /^(?:file:\/\/)?((?:\/|[A-Za-z]:[\\/]).*?)((?::\d+){0,2})$/.exec(loc);
  if (!m) return loc;
  return relativePath(cwd, m[1]) + m[2];
}

/** POSIX-style relative path from directory `from` to `to` (both absolute); no node:path, so it bundles for browsers. */
function relativePath(from: string, to: string): string {
  const split = (p: string) => p.replace(/\\/g, '/').split('/').filter((s) => s !== '');
  const a = split(from), b = split(to);
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return [...a.slice(i).map(() => '..'), ...b.slice(i)].join('/') || '.';
}
