// Reductions over dims (sum, prod, amax, amin): one workgroup per output element; its 64
// threads stride over the reduced elements, then a tree reduction in workgroup memory.
// Invariant: the reduced and kept dims come from the attrs (static), their sizes from the
// dims block, so one kernel serves every shape of the same rank.

import { isFloating } from '@kiln/ir-spec';
import { literal, product, storageType, type KernelGen } from './shell.js';

interface Reducer { readonly init: (t: 'f32' | 'i32') => string; readonly combine: (a: string, b: string, t: 'f32' | 'i32') => string }

const NAN_AWARE = (f: 'max' | 'min') => (a: string, b: string, t: 'f32' | 'i32') => (t === 'f32' ? `select(${f}(${a}, ${b}), ${a} + ${b}, ${a} != ${a} || ${b} != ${b})` : `${f}(${a}, ${b})`);

/** The combine rule of every reduction op with WGSL (one entry per op). */
export const REDUCERS: Readonly<Record<string, Reducer>> = {
  sum: { init: (t) => literal(0, t), combine: (a, b) => `${a} + ${b}` },
  prod: { init: (t) => literal(1, t), combine: (a, b) => `${a} * ${b}` },
  amax: { init: (t) => (t === 'f32' ? literal(-Infinity, t) : 'i32(-2147483648)'), combine: NAN_AWARE('max') },
  amin: { init: (t) => (t === 'f32' ? literal(Infinity, t) : 'i32(2147483647)'), combine: NAN_AWARE('min') },
};

/** The reduced dims of `dim` (null: all) over `rank` dims, normalized and sorted. */
export function reducedDims(dim: unknown, rank: number): number[] {
  const list = dim === null || dim === undefined ? Array.from({ length: rank }, (_, i) => i) : Array.isArray(dim) ? dim : [dim];
  return [...new Set(list.map((k) => (Number(k) + rank) % Math.max(rank, 1)))].sort((a, b) => a - b);
}

export const reduceKernel: KernelGen = (sig, d) => {
  const r = REDUCERS[sig.op];
  const x = sig.inputs[0]!;
  const out = sig.outputs[0];
  const t: 'f32' | 'i32' = isFloating(out.dtype) ? 'f32' : 'i32';
  const rank = x.rank;
  const red = new Set(reducedDims(sig.attrs.dim, rank));
  const kept = Array.from({ length: rank }, (_, k) => k).filter((k) => !red.has(k));
  const reduced = [...red];
  const load = (e: string) => (storageType(x.dtype) === t ? e : `${t}(${e})`);
  const lines: string[] = [];
  // Row-major strides of the input, then the base offset of this output element's kept dims.
  lines.push('var base = 0u;', `var rest = wg;`);
  for (let j = kept.length - 1; j >= 0; j--) {
    const k = kept[j];
    const stride = product(Array.from({ length: rank - k - 1 }, (_, q) => d.inDim(0, k + 1 + q)));
    lines.push(`base += (rest % ${d.inDim(0, k)}) * ${stride}; rest = rest / ${d.inDim(0, k)};`);
  }
  lines.push(`let count = ${product(reduced.map((k) => d.inDim(0, k)))};`);
  lines.push(`var acc = ${r.init(t)};`);
  lines.push('for (var e = lid; e < count; e += 64u) {');
  lines.push('  var off = base;', '  var q = e;');
  for (let j = reduced.length - 1; j >= 0; j--) {
    const k = reduced[j];
    const stride = product(Array.from({ length: rank - k - 1 }, (_, q) => d.inDim(0, k + 1 + q)));
    lines.push(`  off += (q % ${d.inDim(0, k)}) * ${stride}; q = q / ${d.inDim(0, k)};`);
  }
  lines.push(`  acc = ${r.combine('acc', load('in0[off]'), t)};`, '}');
  lines.push('partial[lid] = acc;', 'workgroupBarrier();');
  lines.push('for (var s = 32u; s > 0u; s = s >> 1u) {');
  lines.push(`  if (lid < s) { partial[lid] = ${r.combine('partial[lid]', 'partial[lid + s]', t)}; }`);
  lines.push('  workgroupBarrier();', '}');
  lines.push(`if (lid == 0u) { out0[wg] = ${storageType(out.dtype) === t ? 'partial[0]' : `${storageType(out.dtype)}(partial[0])`}; }`);
  return { body: lines.join('\n'), grid: { tile: [], per: 1 }, decls: `var<workgroup> partial: array<${t}, 64>;` };
};
