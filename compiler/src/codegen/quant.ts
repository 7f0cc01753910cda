// WGSL for quantized_linear (dynamic int8 quantization). The weight is stored four int8 per u32
// word (runtime/src/webgpu/device.ts), unpacked with extractBits (or, in the 'int8x4' variant,
// summed four at a time by dot4I8Packed); every workgroup finds the
// input's range itself (a strided min/max over all of x and a tree reduction), derives the
// activation scale and zero point as ATen's ChooseQuantizationParams does (in f32: WGSL has no
// f64, so a value within an ulp of a rounding boundary may take the neighbouring code), and each
// thread sums (x_q − zp)·w in i32 for one output. Invariant: the same steps as ir-spec's
// kernels/quant.ts (round = half to even, clamps, float32(sum)·(s_x·s_w) + bias, relu when asked).

import type { KernelGen } from './shell.js';
import { product } from './shell.js';
import { activation, activationHelpers } from './epilogue.js';

export const quantizedLinearKernel: KernelGen = (sig, d) => {
  const ra = sig.inputs[0]!.rank;
  const qmax = sig.attrs.reduceRange ? '127.0' : '255.0';
  const rows = product(Array.from({ length: ra - 1 }, (_, k) => d.inDim(0, k)));
  const bias = sig.inputs[3] ? ' + in3[n]' : '';
  const act = sig.attrs.relu === true ? 'relu' : 'none';
  const lines = [
    `let K = ${d.inDim(0, ra - 1)}; let N = ${d.inDim(1, 0)}; let total = (${rows}) * K;`,
    'let tilesN = (N + 63u) / 64u; let r = wg / tilesN; let n = (wg % tilesN) * 64u + lid;',
    // The range always holds 0 (ATen: min(min(x), 0), max(max(x), 0)).
    'var lo = 0.0; var hi = 0.0;',
    'for (var i = lid; i < total; i += 64u) { let v = in0[i]; lo = min(lo, v); hi = max(hi, v); }',
    'range[lid] = vec2<f32>(lo, hi);',
    'workgroupBarrier();',
    'for (var s = 32u; s > 0u; s >>= 1u) {',
    '  if (lid < s) { range[lid] = vec2<f32>(min(range[lid].x, range[lid + s].x), max(range[lid].y, range[lid + s].y)); }',
    '  workgroupBarrier();',
    '}',
    'var mn = range[0].x; var mx = range[0].y;',
    `let qmax = ${qmax};`,
    'var scale = (mx - mn) / qmax;',
    'if (scale == 0.0 || 1.0 / scale > 3.4028234e38) { scale = 0.1; }',
    'if (scale < 6.1e-5) {',
    '  let org = scale; scale = 6.1e-5;',
    '  if (mn == 0.0) { mx = scale * qmax; } else if (mx == 0.0) { mn = -scale * qmax; } else { mn *= scale / org; mx *= scale / org; }',
    '}',
    'let fromMin = -mn / scale; let fromMax = qmax - mx / scale;',
    'let errMin = -abs(mn / scale); let errMax = qmax - abs(mx / scale);',
    'let zp = clamp(round(select(fromMax, fromMin, errMin < errMax)), 0.0, qmax);',
    'let inv = 1.0 / scale;',
    'if (n >= N) { return; }',
    'let xo = r * K; let wo = n * K;',
    'var acc = 0i;',
  ];
  const unpacking = [
    'for (var k = 0u; k < K; k++) {',
    '  let xq = clamp(round(in0[xo + k] * inv) + zp, 0.0, 255.0);',
    '  let wi = wo + k;',
    '  acc += (i32(xq) - i32(zp)) * extractBits(bitcast<i32>(in1[wi >> 2u]), (wi & 3u) * 8u, 8u);',
    '}',
  ];
  // With reduceRange the codes are 0..127, so four of them pack as int8 and dot4I8Packed sums
  // x_q·w over four weights at once; Σw (for the zero point) is a dot with four ones. The
  // layout 'int8x4' variant runs only when K % 4 = 0 (each weight row starts a word) and the
  // adapter has the packed_4x8_integer_dot_product language feature (runtime/src/webgpu/packers.ts).
  const dot4 = [
    'var wsum = 0i;',
    'for (var k = 0u; k < K; k += 4u) {',
    '  let xv = vec4<f32>(in0[xo + k], in0[xo + k + 1u], in0[xo + k + 2u], in0[xo + k + 3u]);',
    '  let xp = pack4xI8(vec4<i32>(clamp(round(xv * inv) + zp, vec4<f32>(0.0), vec4<f32>(255.0))));',
    '  let wv = in1[(wo + k) >> 2u];',
    '  acc += dot4I8Packed(xp, wv);',
    '  wsum += dot4I8Packed(0x01010101u, wv);',
    '}',
    'acc -= i32(zp) * wsum;',
  ];
  const tail = [
    `let sw = in2[select(0u, n, ${d.inDim(2, 0)} > 1u)];`,
    `out0[r * N + n] = ${activation(act, `f32(acc) * (scale * sw)${bias}`)};`,
  ];
  const tile = [...Array<number>(sig.outputs[0].rank - 1).fill(1), 64];
  const decls = `var<workgroup> range: array<vec2<f32>, 64>;\n${activationHelpers(act)}`.trimEnd();
  const body = (loop: string[]) => [...lines, ...loop, ...tail].join('\n');
  const main = { body: body(unpacking), grid: { tile, per: 1 }, decls };
  if (!sig.attrs.reduceRange) return main;
  return { ...main, packed: { input: 1, layout: 'int8x4', kernel: { body: body(dot4), grid: { tile, per: 1 }, decls } } };
};
