// matmul and linear: one hand-written tiled kernel. A workgroup of 64 threads computes a 32×32
// output tile, staging 32×16 tiles of A and 16×32 tiles of B in workgroup memory; each thread
// accumulates 4 rows × 4 columns (8 apart) of outputs in 4 vec4 registers. Invariant: out-of-range tile elements are loaded as 0, so
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
    ...[0, 1, 2, 3].map((i) => `var acc${i} = vec4<f32>();`),
    'for (var k0 = 0u; k0 < K; k0 += 16u) {',
    '  for (var l = lid; l < 512u; l += 64u) {',
    '    let am = tm * 32u + l / 16u; let ak = k0 + l % 16u;',
    '    var av = 0.0;',
    '    if (am < M && ak < K) { av = in0[aOff + am * K + ak]; }',
    '    tileA[l] = av;',
    // B[k][n] is tileB[k·32 + n]; linear's weight rows are read along k (consecutive lanes,
    // consecutive words).
    linear ? '    let bk = k0 + l % 16u; let bn = tn * 32u + l / 16u;' : '    let bk = k0 + l / 32u; let bn = tn * 32u + l % 32u;',
    '    var bv = 0.0;',
    `    if (bk < K && bn < N) { bv = in1[${linear ? 'bn * K + bk' : 'bOff + bk * N + bn'}]; }`,
    `    tileB[${linear ? '(l % 16u) * 32u + l / 16u' : 'l'}] = bv;`,
    '  }',
    '  workgroupBarrier();',
    // Thread (ty, tx) owns rows ty·4 + i and columns j·8 + tx: the lanes of a SIMD group
    // (consecutive tx) read one A word and 4 consecutive B words.
    '  for (var kk = 0u; kk < 16u; kk++) {',
    '    let b = vec4<f32>(tileB[kk * 32u + tx], tileB[kk * 32u + 8u + tx], tileB[kk * 32u + 16u + tx], tileB[kk * 32u + 24u + tx]);',
    ...[0, 1, 2, 3].map((i) => `    acc${i} += tileA[(ty * 4u + ${i}u) * 16u + kk] * b;`),
    '  }',
    '  workgroupBarrier();',
    '}',
    ...[0, 1, 2, 3].flatMap((i) => [0, 1, 2, 3].map((j) =>
      `{ let m = tm * 32u + ty * 4u + ${i}u; let n = tn * 32u + ${j * 8}u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = ${activation(act, `acc${i}.${'xyzw'[j]}${linear && sig.inputs[2] ? ' + in2[n]' : ''}`)}; } }`)),
  ];
  const tile = [...Array<number>(ob).fill(1), ...(hasM ? [32] : []), ...(hasN ? [32] : [])];
  return { body: lines.filter((l) => l).join('\n'), grid: { tile, per: 1 }, decls: `${DECLS}\n${activationHelpers(act)}`.trimEnd() };
};

/** Rows (output elements / last dim) up to which linear layers use linearFewRowsKernel. */
export const FEW_ROWS = 4;

/**
 * linear / fused_linear for a few rows (batch 1 inference): a 32×32 tile would leave 31 of 32
 * rows idle, so instead a workgroup computes 64 outputs of one row, 4 threads per group of 4
 * outputs (16 apart): thread p sums k ≡ p (mod 4), so the 4 lanes of a SIMD group read 4
 * consecutive words of x and of each weight row, and each x word serves 4 outputs; one barrier,
 * then the first of the 4 adds their partial sums, the bias and the activation.
 */
export const linearFewRowsKernel: KernelGen = (sig, d) => {
  const ra = sig.inputs[0]!.rank;
  const act = String(sig.attrs.activation ?? 'none');
  const bias = sig.inputs[2] ? ' + in2[n]' : '';
  const lines = [
    `let K = ${d.inDim(0, ra - 1)}; let N = ${d.inDim(1, 0)};`,
    'let tilesN = (N + 63u) / 64u; let r = wg / tilesN; let n0 = (wg % tilesN) * 64u + lid / 4u; let p = lid % 4u;',
    // Rows past N read row N - 1 (never stored), so the loop has no branch.
    ...[0, 1, 2, 3].map((i) => `let w${i} = min(n0 + ${16 * i}u, N - 1u) * K;`),
    'var acc = vec4<f32>();',
    'let xo = r * K;',
    'for (var k = p; k < K; k += 4u) {',
    '  let xv = in0[xo + k];',
    '  acc += xv * vec4<f32>(in1[w0 + k], in1[w1 + k], in1[w2 + k], in1[w3 + k]);',
    '}',
    'partial[lid] = acc;',
    'workgroupBarrier();',
    'if (p == 0u) {',
    '  let s = partial[lid] + partial[lid + 1u] + partial[lid + 2u] + partial[lid + 3u];',
    ...[0, 1, 2, 3].map((i) => `  { let n = n0 + ${16 * i}u; if (n < N) { out0[r * N + n] = ${activation(act, `s.${'xyzw'[i]}${bias}`)}; } }`),
    '}',
  ];
  const tile = [...Array<number>(sig.outputs[0].rank - 1).fill(1), 64];
  return { body: lines.join('\n'), grid: { tile, per: 1 }, decls: `var<workgroup> partial: array<vec4<f32>, 64>;\n${activationHelpers(act)}`.trimEnd() };
};
