// What the runtime knows about a WGSL kernel: the record a compiler writes into a `.tsgraph`
// (`kernels` header field) and the rules that turn a concrete dispatch into a key, a uniform
// "meta" block and a workgroup grid. Invariant: a kernel's WGSL is shape-generic — every dim it
// reads comes from the meta block, laid out here and nowhere else — so one kernel serves every
// batch size, and the key depends only on op, input dtypes and ranks, the node's attrs and its
// element body (fused_elementwise), spelled as the pre-region `program` attribute so kernels
// stored in older files keep their keys.

import { bodyToProgram, type Attrs, type Block, type DType } from '@kiln/ir-spec';

/**
 * How many workgroups a dispatch needs, from the first output's concrete shape: the output is
 * cut into work items of `tile` (one entry per leading output dim; missing entries are 1), and
 * each workgroup takes `per` items. Elementwise: no tile, 64 per workgroup; a tiled matmul:
 * tile [1.., 32, 32], one per workgroup; a GEMM-style conv over [N, C, H, W]: merge 2, tile
 * [1, 32, 32] (H·W pixels as one dim).
 */
export interface KernelGrid {
  readonly tile: readonly number[];
  readonly per: number;
  /** When set, output dims from this index on count as one (flattened) dim for tiling. */
  readonly merge?: number;
}

/** One compiled kernel, as stored in a `.tsgraph` header's `kernels` array. */
export interface KernelRecord {
  /** Deterministic key: op, input dtypes/ranks, attrs (see kernelKey). */
  readonly key: string;
  /** Readable name for errors and profiles, e.g. `conv2d_3`. */
  readonly name: string;
  readonly wgsl: string;
  readonly grid: KernelGrid;
  /**
   * An alternative kernel for few output rows (rows = numel(out0) / its last dim), e.g. a
   * matrix-vector kernel for a linear layer at batch 1, used when rows <= maxRows.
   */
  readonly fewRows?: { readonly maxRows: number; readonly wgsl: string; readonly grid: KernelGrid };
  /**
   * An alternative kernel that reads input `input` packed in `layout` (e.g. a conv's weight as
   * Winograd tiles), used when that layout's packer accepts the input's shape. The device computes
   * the packed form (packers.ts), once per pinned constant; the dims block keeps the input's own dims.
   */
  readonly packed?: { readonly input: number; readonly layout: string; readonly wgsl: string; readonly grid: KernelGrid };
}

const DTYPE_CODE: Record<DType, string> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16', int32: 'i32', bool: 'b', int8: 'i8' };

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${k}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'undefined';
}

/**
 * The pipeline-cache key of running `op` on inputs of these dtypes and ranks with `attrs` (and
 * `regions`, a fused_elementwise's element body).
 *
 * @example
 * ```ts
 * kernelKey('add', [{ dtype: 'float32', rank: 2 }, { dtype: 'float32', rank: 1 }], {}); // 'add(f32r2,f32r1){}'
 * ```
 */
export function kernelKey(op: string, inputs: readonly ({ dtype: DType; rank: number } | null)[], attrs: Attrs, regions: readonly Block[] = []): string {
  if (op === 'fused_elementwise' && regions.length === 1) attrs = { ...attrs, program: bodyToProgram(regions[0]) as Attrs[string] };
  const ins = inputs.map((t) => (t ? `${DTYPE_CODE[t.dtype]}r${t.rank}` : '-')).join(',');
  // A `shape` attr (expand, slice_backward) is the output's dims, which kernels read from the
  // dims block: leaving it out keeps the key the same when it holds symbols (['N', 4]) in the
  // graph and numbers at run time. Their count is the output's rank, which the kernel is written
  // for, so it is kept where it differs from the first input's (`->r3`); rank-keeping keys are
  // unchanged from files written before.
  const { shape: dims, ...rest } = attrs;
  const outRank = Array.isArray(dims) && dims.length !== (inputs[0]?.rank ?? dims.length) ? `->r${dims.length}` : '';
  return `${op}(${ins})${outRank}${canonical(rest)}`;
}

/** Whether a header entry is a kernel record this runtime can use. */
export function isKernelRecord(v: unknown): v is KernelRecord {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  const g = r.grid as Record<string, unknown> | null | undefined;
  const gridOk = typeof g === 'object' && g !== null && Number.isInteger(g.per) && (g.per as number) >= 1
    && Array.isArray(g.tile) && g.tile.every((t) => Number.isInteger(t) && t >= 1)
    && (g.merge === undefined || (Number.isInteger(g.merge) && (g.merge as number) >= 0));
  const few = r.fewRows as Record<string, unknown> | undefined;
  const fewOk = few === undefined || (typeof few === 'object' && few !== null && Number.isInteger(few.maxRows) && typeof few.wgsl === 'string'
    && isKernelRecord({ key: '', name: '', wgsl: few.wgsl, grid: few.grid }));
  const packed = r.packed as Record<string, unknown> | undefined;
  const packedOk = packed === undefined || (typeof packed === 'object' && packed !== null && Number.isInteger(packed.input) && (packed.input as number) >= 0
    && typeof packed.layout === 'string' && isKernelRecord({ key: '', name: '', wgsl: packed.wgsl, grid: packed.grid }));
  return typeof r.key === 'string' && typeof r.name === 'string' && typeof r.wgsl === 'string' && gridOk && fewOk && packedOk;
}

/** Total workgroups of a dispatch whose first output has shape `out0`. */
export function gridSize(grid: KernelGrid, out0: readonly number[]): number {
  const dims = grid.merge === undefined || grid.merge >= out0.length ? out0
    : [...out0.slice(0, grid.merge), out0.slice(grid.merge).reduce((a, d) => a * d, 1)];
  return Math.ceil(dims.reduce((a, d, k) => a * Math.ceil(d / (grid.tile[k] ?? 1)), 1) / grid.per);
}

/**
 * The meta block of a dispatch, as u32 words: [total workgroups, then the dims of every
 * present input in order, then the dims of every output]. WGSL reads word i as
 * `meta[i / 4u][i % 4u]` (codegen's `metaLayout` gives each dim's word index).
 */
export function metaWords(total: number, inputs: readonly ({ shape: readonly number[] } | null)[], outputs: readonly { shape: readonly number[] }[]): Uint32Array {
  const words = [total];
  for (const t of inputs) if (t) words.push(...t.shape);
  for (const t of outputs) words.push(...t.shape);
  const out = new Uint32Array(Math.max(4, Math.ceil(words.length / 4) * 4));
  out.set(words);
  return out;
}

/** Splits `total` workgroups into an x·y grid within the per-dimension limit. */
export function splitGrid(total: number, maxPerDim: number): [number, number] {
  if (total <= maxPerDim) return [Math.max(total, 1), 1];
  const y = Math.ceil(total / maxPerDim);
  if (y > maxPerDim) throw new Error(`${total} workgroups exceed the device's ${maxPerDim}×${maxPerDim} grid`);
  return [Math.ceil(total / y), y];
}
