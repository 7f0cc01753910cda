// masked_scatter: out = x (broadcast with mask) with the masked positions filled by src's
// elements in order. The source index of a masked position is the number of masked positions
// before it — a prefix sum over the whole mask — so ONE workgroup walks the output in chunks of
// 64, each a workgroup scan (Hillis–Steele, log2 64 steps) plus the running count of the chunks
// before. (masked_select has no kernel: its length depends on the mask, which the WebGPU device
// would have to read back in the middle of a dispatch.) Invariant: positions are visited in
// row-major order, the order the CPU kernel consumes src in; the grid is exactly one workgroup.

import { broadcastOffset, product, unflatten, type KernelGen } from './shell.js';

export const maskedScatterKernel: KernelGen = (sig, d) => {
  const R = sig.outputs[0].rank;
  const lines = [
    `let total = ${product(Array.from({ length: R }, (_, k) => d.outDim(0, k)))};`,
    'var before = 0u;',
    'for (var c0 = 0u; c0 < total; c0 += 64u) {',
    '  let i = c0 + lid;',
    ...unflatten('min(i, total - 1u)', R, (k) => d.outDim(0, k)).split('\n').map((l) => `  ${l}`),
    ...broadcastOffset('px', d, 0, sig.inputs[0]!.rank, R).split('\n').map((l) => `  ${l}`),
    ...broadcastOffset('pm', d, 1, sig.inputs[1]!.rank, R).split('\n').map((l) => `  ${l}`),
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
    '  if (i < total) { out0[i] = select(in0[px], in2[at], m == 1u); }',
    '  before += scan[63];',
    '  workgroupBarrier();',
    '}',
  ];
  // One workgroup whatever the size: a tile larger than any tensor.
  return { body: lines.join('\n'), grid: { tile: [2 ** 31 - 1], per: 1, merge: 0 }, decls: 'var<workgroup> scan: array<u32, 64>;' };
};

