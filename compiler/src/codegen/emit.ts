// Graph → WGSL kernel records: one compute shader per kernel node (-O0: one per op), deduplicated
// by key. Invariant: deterministic — records come in the order of each key's first node in a
// depth-first walk, named `${op}_${n}`, and each WGSL text is a pure function of its key, so the
// same graph always gives byte-identical kernels (and `.tsgraph` bytes).

import { getOp, hasOp, isBuiltin, isViewOp, walkNodes, type Block, type DType, type Graph, type Node, type Attrs } from '@kiln/ir-spec';
import { kernelKey, type KernelRecord } from '@kiln/runtime';
import { assemble, DimsLayout, storageBindings, type KernelSig, type TensorSig } from './shell.js';
import { FEW_ROWS_KERNELS, KERNELS } from './table.js';

export interface CodegenOptions {
  /** Storage buffers a kernel may bind (default 8, the WebGPU guaranteed minimum). */
  readonly maxStorageBuffers?: number;
}

/** A node codegen could not give a kernel, and why (it then runs only on the CPU backend). */
export interface Unsupported { readonly op: string; readonly reason: string }

export interface CodegenResult {
  readonly kernels: KernelRecord[];
  readonly unsupported: Unsupported[];
}

function tensorSig(t: Node['outputs'][number]['type'] | undefined): TensorSig | null {
  if (!t || t.kind !== 'tensor') return null;
  return { dtype: t.dtype as DType, rank: t.shape.length };
}

/**
 * One kernel record for a node's signature (and its element body, `regions`, for a
 * fused_elementwise), or the reason there is none.
 *
 * @example
 * ```ts
 * const r = kernelFor('relu', [{ dtype: 'float32', rank: 2 }], [{ dtype: 'float32', rank: 2 }], {});
 * ```
 */
export function kernelFor(op: string, inputs: readonly (TensorSig | null)[], outputs: readonly TensorSig[], rawAttrs: Attrs, name = op, opts: CodegenOptions = {}, regions: readonly Block[] = []): KernelRecord | Unsupported {
  const gen = KERNELS[op];
  if (!gen) return { op, reason: isViewOp(op) ? 'a view (no kernel needed)' : `op '${op}' has no WGSL kernel yet` };
  let attrs: Record<string, unknown>;
  try {
    attrs = getOp(op).attrs.parse(rawAttrs) as Record<string, unknown>;
  } catch (e) {
    return { op, reason: `attrs ${JSON.stringify(rawAttrs)} are not concrete (${e instanceof Error ? e.message.split('\n')[0] : String(e)})` };
  }
  const sig: KernelSig = { op, inputs, outputs, attrs, regions };
  if (attrs.layout !== undefined) {
    return { op, reason: `weight layout '${String(attrs.layout)}' (hi/lo Winograd weights) comes only from files written before issue 14, which run with the kernels stored in them; compile the model again for new kernels: files now keep OIHW weights and the WebGPU device packs them at load` };
  }
  const limit = opts.maxStorageBuffers ?? 8;
  if (storageBindings(sig) > limit) return { op, reason: `needs ${storageBindings(sig)} storage buffers, over the limit of ${limit}` };
  const key = kernelKey(op, inputs, rawAttrs, regions);
  const body = gen(sig, new DimsLayout(sig));
  const p = body.packed;
  const packed = p ? { packed: { input: p.input, layout: p.layout, wgsl: assemble(`${name}.${p.layout}`, key, sig, p.kernel), grid: p.kernel.grid } } : {};
  const few = FEW_ROWS_KERNELS[op];
  if (!few) return { key, name, wgsl: assemble(name, key, sig, body), grid: body.grid, ...packed };
  const alt = few.gen(sig, new DimsLayout(sig));
  return { key, name, wgsl: assemble(name, key, sig, body), grid: body.grid, fewRows: { maxRows: few.maxRows, wgsl: assemble(`${name}.few_rows`, key, sig, alt), grid: alt.grid }, ...packed };
}

/**
 * The WGSL kernels of every registry-op node of `graph` (regions included); store them in the
 * `.tsgraph` (`encodeTsgraph(graph, { kernels })`) or hand them to `createWebGpuDevice`.
 *
 * @example
 * ```ts
 * const { kernels } = generateWgsl(traced.graph);
 * const device = await createWebGpuDevice({ kernels });
 * const [y] = await createModel(traced.graph, { device }).run([x]);
 * ```
 */
export function generateWgsl(graph: Graph, opts: CodegenOptions = {}): CodegenResult {
  const kernels: KernelRecord[] = [];
  const unsupported: Unsupported[] = [];
  const seen = new Set<string>();
  for (const node of walkNodes(graph.body)) {
    if (isBuiltin(node.op) || !hasOp(node.op) || isViewOp(node.op)) continue;
    const inputs = node.inputs.map((v) => (v ? tensorSig(v.type) : null));
    const outputs = node.outputs.map((v) => tensorSig(v.type));
    if (outputs.some((o) => !o)) { unsupported.push({ op: node.op, reason: 'a non-tensor result' }); continue; }
    const key = kernelKey(node.op, inputs, node.attrs, node.regions);
    if (seen.has(key)) continue;
    seen.add(key);
    const r = kernelFor(node.op, inputs, outputs as TensorSig[], node.attrs, `${node.op}_${kernels.length}`, opts, node.regions);
    if ('key' in r) kernels.push(r);
    else unsupported.push(r);
  }
  // STYLE.md principle 14: KILN_DEBUG=wgsl dumps every kernel (stderr).
  const debug = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.KILN_DEBUG ?? '';
  if (debug.split(',').includes('wgsl')) for (const k of kernels) console.error(`// ---- ${k.name} grid ${JSON.stringify(k.grid)}\n${k.wgsl}`);
  return { kernels, unsupported };
}
