// Load-time check of the WGSL kernels a `.tsgraph` stores (issue 17). Trust model: a stored
// kernel is compiled as it is, and WebGPU's robust buffer access confines whatever it does to
// the buffers bound to it; what this check adds is that those bindings are the ones the runtime
// binds for the node the kernel serves. Invariant: an accepted kernel declares, in group 0 only,
// binding 0 as the `var<uniform>` dims block, then one `var<storage, read>` per present tensor
// input and one `var<storage, read_write>` per output, numbered 1.. without gaps, exactly as
// the compiler's kernel shell writes them — so a kernel can neither see another node's buffers
// nor write its inputs, and a mismatch is a GRAPH RuntimeError at load, not a driver error later.
// The one exception: group 1 binding 0 may be the runtime's own 8-byte index-error buffer
// (index-errors.ts), declared exactly as INDEX_ERROR_DECL.

import { walkNodes, type DType, type Graph, type Node } from '@kiln/ir-spec';
import { RuntimeError } from '../errors.js';
import { isKernelRecord, kernelKey } from './kernel.js';
import { checksIndices, INDEX_ERROR_DECL } from './index-errors.js';

interface Binding { readonly group: number; readonly binding: number; readonly space: string; readonly access: string }

const DECL = /@group\s*\(\s*(\d+)\s*\)\s*@binding\s*\(\s*(\d+)\s*\)\s*var\s*<\s*(\w+)\s*(?:,\s*(\w+)\s*)?>/g;

/** The resource declarations of a shader, comments removed; null when one is not in the form the check reads. */
function bindings(wgsl: string): Binding[] | null {
  const text = wgsl.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
  const out: Binding[] = [];
  for (const m of text.matchAll(DECL)) out.push({ group: Number(m[1]), binding: Number(m[2]), space: m[3], access: m[4] ?? '' });
  const attrs = (text.match(/@binding\b/g) ?? []).length + (text.match(/@group\b/g) ?? []).length;
  return attrs === 2 * out.length ? out : null;
}

/** Why `wgsl` does not bind what the runtime binds for `reads` inputs and `writes` outputs; undefined when it does. */
function bindingProblem(wgsl: string, reads: number | null, writes: number | null): string | undefined {
  const all = bindings(wgsl);
  if (!all) return 'declares a binding in a form other than `@group(0) @binding(k) var<…>`';
  // Group 1 holds only the runtime's index-error buffer (index-errors.ts), declared exactly so.
  const errorBindings = all.filter((b) => b.group === 1);
  if (errorBindings.length && (errorBindings.length > 1 || !checksIndices(wgsl) || errorBindings[0].binding !== 0 || errorBindings[0].access !== 'read_write')) {
    return `declares a binding in group 1 other than the index-error buffer the runtime binds there (\`${INDEX_ERROR_DECL}\`)`;
  }
  const bs = all.filter((b) => b.group !== 1);
  const sorted = [...bs].sort((a, b) => a.binding - b.binding);
  for (const [k, b] of sorted.entries()) {
    if (b.group !== 0) return `declares a binding in group ${b.group}; the runtime binds group 0 (and group 1 for its index-error buffer) only`;
    if (b.binding !== k) return `declares bindings ${sorted.map((x) => x.binding).join(', ')}; the runtime binds 0, 1, 2, … without gaps`;
  }
  if (sorted[0]?.space !== 'uniform') return 'does not declare binding 0 as the var<uniform> dims block';
  const storage = sorted.slice(1);
  if (storage.some((b) => b.space !== 'storage')) return 'declares a binding other than binding 0 outside var<storage>';
  if (reads === null || writes === null) {
    if (!storage.length || storage[storage.length - 1].access !== 'read_write') return 'writes no output (its last binding is not var<storage, read_write>)';
    return undefined;
  }
  if (storage.length !== reads + writes) return `binds ${storage.length} storage buffers, but its node reads ${reads} tensors and writes ${writes}`;
  const bad = storage.findIndex((b, k) => b.access !== (k < reads ? 'read' : 'read_write'));
  if (bad >= 0) return `binding ${bad + 1} is var<storage, ${storage[bad].access || 'read'}>, but the runtime binds ${bad < reads ? `input ${bad} there (read)` : `output ${bad - reads} there (read_write)`}`;
  return undefined;
}

const tensors = (vs: readonly (Node['inputs'][number])[]) => vs.filter((v) => v && v.type.kind === 'tensor').length;

/**
 * Checks every stored kernel record against the graph nodes it serves (matched by kernel key).
 * Records no node uses are held to the general form only. Throws a GRAPH RuntimeError naming
 * the kernel and what is wrong.
 */
export function checkKernelBindings(graph: Graph, records: readonly unknown[]): void {
  // Keys are made only for nodes of ops some record serves (a key starts with `op(`): a file
  // without kernels, or with a few, costs no key per node of a large graph.
  const ops = new Set<string>();
  for (const r of records) if (isKernelRecord(r)) ops.add(r.key.slice(0, Math.max(0, r.key.indexOf('('))));
  const nodeOf = new Map<string, Node>();
  if (!ops.size) return;
  for (const node of walkNodes(graph.body)) {
    if (!ops.has(node.op)) continue;
    const sigs = node.inputs.map((v) => (v && v.type.kind === 'tensor' ? { dtype: v.type.dtype as DType, rank: v.type.shape.length } : null));
    nodeOf.set(kernelKey(node.op, sigs, node.attrs, node.regions), node);
  }
  records.forEach((r, i) => {
    if (!isKernelRecord(r)) return; // the device refuses malformed records when it compiles them
    const node = nodeOf.get(r.key);
    const reads = node ? tensors(node.inputs) : null, writes = node ? tensors(node.outputs) : null;
    for (const [what, wgsl] of [['', r.wgsl], [' (few-rows variant)', r.fewRows?.wgsl]] as const) {
      if (wgsl === undefined) continue;
      const why = bindingProblem(wgsl, reads, writes);
      if (why) {
        throw new RuntimeError('GRAPH', `kernels[${i}] '${r.name}'${what} (key ${r.key}) ${why}; the file's WGSL does not match its graph: compile and save the model again, or load it with { backend: 'cpu' }`);
      }
    }
  });
}
