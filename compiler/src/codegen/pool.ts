// Pooling over [N, C, H, W]: one thread per output element walks its window. Invariant: the
// windows are exactly the CPU kernel's (ir-spec/src/kernels/pool.ts): fixed windows start at
// o·stride − pad with taps `dilation` apart and skip the padding (max reads it as −inf, avg as
// 0 with PyTorch's divisor rules); adaptive bins are [floor(i·H/o), ceil((i+1)·H/o)).

import type { KernelGen, KernelSig, DimsLayout } from './shell.js';

const pair = (v: unknown, dflt: number): [number, number] => (Array.isArray(v) ? [Number(v[0]), Number(v[1])] : [dflt, dflt]);

function prologue(d: DimsLayout): string[] {
  return [
    `let H = ${d.inDim(0, 2)}; let W = ${d.inDim(0, 3)};`,
    `let OH = ${d.outDim(0, 2)}; let OW = ${d.outDim(0, 3)};`,
    `let i = wg * 64u + lid;`,
    `if (i >= ${d.outDim(0, 0)} * ${d.outDim(0, 1)} * OH * OW) { return; }`,
    'let ow = i % OW; let oh = (i / OW) % OH; let plane = i / (OW * OH);',
    'let base = plane * H * W;',
  ];
}

/** Row and column bounds [y0, y1), [x0, x1) and tap steps of a fixed or adaptive window. */
function window(sig: KernelSig): string[] {
  const a = sig.attrs;
  if (sig.op.startsWith('adaptive')) {
    return [
      'let y0 = i32((oh * H) / OH); let y1 = i32(((oh + 1u) * H + OH - 1u) / OH);',
      'let x0 = i32((ow * W) / OW); let x1 = i32(((ow + 1u) * W + OW - 1u) / OW);',
      'let dy = 1; let dx = 1;',
    ];
  }
  const [kh, kw] = pair(a.kernel_size, 1), [sh, sw] = pair(a.stride, 1), [ph, pw] = pair(a.padding, 0), [dh, dw] = pair(a.dilation, 1);
  return [
    `let sy = i32(oh * ${sh}u) - ${ph}; let sx = i32(ow * ${sw}u) - ${pw};`,
    `let dy = ${dh}; let dx = ${dw};`,
    // First in-bounds tap, and the end of the window clipped to the plane.
    'let y0 = select(sy, sy + ((-sy + dy - 1) / dy) * dy, sy < 0); let x0 = select(sx, sx + ((-sx + dx - 1) / dx) * dx, sx < 0);',
    `let y1 = min(sy + ${(kh - 1) * dh + 1}, i32(H)); let x1 = min(sx + ${(kw - 1) * dw + 1}, i32(W));`,
  ];
}

export const maxPoolKernel: KernelGen = (sig, d) => {
  const lines = [...prologue(d), ...window(sig),
    'var best = 0.0; var at = -1; // the first in-bounds tap always wins',
    'for (var y = y0; y < y1; y += dy) {',
    '  for (var x = x0; x < x1; x += dx) {',
    '    let p = y * i32(W) + x;',
    '    let v = in0[base + u32(p)];',
    '    if (at < 0 || v > best || v != v) { best = v; at = p; }',
    '  }',
    '}',
    'out0[i] = best;',
    'out1[i] = at;',
  ];
  return { body: lines.join('\n'), grid: { tile: [], per: 64 } };
};

export const avgPoolKernel: KernelGen = (sig, d) => {
  const a = sig.attrs;
  const lines = [...prologue(d), ...window(sig), 'var s = 0.0;',
    'for (var y = y0; y < y1; y += dy) {',
    '  for (var x = x0; x < x1; x += dx) { s += in0[base + u32(y * i32(W) + x)]; }',
    '}'];
  if (sig.op.startsWith('adaptive')) lines.push('let div = f32((y1 - y0) * (x1 - x0));');
  else if (typeof a.divisor_override === 'number') lines.push(`let div = ${a.divisor_override}.0;`);
  else if (a.count_include_pad ?? true) {
    const [kh, kw] = pair(a.kernel_size, 1), [ph, pw] = pair(a.padding, 0);
    lines.push(`let div = f32((min(sy + ${kh}, i32(H) + ${ph}) - sy) * (min(sx + ${kw}, i32(W) + ${pw}) - sx));`);
  } else lines.push('let div = f32(max(y1 - y0, 0) * max(x1 - x0, 0));');
  lines.push('out0[i] = s / div;');
  return { body: lines.join('\n'), grid: { tile: [], per: 64 } };
};
