// Which nodes of a graph a set of WGSL kernel records cannot run. Invariant: a node is covered
// when it is a builtin (run on the host), a view (no kernel), a random op (the WebGPU device draws
// it on the host and uploads the sample), or a registry op whose kernel key
// (runtime/src/webgpu/kernel.ts, the same rule the compiler's codegen and the WebGPU device use)
// is among the records' keys — so `auto` only picks WebGPU for a file it can run to the end.

import { getOp, hasOp, isBuiltin, isViewNode, walkNodes, type DType, type Graph, type Node } from '@kiln/ir-spec';
import { kernelKey } from './webgpu/kernel.js';

function keyOf(node: Node): string {
  const sigs = node.inputs.map((v) => (v && v.type.kind === 'tensor' ? { dtype: v.type.dtype as DType, rank: v.type.shape.length } : null));
  return kernelKey(node.op, sigs, node.attrs, node.regions);
}

/**
 * The nodes (regions included) that have no kernel among `kernels` (a `.tsgraph` header's
 * records), in graph order.
 *
 * @example
 * ```ts
 * const missing = nodesWithoutKernels(graph, header.kernels);
 * if (missing.length) console.log(`CPU only: no WGSL for ${missing.map((n) => n.op).join(', ')}`);
 * ```
 */
export function nodesWithoutKernels(graph: Graph, kernels: readonly unknown[]): Node[] {
  const keys = new Set(kernels.map((k) => (k !== null && typeof k === 'object' ? (k as { key?: unknown }).key : undefined)));
  const missing: Node[] = [];
  for (const node of walkNodes(graph.body)) {
    if (isBuiltin(node.op) || isViewNode(node.op, node.attrs) || (hasOp(node.op) && getOp(node.op).random)) continue;
    if (!keys.has(keyOf(node))) missing.push(node);
  }
  return missing;
}
