// conv2d and fused_conv2d: the tiled implicit-GEMM kernel (conv-gemm.ts) for groups = 1 and
// small pool windows, with Winograd F(4×4, 3×3) (winograd.ts) as the alternative the device
// runs when the weight is 3×3 (it packs the weight at load, runtime/src/webgpu/packers.ts); otherwise a
// direct kernel where each thread computes one output pixel for up to 4 output channels
// (groups = 1), so every input value it loads is reused 4 times; grouped
// convolutions take one channel per thread. fused_conv2d adds its activation and max pool in the
// epilogue: a thread then owns one pooled pixel and takes the max over its window of activated
// conv outputs. Invariant: padding taps are skipped (read as 0), bias is added before the
// activation, and every dim comes from the dims block (N, H, W may vary per run).

import { activation, activationHelpers } from './epilogue.js';
import { conv2dGemmKernel, gemmConvApplies } from './conv-gemm.js';
import { winogradApplies, winogradConvKernel } from './winograd.js';
import type { KernelGen } from './shell.js';

const num = (v: unknown, i: number): number => (Array.isArray(v) ? Number(v[i]) : Number(v));

/**
 * conv2d / fused_conv2d: the tiled GEMM kernel where it applies (conv-gemm.ts), else direct; plus
 * the Winograd kernel over the device-packed weight (input 1, layout "winograd4x4") where the
 * attrs allow it (winograd.ts), which the device picks for a 3×3 weight.
 */
export const conv2dKernel: KernelGen = (sig, d) => {
  const main = gemmConvApplies(sig) ? conv2dGemmKernel(sig, d) : conv2dDirectKernel(sig, d);
  if (!winogradApplies(sig)) return main;
  return { ...main, packed: { input: 1, layout: 'winograd4x4', kernel: winogradConvKernel(sig, d) } };
};

const conv2dDirectKernel: KernelGen = (sig, d) => {
  const a = sig.attrs;
  const groups = Number(a.groups ?? 1);
  const per = groups === 1 ? 4 : 1;
  const [sh, sw] = [num(a.stride ?? [1, 1], 0), num(a.stride ?? [1, 1], 1)];
  const [ph, pw] = [num(a.padding ?? [0, 0, 0, 0], 0), num(a.padding ?? [0, 0, 0, 0], 1)];
  const [dh, dw] = [num(a.dilation ?? [1, 1], 0), num(a.dilation ?? [1, 1], 1)];
  const bias = sig.inputs[2] ? ' + in2[co]' : '';
  const act = String(a.activation ?? 'none');
  const pool = (a.pool ?? null) as { kernel_size: number[]; stride: number[] } | null;
  const [pkh, pkw] = pool ? pool.kernel_size : [1, 1];
  const [psh, psw] = pool ? pool.stride : [1, 1];
  const lines = [
    `let Cin = ${d.inDim(0, 1)}; let H = ${d.inDim(0, 2)}; let W = ${d.inDim(0, 3)};`,
    `let Cg = ${d.inDim(1, 1)}; let KH = ${d.inDim(1, 2)}; let KW = ${d.inDim(1, 3)};`,
    `let N = ${d.outDim(0, 0)}; let Cout = ${d.outDim(0, 1)}; let OH = ${d.outDim(0, 2)}; let OW = ${d.outDim(0, 3)};`,
    `let CB = (Cout + ${per - 1}u) / ${per}u;`,
    'let item = wg * 64u + lid;',
    'if (item >= N * CB * OH * OW) { return; }',
    'let px = item % OW; var r = item / OW; let py = r % OH; r = r / OH; let cb = r % CB; let n = r / CB;',
    `let co0 = cb * ${per}u;`,
    `let ci0 = (co0 / (Cout / ${groups}u)) * Cg;`,
    `var best = array<f32, ${per}>();`,
    `for (var u = 0u; u < ${pkh}u; u++) {`,
    `for (var v = 0u; v < ${pkw}u; v++) {`,
    `let oh = py * ${psh}u + u; let ow = px * ${psw}u + v;`,
    `var acc = array<f32, ${per}>(); // explicit: zeroed on every window position`,
    'for (var c = 0u; c < Cg; c++) {',
    '  for (var kh = 0u; kh < KH; kh++) {',
    `    let ih = i32(oh * ${sh}u + kh * ${dh}u) - ${ph};`,
    '    if (ih < 0 || ih >= i32(H)) { continue; }',
    '    for (var kw = 0u; kw < KW; kw++) {',
    `      let iw = i32(ow * ${sw}u + kw * ${dw}u) - ${pw};`,
    '      if (iw < 0 || iw >= i32(W)) { continue; }',
    '      let xv = in0[((n * Cin + ci0 + c) * H + u32(ih)) * W + u32(iw)];',
    `      for (var j = 0u; j < ${per}u; j++) {`,
    '        let co = min(co0 + j, Cout - 1u);',
    '        acc[j] += xv * in1[((co * Cg + c) * KH + kh) * KW + kw];',
    '      }',
    '    }',
    '  }',
    '}',
    `for (var j = 0u; j < ${per}u; j++) {`,
    '  let co = min(co0 + j, Cout - 1u);',
    `  let y = ${activation(act, `acc[j]${bias}`)};`,
    '  if ((u == 0u && v == 0u) || y > best[j] || y != y) { best[j] = y; }',
    '}',
    '}',
    '}',
    `for (var j = 0u; j < ${per}u; j++) {`,
    '  let co = co0 + j;',
    '  if (co < Cout) { out0[((n * Cout + co) * OH + py) * OW + px] = best[j]; }',
    '}',
  ];
  return { body: lines.join('\n'), grid: { tile: [1, per, 1, 1], per: 64 }, decls: activationHelpers(act) };
};
