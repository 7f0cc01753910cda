// What every `.tsgraph` this package saves holds besides the graph: the producer, and the WGSL
// kernels of every node the compiler's codegen covers, so the same file runs on the CPU and on
// WebGPU. Invariant: deterministic — the same graph gives byte-identical files.

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
  return encodeTsgraph(graph, { producer: KILN_PRODUCER, kernels: opts.kernels ?? generateWgsl(graph, { maxStorageBuffers: opts.maxStorageBuffers }).kernels });
}
