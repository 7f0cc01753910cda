// The one kernel shell every WGSL kernel shares: bindings (0: the uniform dims block, then one
// storage buffer per present input, then one per output), the workgroup prologue that folds a
// 2-D grid back into a linear workgroup index, and the dims-block word of every tensor dim.
// Invariant: the dims layout here is the one runtime/src/webgpu/kernel.ts `metaWords` fills
// (word 0 the workgroup count, then present inputs' dims, then outputs' dims), and the text is a
// pure function of the signature, so the same graph always gives the same bytes.

import { isFloating, type Block, type DType } from '@kiln/ir-spec';
import type { KernelGrid } from '@kiln/runtime';

export interface TensorSig { readonly dtype: DType; readonly rank: number }

/** What a kernel generator sees: the op, its input/output dtypes and ranks, parsed attrs. */
export interface KernelSig {
  readonly op: string;
  readonly inputs: readonly (TensorSig | null)[];
  readonly outputs: readonly TensorSig[];
  readonly attrs: Readonly<Record<string, unknown>>;
  /** The node's element body (fused_elementwise), else empty or absent. */
  readonly regions?: readonly Block[];
}

/** A generator's result: the body of `main` (after the prologue) and its grid. */
export interface KernelBody {
  readonly body: string;
  readonly grid: KernelGrid;
  /** Threads per workgroup (default 64). */
  readonly threads?: number;
  /** Module-scope declarations (helpers, workgroup arrays). */
  readonly decls?: string;
  /**
   * A faster kernel that reads input `input` packed in `layout` (runtime/src/webgpu/packers.ts):
   * the device runs it when its packer accepts that input's shape, else this kernel.
   */
  readonly packed?: { readonly input: number; readonly layout: string; readonly kernel: KernelBody };
}

export type KernelGen = (sig: KernelSig, d: DimsLayout) => KernelBody;

/**
 * The WGSL element type a tensor is stored as (bool as one u32 per element; float16/bfloat16
 * values widened to f32, as every device holds them: ir-spec/src/dtype.ts).
 */
export function storageType(dtype: DType): 'f32' | 'i32' | 'u32' {
  return isFloating(dtype) ? 'f32' : dtype === 'int32' ? 'i32' : 'u32';
}

/** WGSL expressions of each tensor dim's word in the dims block. */
export class DimsLayout {
  private readonly inStart: (number | null)[] = [];
  private readonly outStart: number[] = [];
  readonly words: number;

  constructor(sig: KernelSig) {
    let w = 1;
    for (const t of sig.inputs) {
      this.inStart.push(t ? w : null);
      if (t) w += t.rank;
    }
    for (const t of sig.outputs) { this.outStart.push(w); w += t.rank; }
    this.words = w;
  }

  private word(i: number): string { return `dims.w[${Math.floor(i / 4)}].${'xyzw'[i % 4]}`; }

  /** Dim k of input j (a u32 expression). */
  inDim(j: number, k: number): string {
    const s = this.inStart[j];
    if (s === null || s === undefined) throw new Error(`input ${j} is absent`);
    return this.word(s + k);
  }

  /** Dim k of output j. */
  outDim(j: number, k: number): string { return this.word(this.outStart[j] + k); }
}

/** `a * b * c` of u32 expressions (`1u` for none). */
export function product(xs: readonly string[]): string {
  return xs.length ? xs.map((x) => `(${x})`).join(' * ') : '1u';
}

/** Assembles the complete shader text of one kernel. */
export function assemble(name: string, key: string, sig: KernelSig, k: KernelBody): string {
  const d = new DimsLayout(sig);
  const lines: string[] = [`// kernel ${name}: ${key}`];
  lines.push(`struct Dims { w: array<vec4<u32>, ${Math.max(1, Math.ceil(d.words / 4))}> }`);
  lines.push('@group(0) @binding(0) var<uniform> dims: Dims;');
  let b = 1;
  sig.inputs.forEach((t, j) => {
    if (t) lines.push(`@group(0) @binding(${b++}) var<storage, read> in${j}: array<${storageType(t.dtype)}>;`);
  });
  sig.outputs.forEach((t, j) => lines.push(`@group(0) @binding(${b++}) var<storage, read_write> out${j}: array<${storageType(t.dtype)}>;`));
  if (k.decls) lines.push(k.decls.trimEnd());
  const threads = k.threads ?? 64;
  lines.push(`@compute @workgroup_size(${threads})`);
  lines.push('fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {');
  lines.push('  let wg = wid.x + wid.y * nwg.x;');
  lines.push('  if (wg >= dims.w[0].x) { return; }');
  for (const l of k.body.trimEnd().split('\n')) lines.push(l.length ? `  ${l}` : '');
  lines.push('}');
  return lines.join('\n') + '\n';
}

/** Storage buffers a kernel binds (inputs present plus outputs). */
export function storageBindings(sig: KernelSig): number {
  return sig.inputs.filter((t) => t).length + sig.outputs.length;
}

/** A WGSL literal of `v` in type `t`. */
export function literal(v: number, t: 'f32' | 'i32' | 'u32'): string {
  if (t === 'f32') {
    // WGSL constant expressions cannot be NaN or infinite: OR in a zero read from the dims block.
    if (Number.isNaN(v)) return 'bitcast<f32>(0x7fc00000u | (dims.w[0].x & 0u))';
    if (!Number.isFinite(v)) return `bitcast<f32>(${v > 0 ? '0x7f800000u' : '0xff800000u'} | (dims.w[0].x & 0u))`;
    const s = String(Math.fround(v));
    return `f32(${/[.e]/.test(s) ? s : `${s}.0`})`;
  }
  return t === 'i32' ? `i32(${Math.trunc(v)})` : `${Math.trunc(v)}u`;
}

/**
 * Lines that split the linear index `idx` over `rank` dims (given by `dim(k)`) into `o0..`
 * (row-major), each a `let` named `${prefix}${k}`.
 */
export function unflatten(idx: string, rank: number, dim: (k: number) => string, prefix = 'o'): string {
  if (rank === 0) return '';
  const lines = [`var r_${prefix} = ${idx};`];
  for (let k = rank - 1; k >= 0; k--) {
    if (k === 0) lines.push(`let ${prefix}0 = r_${prefix};`);
    else lines.push(`let ${prefix}${k} = r_${prefix} % ${dim(k)}; r_${prefix} = r_${prefix} / ${dim(k)};`);
  }
  return lines.join('\n');
}

/**
 * Lines computing `name`, the offset into input `j` (rank `rank`) of the output position
 * `o0..o{outRank-1}` under broadcasting (dims aligned right; a dim of 1 repeats).
 */
export function broadcastOffset(name: string, d: DimsLayout, j: number, rank: number, outRank: number, prefix = 'o'): string {
  if (rank === 0) return `let ${name} = 0u;`;
  const lines = [`var ${name} = 0u;`, `var s_${name} = 1u;`];
  for (let k = rank - 1; k >= 0; k--) {
    const ok = outRank - rank + k;
    const dim = d.inDim(j, k);
    lines.push(`${name} += select(${prefix}${ok}, 0u, ${dim} == 1u) * s_${name};`);
    if (k > 0) lines.push(`s_${name} *= ${dim};`);
  }
  return lines.join('\n');
}
