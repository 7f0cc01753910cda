// How many storage buffers a node's kernel or a stored kernel binds, against the limit of the
// adapter that runs it (`maxStorageBuffersPerShaderStage`, 8 by default in WebGPU). Invariant:
// the count is the one the kernel shell declares — one `var<storage …>` per present tensor input
// and per output — so a file is explained before a pipeline fails with a driver message.

import type { Node } from '@kiln/ir-spec';
import type { KernelRecord } from './kernel.js';

/** WebGPU's default (guaranteed) `maxStorageBuffersPerShaderStage`. */
export const DEFAULT_MAX_STORAGE_BUFFERS = 8;

const tensorCount = (vs: readonly (Node['inputs'][number])[]) => vs.filter((v) => v && v.type.kind === 'tensor').length;

/** Storage buffers a kernel for `node` binds: its tensor inputs and its tensor outputs. */
export function nodeStorageBuffers(node: Node): number {
  return tensorCount(node.inputs) + tensorCount(node.outputs);
}

/** Storage buffers a stored kernel binds (its main, few-rows and packed variants, whichever is most). */
export function kernelStorageBuffers(r: Pick<KernelRecord, 'wgsl' | 'fewRows' | 'packed'>): number {
  const count = (wgsl: string) => (wgsl.match(/\bvar\s*<\s*storage\b/g) ?? []).length;
  return Math.max(count(r.wgsl), r.fewRows ? count(r.fewRows.wgsl) : 0, r.packed ? count(r.packed.wgsl) : 0);
}

/** Why `node` has no kernel a WebGPU device with `limit` storage buffers could run, if bindings are why. */
export function nodeBindingProblem(node: Node, limit = DEFAULT_MAX_STORAGE_BUFFERS): string | undefined {
  const n = nodeStorageBuffers(node);
  if (n <= limit) return undefined;
  return `${node.op} reads ${tensorCount(node.inputs)} tensors and writes ${tensorCount(node.outputs)}, so its kernel would bind ${n} storage buffers, over WebGPU's limit of ${limit} per shader stage (maxStorageBuffersPerShaderStage)`;
}
