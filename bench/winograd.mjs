// Winograd F(4×4, 3×3) against the current WebAssembly conv (direct / im2col + packed GEMM) per
// 3×3 stride-1 shape, both with a pinned (constant) weight as the runtime's -O2 graphs have it;
// then Winograd F(2×2, 3×3) against the direct conv with a weight that is not a constant (eager
// mode, training), its transform made per call, results written into a kernel-memory array as an
// arena slot or recycled result is. On one thread, measured side by side: the two kernels
// alternate run by run in one process, so load on the machine falls on both alike; times are the
// process's CPU time (process.cpuUsage), which a loaded machine distorts less than wall time.
// Imports the BUILT runtime (`npm run build` first). `node bench/winograd.mjs [--runs=N]`;
// prints median CPU ms of each, the ratio, and whether the rule conv dispatch uses
// (winograd4Applies, winograd2Applies) picks the Winograd form for the shape.

import os from 'node:os';
import { createCpuDevice, fastPrimitives, setNumThreads, winograd2Applies, winograd4Applies } from '@kiln/runtime';

const runs = Number(process.argv.find((a) => a.startsWith('--runs='))?.split('=')[1] ?? 15);
/** [label, N, C, H (= W), Cout, padding]: the seed CNN's and the small ResNet's convs, then a sweep. */
const SHAPES = [
  ['seed conv1 b1', 1, 3, 32, 64, 1], ['seed conv1 b32', 32, 3, 32, 64, 1],
  ['seed conv2 b1', 1, 64, 16, 128, 1], ['seed conv2 b32', 32, 64, 16, 128, 1],
  ['resnet stem b1', 1, 3, 32, 16, 1],
  ['resnet block b1', 1, 16, 32, 16, 1], ['resnet block b16', 16, 16, 32, 16, 1],
  ['8→8 32²', 1, 8, 32, 8, 1], ['32→32 32²', 1, 32, 32, 32, 1], ['32→32 8²', 4, 32, 8, 32, 1],
  ['64→64 8²', 1, 64, 8, 64, 1], ['64→64 4²', 8, 64, 4, 64, 1], ['128→128 8²', 1, 128, 8, 128, 1],
  ['64→64 56²', 1, 64, 56, 64, 1], ['256→256 14²', 1, 256, 14, 256, 1], ['16→64 24² p0', 2, 16, 24, 64, 0],
];

/** [label, N, C, H (= W), Cout]: weights that change (padding 1): the digits CNN's training step, then a sweep. */
const CHANGING = [
  ['digits conv2 b32', 32, 16, 8, 32], ['digits conv2 input grad b32', 32, 32, 8, 16],
  ['seed conv2 b1', 1, 64, 16, 128], ['seed conv2 b32', 32, 64, 16, 128], ['16→16 32² b1', 1, 16, 32, 16], ['16→16 16² b32', 32, 16, 16, 16],
  ['64→64 8² b1', 1, 64, 8, 64], ['64→64 28² b8', 8, 64, 28, 64], ['64→64 56² b1', 1, 64, 56, 64], ['128→128 14² b4', 4, 128, 14, 128],
];

const rand = (n, seed) => { const a = new Float32Array(n); let s = seed; for (let i = 0; i < n; i++) { s = (s * 1103515245 + 12345) >>> 0; a[i] = s / 2 ** 31 - 1; } return a; };
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };

setNumThreads(1);
const prims = fastPrimitives();
if (!prims.conv3x3) throw new Error('bench/winograd: no WebAssembly SIMD here (or KILN_WASM=0)');
const { direct: current, winograd4: wino, winograd2: wino2 } = prims.conv3x3;

/** Median CPU ms per call of kernels `a` and `b` (alternating), and the largest |difference| of their outputs. */
function sideBySide(a, b, x, w, bias, d, epi) {
  const ya = a(x, w, bias, d, epi ? { ...epi, out: epi.out?.slice() } : epi), yb = b(x, w, bias, d, epi);
  let diff = 0;
  for (let i = 0; i < ya.length; i++) diff = Math.max(diff, Math.abs(ya[i] - yb[i]));
  const ta = [], tb = [];
  const reps = Math.max(1, Math.round(3e7 / (d.N * d.C * d.Cout * d.OH * d.OW * 9)));
  for (let r = 0; r < runs; r++) {
    for (const [f, t] of r % 2 ? [[a, ta], [b, tb]] : [[b, tb], [a, ta]]) {
      const t0 = process.cpuUsage();
      for (let k = 0; k < reps; k++) f(x, w, bias, d, epi);
      const u = process.cpuUsage(t0);
      t.push((u.user + u.system) / 1000 / reps);
    }
  }
  return { ma: median(ta), mb: median(tb), minRatio: Math.min(...ta) / Math.min(...tb), diff };
}

const dimsOf = (N, C, H, Cout, p) => ({ N, C, H, W: H, Cout, G: 1, OH: H + 2 * p - 2, OW: H + 2 * p - 2, win: { kh: 3, kw: 3, sh: 1, sw: 1, pt: p, pl: p, dh: 1, dw: 1 } });

console.log(`bench/winograd: ${prims.kind}, 1 thread, ${runs} runs each, alternating; uptime: ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
console.log('\nConstant (pinned) weights:\n');
console.log('| shape | N | C→Cout | H×W | current ms | F(4×4) ms | current / F(4×4) | ratio of minima | max |Δ| | rule picks |');
console.log('| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |');
for (const [label, N, C, H, Cout, p] of SHAPES) {
  const d = dimsOf(N, C, H, Cout, p);
  const x = rand(N * C * H * H, 1), w = rand(Cout * C * 9, 2).map((v) => v / Math.sqrt(C * 9)), b = rand(Cout, 3);
  prims.pin(w);
  const r = sideBySide(current, wino, x, w, b, d, { relu: true });
  console.log(`| ${label} | ${N} | ${C}→${Cout} | ${H}×${H}${p ? '' : ' p0'} | ${r.ma.toFixed(3)} | ${r.mb.toFixed(3)} | ${(r.ma / r.mb).toFixed(2)}× | ${r.minRatio.toFixed(2)}× | ${r.diff.toExponential(1)} | ${winograd4Applies(d) ? 'F(4×4)' : 'current'} |`);
}
console.log('\nWeights that change (eager, training), outputs into kernel memory:\n');
console.log('| shape | N | C→Cout | H×W | direct ms | F(2×2) ms | direct / F(2×2) | ratio of minima | max |Δ| | rule picks |');
console.log('| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |');
for (const [label, N, C, H, Cout] of CHANGING) {
  const d = dimsOf(N, C, H, Cout, 1);
  const x = rand(N * C * H * H, 4), w = rand(Cout * C * 9, 5).map((v) => v / Math.sqrt(C * 9));
  const out = createCpuDevice().residentArray?.('float32', N * Cout * d.OH * d.OW);
  const r = sideBySide(current, wino2, x, w, null, d, out ? { out } : undefined);
  console.log(`| ${label} | ${N} | ${C}→${Cout} | ${H}×${H} | ${r.ma.toFixed(3)} | ${r.mb.toFixed(3)} | ${(r.ma / r.mb).toFixed(2)}× | ${r.minRatio.toFixed(2)}× | ${r.diff.toExponential(1)} | ${winograd2Applies(d) ? 'F(2×2)' : 'direct'} |`);
}
