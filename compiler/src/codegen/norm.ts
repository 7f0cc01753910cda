// batch_norm (inference form): y = (x − mean[c]) · weight[c] / sqrt(var[c] + eps) + bias[c]
// over channel dim 1, one output element per thread; batch_norm_stats: per-channel mean and
// biased variance, one workgroup per channel, two passes (mean, then squared deviations) each
// with a workgroup tree reduction; batch_norm_backward: one workgroup per channel as well, Σg and
// Σg·(x − mean) reduced together, then dx written for that channel (with both weight and
// relu_output it needs 9 storage buffers, over WebGPU's default limit of 8: generateWgsl refuses it). Invariant: absent weight/bias read as 1/0, and the channel
// of element i is (i / inner) % C, inner the product of dims after 1.

import { literal, product, type KernelGen } from './shell.js';

export const batchNormKernel: KernelGen = (sig, d) => {
  const x = sig.inputs[0]!;
  const eps = typeof sig.attrs.eps === 'number' ? sig.attrs.eps : 1e-5;
  const inner = product(Array.from({ length: Math.max(x.rank - 2, 0) }, (_, k) => d.inDim(0, k + 2)));
  const lines = [
    'let i = wg * 64u + lid;',
    `if (i >= ${product(Array.from({ length: x.rank }, (_, k) => d.inDim(0, k)))}) { return; }`,
    `let c = (i / (${inner})) % ${x.rank > 1 ? d.inDim(0, 1) : '1u'};`,
    `let scale = ${sig.inputs[3] ? 'in3[c]' : '1.0'} / sqrt(in2[c] + ${literal(eps, 'f32')});`,
    `out0[i] = (in0[i] - in1[c]) * scale${sig.inputs[4] ? ' + in4[c]' : ''};`,
  ];
  return { body: lines.join('\n'), grid: { tile: [], per: 64 } };
};

export const batchNormStatsKernel: KernelGen = (sig, d) => {
  const x = sig.inputs[0]!;
  const inner = product(Array.from({ length: Math.max(x.rank - 2, 0) }, (_, k) => d.inDim(0, k + 2)));
  const reduce = (v: string) => [
    `partial[lid] = ${v};`,
    'workgroupBarrier();',
    'for (var s = 32u; s > 0u; s = s >> 1u) {',
    '  if (lid < s) { partial[lid] = partial[lid] + partial[lid + s]; }',
    '  workgroupBarrier();',
    '}',
  ];
  const lines = [
    `let C = ${d.inDim(0, 1)}; let inner = ${inner}; let count = ${d.inDim(0, 0)} * inner;`,
    'let c = wg;',
    'var s1 = 0.0;',
    'for (var e = lid; e < count; e += 64u) { s1 += in0[((e / inner) * C + c) * inner + e % inner]; }',
    ...reduce('s1'),
    'let mean = partial[0] / f32(count);',
    'workgroupBarrier();',
    'var s2 = 0.0;',
    'for (var e = lid; e < count; e += 64u) { let v = in0[((e / inner) * C + c) * inner + e % inner] - mean; s2 += v * v; }',
    ...reduce('s2'),
    'if (lid == 0u) { out0[c] = mean; out1[c] = partial[0] / f32(count); }',
  ];
  return { body: lines.join('\n'), grid: { tile: [], per: 1 }, decls: 'var<workgroup> partial: array<f32, 64>;' };
};

export const batchNormBackwardKernel: KernelGen = (sig, d) => {
  const x = sig.inputs[1]!;
  const eps = typeof sig.attrs.eps === 'number' ? sig.attrs.eps : 1e-5;
  const inner = product(Array.from({ length: Math.max(x.rank - 2, 0) }, (_, k) => d.inDim(1, k + 2)));
  // With relu_output (input 5): relu's gradient first, g where relu_output > 0.
  const grad = sig.inputs[5] ? 'select(0.0, in0[i], in5[i] > 0.0)' : 'in0[i]';
  const lines = [
    `let C = ${d.inDim(1, 1)}; let inner = ${inner}; let count = ${d.inDim(1, 0)} * inner;`,
    'let c = wg; let m = in2[c];',
    'var sg = 0.0; var sgx = 0.0;',
    `for (var e = lid; e < count; e += 64u) { let i = ((e / inner) * C + c) * inner + e % inner; let g = ${grad}; sg += g; sgx += g * (in1[i] - m); }`,
    'pg[lid] = sg; pgx[lid] = sgx;',
    'workgroupBarrier();',
    'for (var s = 32u; s > 0u; s = s >> 1u) {',
    '  if (lid < s) { pg[lid] = pg[lid] + pg[lid + s]; pgx[lid] = pgx[lid] + pgx[lid + s]; }',
    '  workgroupBarrier();',
    '}',
    `let invstd = 1.0 / sqrt(in3[c] + ${literal(eps, 'f32')});`,
    `let A = ${sig.inputs[4] ? 'in4[c]' : '1.0'} * invstd; let n = f32(count);`,
    'let B = -A * invstd * invstd * pgx[0] / n; let D = -A * pg[0] / n - B * m;',
    `for (var e = lid; e < count; e += 64u) { let i = ((e / inner) * C + c) * inner + e % inner; out0[i] = ${grad} * A + in1[i] * B + D; }`,
    'if (lid == 0u) { out1[c] = pgx[0] * invstd; out2[c] = pg[0]; }',
  ];
  // One workgroup per channel: the grid counts dim 1 of dx only (the others fit in one tile).
  return { body: lines.join('\n'), grid: { tile: [2 ** 30, 1, 2 ** 30], per: 1, merge: 2 }, decls: 'var<workgroup> pg: array<f32, 64>;\nvar<workgroup> pgx: array<f32, 64>;' };
};
