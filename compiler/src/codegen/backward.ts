// Gradient ops as gather kernels (no float atomics in WGSL): each output element sums what
// scatters into it — index_add and scatter_add loop over the index entries along dim,
// avg_pool2d_backward / adaptive_avg_pool2d_backward over the windows that contain the input
// pixel, and conv2d_weight_grad (one workgroup per weight element) over batch and positions with
// a workgroup tree reduction. Invariant: the same windows and divisors as the forward kernels
// (pool.ts) and the same index rules as layout.ts (an index outside [0, size) is reported through
// the index-error buffer and never matches).

import { INDEX_ERROR_DECL } from '@kiln/runtime';
import { reportBadIndex } from './layout.js';
import { product, unflatten, type DimsLayout, type KernelGen } from './shell.js';

const pair = (v: unknown, dflt: number): [number, number] => (Array.isArray(v) ? [Number(v[0]), Number(v[1])] : [dflt, dflt]);
const norm = (dim: number, rank: number) => ((dim % Math.max(rank, 1)) + Math.max(rank, 1)) % Math.max(rank, 1);

function stride(d: DimsLayout, j: number, rank: number, k: number): string {
  return product(Array.from({ length: rank - k - 1 }, (_, q) => d.inDim(j, k + 1 + q)));
}

function prologue(d: DimsLayout, R: number): string[] {
  return [
    'let i = wg * 64u + lid;',
    `if (i >= ${product(Array.from({ length: R }, (_, k) => d.outDim(0, k)))}) { return; }`,
    unflatten('i', R, (k) => d.outDim(0, k)),
  ];
}

/** index_add: out = x, plus src slice j wherever index[j] is this position along dim (an index outside the dim is reported, as on the CPU). */
export const indexAddKernel: KernelGen = (sig, d) => {
  const R = sig.outputs[0].rank;
  const dim = norm(Number(sig.attrs.dim ?? 0), R);
  const size = d.inDim(0, dim);
  const srcOff = Array.from({ length: R }, (_, k) => `${k === dim ? 'j' : `o${k}`} * ${stride(d, 2, R, k)}`).join(' + ') || '0u';
  const lines = [...prologue(d, R),
    'var acc = in0[i];',
    `for (var j = 0u; j < ${d.inDim(1, 0)}; j++) {`,
    `  let raw = in1[j]; ${reportBadIndex('raw', size)}`,
    `  if (raw == i32(o${dim})) { acc += in2[${srcOff}]; }`,
    '}',
    'out0[i] = acc;'];
  return { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 }, decls: INDEX_ERROR_DECL };
};

/** scatter_add: out = x, plus src[q] for each index position q that points here along dim (an index outside the dim is reported, as on the CPU). */
export const scatterAddKernel: KernelGen = (sig, d) => {
  const R = sig.outputs[0].rank;
  const dim = norm(Number(sig.attrs.dim ?? 0), R);
  const size = d.inDim(0, dim);
  const inside = Array.from({ length: R }, (_, k) => k).filter((k) => k !== dim).map((k) => `o${k} < ${d.inDim(1, k)}`);
  const idxOff = Array.from({ length: R }, (_, k) => `${k === dim ? 'j' : `o${k}`} * ${stride(d, 1, R, k)}`).join(' + ') || '0u';
  const srcOff = Array.from({ length: R }, (_, k) => `${k === dim ? 'j' : `o${k}`} * ${stride(d, 2, R, k)}`).join(' + ') || '0u';
  const lines = [...prologue(d, R),
    'var acc = in0[i];',
    `if (${inside.length ? inside.join(' && ') : 'true'}) {`,
    `  for (var j = 0u; j < ${R ? d.inDim(1, dim) : '1u'}; j++) {`,
    `    let raw = in1[${idxOff}]; ${reportBadIndex('raw', size)}`,
    `    if (raw == i32(o${dim})) { acc += in2[${srcOff}]; }`,
    '  }',
    '}',
    'out0[i] = acc;'];
  return { body: lines.filter((l) => l).join('\n'), grid: { tile: [], per: 64 }, decls: INDEX_ERROR_DECL };
};

/** avg_pool2d_backward and adaptive_avg_pool2d_backward: sum g / divisor over the windows holding this pixel. */
export const avgPoolBackwardKernel: KernelGen = (sig, d) => {
  const a = sig.attrs;
  const adaptive = sig.op.startsWith('adaptive');
  const lines = [
    `let OH = ${d.inDim(0, 2)}; let OW = ${d.inDim(0, 3)}; let H = ${d.outDim(0, 2)}; let W = ${d.outDim(0, 3)};`,
    'let i = wg * 64u + lid;',
    `if (i >= ${d.outDim(0, 0)} * ${d.outDim(0, 1)} * H * W) { return; }`,
    'let x = i32(i % W); let y = i32((i / W) % H); let plane = i / (W * H);',
    'var acc = 0.0;',
  ];
  if (adaptive) {
    lines.push(
      'for (var oh = 0u; oh < OH; oh++) {',
      '  let y0 = i32((oh * H) / OH); let y1 = i32(((oh + 1u) * H + OH - 1u) / OH);',
      '  if (y < y0 || y >= y1) { continue; }',
      '  for (var ow = 0u; ow < OW; ow++) {',
      '    let x0 = i32((ow * W) / OW); let x1 = i32(((ow + 1u) * W + OW - 1u) / OW);',
      '    if (x < x0 || x >= x1) { continue; }',
      '    acc += in0[(plane * OH + oh) * OW + ow] / f32((y1 - y0) * (x1 - x0));',
      '  }',
      '}',
    );
  } else {
    const [kh, kw] = pair(a.kernel_size, 1), [sh, sw] = pair(a.stride, 1), [ph, pw] = pair(a.padding, 0);
    const div = typeof a.divisor_override === 'number' ? `${a.divisor_override}.0`
      : (a.count_include_pad ?? true) ? `f32((min(sy + ${kh}, i32(H) + ${ph}) - sy) * (min(sx + ${kw}, i32(W) + ${pw}) - sx))`
        : `f32((min(sy + ${kh}, i32(H)) - max(sy, 0)) * (min(sx + ${kw}, i32(W)) - max(sx, 0)))`;
    // Windows oh with oh·stride − pad ≤ y < oh·stride − pad + k.
    lines.push(
      `let oh0 = max((y + ${ph} - ${kh} + ${sh}) / ${sh}, 0); let oh1 = min((y + ${ph}) / ${sh}, i32(OH) - 1);`,
      `let ow0 = max((x + ${pw} - ${kw} + ${sw}) / ${sw}, 0); let ow1 = min((x + ${pw}) / ${sw}, i32(OW) - 1);`,
      'for (var oh = oh0; oh <= oh1; oh++) {',
      `  let sy = oh * ${sh} - ${ph};`,
      '  for (var ow = ow0; ow <= ow1; ow++) {',
      `    let sx = ow * ${sw} - ${pw};`,
      `    acc += in0[(plane * OH + u32(oh)) * OW + u32(ow)] / ${div};`,
      '  }',
      '}',
    );
  }
  lines.push('out0[i] = acc;');
  return { body: lines.join('\n'), grid: { tile: [], per: 64 } };
};

/** conv2d_weight_grad(input, grad_output): gw[co, c, kh, kw] = Σ_{n, oh, ow} g · x-patch. */
export const convWeightGradKernel: KernelGen = (sig, d) => {
  const a = sig.attrs;
  const groups = Number(a.groups ?? 1);
  const [sh, sw] = pair(a.stride, 1), [dh, dw] = pair(a.dilation, 1), [ph, pw] = pair(a.padding, 0);
  const lines = [
    `let N = ${d.inDim(0, 0)}; let Cin = ${d.inDim(0, 1)}; let H = ${d.inDim(0, 2)}; let W = ${d.inDim(0, 3)};`,
    `let Cout = ${d.inDim(1, 1)}; let OH = ${d.inDim(1, 2)}; let OW = ${d.inDim(1, 3)};`,
    `let Cg = ${d.outDim(0, 1)}; let KH = ${d.outDim(0, 2)}; let KW = ${d.outDim(0, 3)};`,
    'let kw = wg % KW; let kh = (wg / KW) % KH; let c = (wg / (KW * KH)) % Cg; let co = wg / (KW * KH * Cg);',
    `let ci = (co / (Cout / ${groups}u)) * Cg + c;`,
    'let count = N * OH * OW;',
    'var acc = 0.0;',
    'for (var e = lid; e < count; e += 64u) {',
    '  let ow = e % OW; let oh = (e / OW) % OH; let n = e / (OW * OH);',
    `  let ih = i32(oh * ${sh}u + kh * ${dh}u) - ${ph}; let iw = i32(ow * ${sw}u + kw * ${dw}u) - ${pw};`,
    '  if (ih >= 0 && ih < i32(H) && iw >= 0 && iw < i32(W)) {',
    '    acc += in1[((n * Cout + co) * OH + oh) * OW + ow] * in0[((n * Cin + ci) * H + u32(ih)) * W + u32(iw)];',
    '  }',
    '}',
    'partial[lid] = acc;',
    'workgroupBarrier();',
    'for (var s = 32u; s > 0u; s = s >> 1u) {',
    '  if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }',
    '  workgroupBarrier();',
    '}',
    'if (lid == 0u) { out0[wg] = partial[0]; }',
  ];
  return { body: lines.join('\n'), grid: { tile: [], per: 1 }, decls: 'var<workgroup> partial: array<f32, 64>;' };
};
