// masked_scatter and masked_select: both walk the positions of x broadcast with mask in
// row-major order, and a masked position's rank among the masked positions (the number masked
// before it — a prefix sum over the whole mask) is where it reads src (masked_scatter) or writes
// its element (masked_select). ONE workgroup walks the positions in chunks of 64, each a
// workgroup scan (Hillis–Steele, log2 64 steps) plus the running count of the chunks before.
// masked_select's output length (the true count) is data dependent: the executor reads it before
// the dispatch (the op entry's dataDims, read by runtime/src/executor.ts) and the device sizes the output with it; the
// kernel never needs it, so one pipeline serves every count. Invariant: positions are visited in
// row-major order, the order the CPU kernels use; the grid is exactly one workgroup.

import { broadcastOffset, product, unflatten, type DimsLayout, type KernelGen, type KernelSig } from './shell.js';

const indent = (s: string): string[] => s.split('\n').map((l) => `  ${l}`);

/**
 * The single-workgroup scan over the broadcast positions `i < total` (dims `dim(k)`, rank R):
 * in each chunk `m` is 1 at a masked position and `at` the number of masked positions before
 * it; `write` is the chunk's store, run by every thread (guard with `i < total` yourself).
 */
function maskScan(sig: KernelSig, d: DimsLayout, R: number, dim: (k: number) => string, write: string): string {
  const lines = [
    `let total = ${product(Array.from({ length: R }, (_, k) => dim(k)))};`,
    'var before = 0u;',
    'for (var c0 = 0u; c0 < total; c0 += 64u) {',
    '  let i = c0 + lid;',
    ...indent(unflatten('min(i, total - 1u)', R, dim)),
    ...indent(broadcastOffset('px', d, 0, sig.inputs[0]!.rank, R)),
    ...indent(broadcastOffset('pm', d, 1, sig.inputs[1]!.rank, R)),
    '  let m = select(0u, 1u, i < total && in1[pm] != 0u);',
    '  scan[lid] = m;',
    '  workgroupBarrier();',
    '  for (var s = 1u; s < 64u; s = s << 1u) {',
    '    var v = scan[lid];',
    '    if (lid >= s) { v += scan[lid - s]; }',
    '    workgroupBarrier();',
    '    scan[lid] = v;',
    '    workgroupBarrier();',
    '  }',
    '  let at = before + scan[lid] - m;',
    `  ${write}`,
    '  before += scan[63];',
    '  workgroupBarrier();',
    '}',
  ];
  return lines.join('\n');
}

// One workgroup whatever the size: a tile larger than any tensor.
const ONE_WORKGROUP = { tile: [2 ** 31 - 1], per: 1, merge: 0 };
const SCAN_DECLS = 'var<workgroup> scan: array<u32, 64>;';

export const maskedScatterKernel: KernelGen = (sig, d) => {
  const R = sig.outputs[0].rank;
  const body = maskScan(sig, d, R, (k) => d.outDim(0, k), 'if (i < total) { out0[i] = select(in0[px], in2[at], m == 1u); }');
  return { body, grid: ONE_WORKGROUP, decls: SCAN_DECLS };
};

/** Lines binding `b0..b{R-1}`, the broadcast dims of inputs 0 and 1 (a dim of 1 or a missing dim yields to the other). */
function broadcastDims(sig: KernelSig, d: DimsLayout, R: number): string[] {
  const dimOf = (j: number, k: number): string | null => {
    const rank = sig.inputs[j]!.rank;
    return k - (R - rank) >= 0 ? d.inDim(j, k - (R - rank)) : null;
  };
  return Array.from({ length: R }, (_, k) => {
    const a = dimOf(0, k), b = dimOf(1, k);
    return `let b${k} = ${a && b ? `select(${a}, ${b}, ${a} == 1u)` : (a ?? b)};`;
  });
}

export const maskedSelectKernel: KernelGen = (sig, d) => {
  const R = Math.max(sig.inputs[0]!.rank, sig.inputs[1]!.rank);
  const scan = maskScan(sig, d, R, (k) => `b${k}`, 'if (m == 1u) { out0[at] = in0[px]; }');
  return { body: [...broadcastDims(sig, d, R), scan].join('\n'), grid: ONE_WORKGROUP, decls: SCAN_DECLS };
};
