// Data-movement ops as "gather" kernels: one thread per output element computes where its value
// comes from (expand, permute, slice, flip, tril/triu, index_select, gather, cat), plus the
// per-row ops argmax/argmin and cumsum. Invariant: every source offset is built from the output
// multi-index o0.. and the input's row-major strides, with sizes read from the dims block; an
// index tensor's value outside [0, size) is reported through the runtime's index-error buffer
// (a GPU kernel cannot raise: the device throws the CPU's error at the next read) and clamped
// into range so that the read stays inside the input.

import { isFloating } from '@kiln/ir-spec';
import { INDEX_ERROR_DECL } from '@kiln/runtime';
import { broadcastOffset, product, storageType, unflatten, type DimsLayout, type KernelGen, type KernelSig } from './shell.js';
import { reducedDims } from './reduce.js';

const norm = (dim: number, rank: number) => ((dim % Math.max(rank, 1)) + Math.max(rank, 1)) % Math.max(rank, 1);

/** Row-major stride of dim k of input j (rank `rank`). */
function stride(d: DimsLayout, j: number, rank: number, k: number): string {
  return product(Array.from({ length: rank - k - 1 }, (_, q) => d.inDim(j, k + 1 + q)));
}

/** The shell of a gather kernel: `offset` lines compute `src` from o0..; `value` is stored (null: the lines store it). */
function gather(sig: KernelSig, d: DimsLayout, offset: string[], value: string | null = 'in0[src]'): ReturnType<KernelGen> {
  const R = sig.outputs[0].rank;
  const lines = [
    'let i = wg * 64u + lid;',
    `if (i >= ${product(Array.from({ length: R }, (_, k) => d.outDim(0, k)))}) { return; }`,
    unflatten('i', R, (k) => d.outDim(0, k)),
    ...offset,
    value === null ? '' : `out0[i] = ${value};`,
  ];
  return { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 } };
}

/** The line reporting the i32 index `raw` through the index-error buffer when it is outside [0, size). */
export function reportBadIndex(raw: string, size: string): string {
  return `if (${raw} < 0 || ${raw} >= i32(${size})) { if (atomicAdd(&index_error[0], 1u) == 0u) { atomicStore(&index_error[1], bitcast<u32>(${raw})); } }`;
}

/** Lines reading the i32 index `e` as `name`: reported when out of range, then clamped into [0, size). */
function indexInto(name: string, e: string, size: string): string {
  return `let ${name}_raw = ${e}; ${reportBadIndex(`${name}_raw`, size)}\nlet ${name} = u32(clamp(${name}_raw, 0, i32(${size}) - 1));`;
}

/** An index kernel: the gather shell plus the index-error binding. */
function indexKernel(body: ReturnType<KernelGen>): ReturnType<KernelGen> {
  return { ...body, decls: body.decls ? `${INDEX_ERROR_DECL}\n${body.decls}` : INDEX_ERROR_DECL };
}

export const expandKernel: KernelGen = (sig, d) => gather(sig, d, [broadcastOffset('src', d, 0, sig.inputs[0]!.rank, sig.outputs[0].rank)]);

export const permuteKernel: KernelGen = (sig, d) => {
  const r = sig.inputs[0]!.rank;
  const dims = (sig.attrs.dims as number[]).map((k) => norm(k, r));
  return gather(sig, d, ['var src = 0u;', ...dims.map((k, i) => `src += o${i} * ${stride(d, 0, r, k)};`)]);
};

export const flipKernel: KernelGen = (sig, d) => {
  const r = sig.inputs[0]!.rank;
  const flipped = new Set((sig.attrs.dims as number[]).map((k) => norm(k, r)));
  return gather(sig, d, ['var src = 0u;', ...Array.from({ length: r }, (_, k) => (flipped.has(k)
    ? `src += (${d.inDim(0, k)} - 1u - o${k}) * ${stride(d, 0, r, k)};`
    : `src += o${k} * ${stride(d, 0, r, k)};`))]);
};

export const sliceKernel: KernelGen = (sig, d) => {
  const r = sig.inputs[0]!.rank;
  const dim = norm(Number(sig.attrs.dim ?? 0), r);
  const step = Number(sig.attrs.step ?? 1);
  const start = sig.attrs.start;
  // Python bounds: a negative start counts from the end; clamped into [0, size].
  const s = typeof start === 'number' ? `u32(clamp(select(${start}, ${start} + i32(${d.inDim(0, dim)}), ${start} < 0), 0, i32(${d.inDim(0, dim)})))` : '0u';
  return gather(sig, d, [`let first = ${s};`, 'var src = 0u;', ...Array.from({ length: r }, (_, k) => (k === dim
    ? `src += (first + o${k} * ${step}u) * ${stride(d, 0, r, k)};`
    : `src += o${k} * ${stride(d, 0, r, k)};`))]);
};

export const triangleKernel: KernelGen = (sig, d) => {
  const r = sig.inputs[0]!.rank;
  const diag = Number(sig.attrs.diagonal ?? 0);
  const keep = sig.op === 'tril' ? `i32(o${r - 1}) - i32(o${r - 2}) <= ${diag}` : `i32(o${r - 1}) - i32(o${r - 2}) >= ${diag}`;
  return gather(sig, d, [], `select(${storageType(sig.outputs[0].dtype)}(0), in0[i], ${keep})`);
};

export const indexSelectKernel: KernelGen = (sig, d) => {
  const r = sig.inputs[0]!.rank;
  const dim = norm(Number(sig.attrs.dim ?? 0), r);
  return indexKernel(gather(sig, d, [indexInto('at', `in1[o${dim}]`, d.inDim(0, dim)), 'var src = 0u;',
    ...Array.from({ length: r }, (_, k) => `src += ${k === dim ? 'at' : `o${k}`} * ${stride(d, 0, r, k)};`)]));
};

export const gatherKernel: KernelGen = (sig, d) => {
  const r = sig.inputs[0]!.rank;
  const dim = norm(Number(sig.attrs.dim ?? 0), r);
  return indexKernel(gather(sig, d, [indexInto('at', 'in1[i]', d.inDim(0, dim)), 'var src = 0u;',
    ...Array.from({ length: r }, (_, k) => `src += ${k === dim ? 'at' : `o${k}`} * ${stride(d, 0, r, k)};`)]));
};

export const catKernel: KernelGen = (sig, d) => {
  const R = sig.outputs[0].rank;
  const dim = norm(Number(sig.attrs.dim ?? 0), R);
  const st = storageType(sig.outputs[0].dtype);
  const lines = ['var at = o' + dim + ';'];
  const value = (j: number) => {
    const t = sig.inputs[j]!;
    const off = Array.from({ length: R }, (_, k) => `${k === dim ? 'at' : `o${k}`} * ${stride(d, j, R, k)}`).join(' + ');
    const v = `in${j}[${off || '0u'}]`;
    return storageType(t.dtype) === st ? v : `${st}(${v})`;
  };
  // Walk the inputs in order, subtracting each one's extent along dim until `at` falls inside.
  sig.inputs.forEach((_, j) => {
    const last = j === sig.inputs.length - 1;
    lines.push(last ? `out0[i] = ${value(j)}; return;` : `if (at < ${d.inDim(j, dim)}) { out0[i] = ${value(j)}; return; }`);
    if (!last) lines.push(`at -= ${d.inDim(j, dim)};`);
  });
  return gather(sig, d, lines, null);
};

/** slice_backward: zeros of the output shape with g at the positions slice() reads. */
export const sliceBackwardKernel: KernelGen = (sig, d) => {
  const R = sig.outputs[0].rank;
  const dim = norm(Number(sig.attrs.dim ?? 0), R);
  const step = Number(sig.attrs.step ?? 1);
  const start = sig.attrs.start;
  const size = d.outDim(0, dim);
  const s = typeof start === 'number' ? `clamp(select(${start}, ${start} + i32(${size}), ${start} < 0), 0, i32(${size}))` : '0';
  const st = storageType(sig.outputs[0].dtype);
  return gather(sig, d, [
    `let rel = i32(o${dim}) - ${s};`,
    `if (rel < 0 || rel % ${step} != 0 || u32(rel / ${step}) >= ${d.inDim(0, dim)}) { out0[i] = ${st}(0); return; }`,
    'var src = 0u;',
    ...Array.from({ length: R }, (_, k) => `src += ${k === dim ? `u32(rel / ${step})` : `o${k}`} * ${stride(d, 0, R, k)};`),
  ]);
};

/** argmax/argmin along dim (null: the flattened tensor): one thread per output, first extreme wins, NaN wins. */
export const argKernel: KernelGen = (sig, d) => {
  const x = sig.inputs[0]!;
  const r = x.rank;
  const dim = sig.attrs.dim;
  const cmp = sig.op === 'argmax' ? '>' : '<';
  const lines: string[] = ['let i = wg * 64u + lid;'];
  if (dim === null || dim === undefined) {
    lines.push('if (i >= 1u) { return; }', `let size = ${product(Array.from({ length: r }, (_, k) => d.inDim(0, k)))};`, 'let base = 0u; let inner = 1u;');
  } else {
    const k = reducedDims(dim, r)[0];
    const outer = product(Array.from({ length: k }, (_, q) => d.inDim(0, q)));
    const inner = product(Array.from({ length: r - k - 1 }, (_, q) => d.inDim(0, k + 1 + q)));
    lines.push(`let inner = ${inner}; let size = ${r ? d.inDim(0, k) : '1u'};`, `if (i >= ${outer} * inner) { return; }`, 'let base = (i / inner) * size * inner + i % inner;');
  }
  lines.push(
    `var best = in0[base]; var at = 0;`,
    'for (var j = 1u; j < size && best == best; j++) {',
    '  let v = in0[base + j * inner];',
    `  if (v ${cmp} best || v != v) { best = v; at = i32(j); }`,
    '}',
    'out0[i] = at;',
  );
  return { body: lines.join('\n'), grid: { tile: [], per: 64 } };
};

/** cumsum along dim: one thread per line along dim, a serial inclusive scan. */
export const cumsumKernel: KernelGen = (sig, d) => {
  const x = sig.inputs[0]!;
  const r = x.rank;
  const k = norm(Number(sig.attrs.dim ?? 0), r);
  const out = storageType(sig.outputs[0].dtype);
  const load = storageType(x.dtype) === out ? 'in0[off]' : `${out}(in0[off])`;
  const outer = product(Array.from({ length: k }, (_, q) => d.inDim(0, q)));
  const inner = product(Array.from({ length: r - k - 1 }, (_, q) => d.inDim(0, k + 1 + q)));
  const lines = [
    'let i = wg * 64u + lid;',
    `let inner = ${inner}; let size = ${r ? d.inDim(0, k) : '1u'};`,
    `if (i >= ${outer} * inner) { return; }`,
    'let base = (i / inner) * size * inner + i % inner;',
    `var acc = ${out}(0);`,
    'for (var j = 0u; j < size; j++) {',
    '  let off = base + j * inner;',
    `  acc += ${load};`,
    '  out0[off] = acc;',
    '}',
  ];
  // One work item per line along dim: the dim's own extent counts once (a tile larger than any size).
  const tile = Array.from({ length: r }, (_, q) => (q === k ? 2 ** 31 - 1 : 1));
  return { body: lines.join('\n'), grid: { tile, per: 64 } };
};

/**
 * sort along dim: one thread per element counts the elements of its line that sort before it
 * (NaN largest; ties by position, so the sort is stable) and writes itself at that rank.
 */
export const sortKernel: KernelGen = (sig, d) => {
  const x = sig.inputs[0]!;
  const r = x.rank;
  const k = norm(Number(sig.attrs.dim ?? -1), r);
  const desc = sig.attrs.descending === true;
  const outer = product(Array.from({ length: k }, (_, q) => d.inDim(0, q)));
  const inner = product(Array.from({ length: r - k - 1 }, (_, q) => d.inDim(0, k + 1 + q)));
  // before(a, b): a sorts strictly before b. NaN is tested on the bits (compilers may fold
  // v != v to false); integers are never NaN.
  const nan = (v: string) => (isFloating(x.dtype) ? `((bitcast<u32>(${v}) & 0x7fffffffu) > 0x7f800000u)` : 'false');
  const before = desc
    ? `(${nan('a')} && !${nan('b')}) || (!${nan('a')} && !${nan('b')} && a > b)`
    : `(!${nan('a')} && ${nan('b')}) || (!${nan('a')} && !${nan('b')} && a < b)`;
  const lines = [
    'let i = wg * 64u + lid;',
    `let inner = ${inner}; let size = ${r ? d.inDim(0, k) : '1u'};`,
    `if (i >= ${outer} * size * inner) { return; }`,
    'let pos = (i / inner) % size;',
    'let base = i - pos * inner;',
    'let b = in0[i];',
    'var rank = 0u;',
    'for (var j = 0u; j < size; j++) {',
    '  let a = in0[base + j * inner];',
    `  let earlier = ${before};`,
    '  let a2 = b; let b2 = a;',
    `  let later = ${before.replace(/\ba\b/g, 'a2').replace(/\bb\b/g, 'b2')};`,
    '  if (earlier || (!later && j < pos)) { rank++; }',
    '}',
    'out0[base + rank * inner] = b;',
    'out1[base + rank * inner] = i32(pos);',
  ];
  return { body: lines.join('\n'), grid: { tile: [], per: 64 } };
};
