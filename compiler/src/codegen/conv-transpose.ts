// conv_transpose2d: one thread per output element gathers every (input pixel, tap) pair that
// scatters into it: oh = ih·stride − pad + kh·dilation, so ih = (oh + pad − kh·dilation) / stride
// when that divides exactly and lands inside the input. Invariant: weight is [Cin, Cout/groups,
// kh, kw] and output channel co of group g reads input channels g·Cin/groups .. (g+1)·Cin/groups.

import type { KernelGen } from './shell.js';

const pair = (v: unknown, dflt: number): [number, number] => (Array.isArray(v) ? [Number(v[0]), Number(v[1])] : [dflt, dflt]);

export const convTransposeKernel: KernelGen = (sig, d) => {
  const a = sig.attrs;
  const groups = Number(a.groups ?? 1);
  const [sh, sw] = pair(a.stride, 1), [dh, dw] = pair(a.dilation, 1), [ph, pw] = pair(a.padding, 0);
  const lines = [
    `let Cin = ${d.inDim(0, 1)}; let H = ${d.inDim(0, 2)}; let W = ${d.inDim(0, 3)};`,
    `let Cog = ${d.inDim(1, 1)}; let KH = ${d.inDim(1, 2)}; let KW = ${d.inDim(1, 3)};`,
    `let Cout = ${d.outDim(0, 1)}; let OH = ${d.outDim(0, 2)}; let OW = ${d.outDim(0, 3)};`,
    'let i = wg * 64u + lid;',
    `if (i >= ${d.outDim(0, 0)} * Cout * OH * OW) { return; }`,
    'let ow = i % OW; let oh = (i / OW) % OH; let co = (i / (OW * OH)) % Cout; let n = i / (OW * OH * Cout);',
    `let cig = Cin / ${groups}u; let g = co / Cog; let col = co % Cog;`,
    `var acc = ${sig.inputs[2] ? 'in2[co]' : '0.0'};`,
    'for (var kh = 0u; kh < KH; kh++) {',
    `  let th = i32(oh) + ${ph} - i32(kh * ${dh}u);`,
    `  if (th < 0 || th % ${sh} != 0 || th / ${sh} >= i32(H)) { continue; }`,
    `  let ih = u32(th / ${sh});`,
    '  for (var kw = 0u; kw < KW; kw++) {',
    `    let tw = i32(ow) + ${pw} - i32(kw * ${dw}u);`,
    `    if (tw < 0 || tw % ${sw} != 0 || tw / ${sw} >= i32(W)) { continue; }`,
    `    let iw = u32(tw / ${sw});`,
    '    for (var c = 0u; c < cig; c++) {',
    '      let ci = g * cig + c;',
    '      acc += in0[((n * Cin + ci) * H + ih) * W + iw] * in1[((ci * Cog + col) * KH + kh) * KW + kw];',
    '    }',
    '  }',
    '}',
    'out0[i] = acc;',
  ];
  return { body: lines.join('\n'), grid: { tile: [], per: 64 } };
};
