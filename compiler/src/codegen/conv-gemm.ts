// conv2d / fused_conv2d with groups = 1 as an implicit GEMM: out[co, pixel] = Σ_k W[co, k] ·
// X̂[k, pixel] with k = (ci, kh, kw), tiled like matmul.ts — 64 threads per 32×32 output tile,
// 32×16 weight and 16×32 input (im2col, gathered on the fly) tiles in workgroup memory, a 4×4
// block of outputs per thread. Epilogue: bias, activation, and a fused max pool whose window has
// S = 1, 2 or 4 taps: columns then enumerate (pooled pixel, tap), so the S columns of one pooled
// pixel are consecutive and owned by one thread, which takes their max. Invariant: columns
// past the end and taps in the padding read 0 and are never stored; one workgroup row of tiles
// per image (grid: merge the spatial dims).

import { activation, activationHelpers } from './epilogue.js';
import type { KernelGen, KernelSig } from './shell.js';

const pair = (v: unknown, dflt: number): [number, number] => (Array.isArray(v) ? [Number(v[0]), Number(v[1])] : [dflt, dflt]);

/** Whether the GEMM kernel handles this conv (else the direct kernel does). */
export function gemmConvApplies(sig: KernelSig): boolean {
  const pool = sig.attrs.pool as { kernel_size: number[] } | null | undefined;
  const taps = pool ? pool.kernel_size[0] * pool.kernel_size[1] : 1;
  return Number(sig.attrs.groups ?? 1) === 1 && [1, 2, 4].includes(taps);
}

export const conv2dGemmKernel: KernelGen = (sig, d) => {
  const a = sig.attrs;
  const [sh, sw] = pair(a.stride, 1), [dh, dw] = pair(a.dilation, 1);
  const [ph, pw] = pair(a.padding, 0);
  const act = String(a.activation ?? 'none');
  const pool = (a.pool ?? null) as { kernel_size: number[]; stride: number[] } | null;
  const [pkh, pkw] = pool ? pool.kernel_size : [1, 1];
  const [psh, psw] = pool ? pool.stride : [1, 1];
  const S = pkh * pkw;
  const bias = sig.inputs[2] ? ' + in2[co]' : '';
  // Column c → conv output pixel (oh, ow): pooled pixel c / S, tap c % S.
  const pixel = pool
    ? ['let q = col / ' + S + 'u; let tap = col % ' + S + 'u;', 'let oh = (q / PW) * ' + psh + 'u + tap / ' + pkw + 'u; let ow = (q % PW) * ' + psw + 'u + tap % ' + pkw + 'u;']
    : ['let oh = col / PW; let ow = col % PW;'];
  const lines = [
    `let Cin = ${d.inDim(0, 1)}; let H = ${d.inDim(0, 2)}; let W = ${d.inDim(0, 3)};`,
    `let KH = ${d.inDim(1, 2)}; let KW = ${d.inDim(1, 3)};`,
    `let M = ${d.outDim(0, 1)}; let PH = ${d.outDim(0, 2)}; let PW = ${d.outDim(0, 3)};`,
    `let K = Cin * KH * KW; let cols = PH * PW * ${S}u;`,
    'let tilesN = (cols + 31u) / 32u; let tilesM = (M + 31u) / 32u;',
    'let tn = wg % tilesN; let tm = (wg / tilesN) % tilesM; let n = wg / (tilesN * tilesM);',
    'let ty = lid / 8u; let tx = lid % 8u;',
    'var acc = array<f32, 16>();',
    // A thread loads input-tile column lid % 32 for every k (64 threads, 32 columns): its conv
    // output pixel is fixed, so the pixel math stays out of the k loop.
    'let col = tn * 32u + lid % 32u;',
    'let colOk = col < cols;',
    ...pixel,
    'let KHW = KH * KW;',
    'for (var k0 = 0u; k0 < K; k0 += 16u) {',
    '  for (var l = lid; l < 512u; l += 64u) {',
    '    let am = tm * 32u + l / 16u; let ak = k0 + l % 16u;',
    '    var av = 0.0;',
    '    if (am < M && ak < K) { av = in1[am * K + ak]; }',
    '    tileA[l] = av;',
    '    let bk = k0 + l / 32u;',
    '    var bv = 0.0;',
    '    if (bk < K && colOk) {',
    '      let ci = bk / KHW; let rem = bk % KHW;',
    `      let ih = i32(oh * ${sh}u + (rem / KW) * ${dh}u) - ${ph}; let iw = i32(ow * ${sw}u + (rem % KW) * ${dw}u) - ${pw};`,
    '      if (ih >= 0 && ih < i32(H) && iw >= 0 && iw < i32(W)) { bv = in0[((n * Cin + ci) * H + u32(ih)) * W + u32(iw)]; }',
    '    }',
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
    '  let co = tm * 32u + ty * 4u + i;',
    '  if (co >= M) { continue; }',
    `  for (var j0 = 0u; j0 < 4u; j0 += ${S}u) {`,
    `    let q = (tn * 32u + tx * 4u + j0) / ${S}u;`,
    '    if (q >= PH * PW) { continue; }',
    `    var best = ${activation(act, `acc[i * 4u + j0]${bias}`)};`,
    `    for (var j = j0 + 1u; j < j0 + ${S}u; j++) {`,
    `      let y = ${activation(act, `acc[i * 4u + j]${bias}`)};`,
    '      if (y > best || y != y) { best = y; }',
    '    }',
    '    out0[(n * M + co) * PH * PW + q] = best;',
    '  }',
    '}',
  ];
  const decls = `var<workgroup> tileA: array<f32, 512>;\nvar<workgroup> tileB: array<f32, 512>;\n${activationHelpers(act)}`.trimEnd();
  return { body: lines.join('\n'), grid: { tile: [1, 32, 32 / S], per: 1, merge: 2 }, decls };
};
