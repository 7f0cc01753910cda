// matmul and linear: one hand-written tiled kernel. A workgroup of 64 threads computes a 32×32
// output tile, staging 32×16 tiles of A and 16×32 tiles of B in workgroup memory; each thread
// accumulates a 4×4 block of outputs. Invariant: out-of-range tile elements are loaded as 0, so
// any M, N, K works; batch dims broadcast (matmul) or are the leading dims of x (linear, whose
// weight [N, K] is read transposed and whose optional bias is added in the epilogue, followed
// by fused_linear's activation).

import { activation, activationHelpers } from './epilogue.js';
import { broadcastOffset, unflatten, type KernelGen } from './shell.js';

const DECLS = `var<workgroup> tileA: array<f32, 512>;
var<workgroup> tileB: array<f32, 512>;`;

export const matmulKernel: KernelGen = (sig, d) => {
  const linear = sig.op === 'linear' || sig.op === 'fused_linear';
  const act = String(sig.attrs.activation ?? 'none');
  const ra = sig.inputs[0]!.rank, rb = sig.inputs[1]!.rank;
  const hasM = ra >= 2, hasN = linear || rb >= 2;
  const outRank = sig.outputs[0].rank;
  const ob = outRank - (hasM ? 1 : 0) - (hasN ? 1 : 0);
  const M = hasM ? d.inDim(0, ra - 2) : '1u';
  const K = d.inDim(0, ra - 1);
  const N = linear ? d.inDim(1, 0) : hasN ? d.inDim(1, rb - 1) : '1u';
  const lines = [
    `let M = ${M}; let K = ${K}; let N = ${N};`,
    'let tilesN = (N + 31u) / 32u; let tilesM = (M + 31u) / 32u;',
    'let tn = wg % tilesN; let tm = (wg / tilesN) % tilesM; let bidx = wg / (tilesN * tilesM);',
    unflatten('bidx', ob, (k) => d.outDim(0, k), 'b'),
    broadcastOffset('aBatch', d, 0, Math.max(ra - 2, 0), ob, 'b'),
    linear ? 'let bBatch = 0u;' : broadcastOffset('bBatch', d, 1, Math.max(rb - 2, 0), ob, 'b'),
    'let aOff = aBatch * M * K; let bOff = bBatch * K * N; let cOff = bidx * M * N;',
    'let ty = lid / 8u; let tx = lid % 8u;',
    'var acc = array<f32, 16>();',
    'for (var k0 = 0u; k0 < K; k0 += 16u) {',
    '  for (var l = lid; l < 512u; l += 64u) {',
    '    let am = tm * 32u + l / 16u; let ak = k0 + l % 16u;',
    '    var av = 0.0;',
    '    if (am < M && ak < K) { av = in0[aOff + am * K + ak]; }',
    '    tileA[l] = av;',
    '    let bk = k0 + l / 32u; let bn = tn * 32u + l % 32u;',
    '    var bv = 0.0;',
    `    if (bk < K && bn < N) { bv = in1[${linear ? 'bn * K + bk' : 'bOff + bk * N + bn'}]; }`,
    '    tileB[l] = bv;',
    '  }',
    '  workgroupBarrier();',
    '  for (var kk = 0u; kk < 16u; kk++) {',
    '    let a0 = tileA[(ty * 4u) * 16u + kk]; let a1 = tileA[(ty * 4u + 1u) * 16u + kk];',
    '    let a2 = tileA[(ty * 4u + 2u) * 16u + kk]; let a3 = tileA[(ty * 4u + 3u) * 16u + kk];',
    '    for (var j = 0u; j < 4u; j++) {',
    '      let bv = tileB[kk * 32u + tx * 4u + j];',
    '      acc[j] += a0 * bv; acc[4u + j] += a1 * bv; acc[8u + j] += a2 * bv; acc[12u + j] += a3 * bv;',
    '    }',
    '  }',
    '  workgroupBarrier();',
    '}',
    'for (var i = 0u; i < 4u; i++) {',
    '  let m = tm * 32u + ty * 4u + i;',
    '  for (var j = 0u; j < 4u; j++) {',
    '    let n = tn * 32u + tx * 4u + j;',
    `    if (m < M && n < N) { out0[cOff + m * N + n] = ${activation(act, `acc[i * 4u + j]${linear && sig.inputs[2] ? ' + in2[n]' : ''}`)}; }`,
    '  }',
    '}',
  ];
  const tile = [...Array<number>(ob).fill(1), ...(hasM ? [32] : []), ...(hasN ? [32] : [])];
  return { body: lines.filter((l) => l).join('\n'), grid: { tile, per: 1 }, decls: `${DECLS}\n${activationHelpers(act)}`.trimEnd() };
};

/** Rows (output elements / last dim) up to which linear layers use linearFewRowsKernel. */
export const FEW_ROWS = 4;

/**
 * linear / fused_linear for a few rows (batch 1 inference): a 32×32 tile would leave 31 of 32
 * rows idle, so instead one workgroup computes one output element, its 64 threads striding over
 * K, then a tree reduction; bias and activation in the epilogue.
 */
export const linearFewRowsKernel: KernelGen = (sig, d) => {
  const ra = sig.inputs[0]!.rank;
  const act = String(sig.attrs.activation ?? 'none');
  const lines = [
    `let K = ${d.inDim(0, ra - 1)}; let N = ${d.inDim(1, 0)};`,
    'let r = wg / N; let n = wg % N;',
    'var acc = 0.0;',
    'for (var k = lid; k < K; k += 64u) { acc += in0[r * K + k] * in1[n * K + k]; }',
    'partial[lid] = acc;',
    'workgroupBarrier();',
    'for (var s = 32u; s > 0u; s = s >> 1u) {',
    '  if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }',
    '  workgroupBarrier();',
    '}',
    `if (lid == 0u) { out0[wg] = ${activation(act, `partial[0]${sig.inputs[2] ? ' + in2[n]' : ''}`)}; }`,
  ];
  return { body: lines.join('\n'), grid: { tile: [], per: 1 }, decls: `var<workgroup> partial: array<f32, 64>;\n${activationHelpers(act)}`.trimEnd() };
};
