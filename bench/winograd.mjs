// Winograd F(4×4, 3×3) against the current WebAssembly conv (direct / im2col + packed GEMM) per
// 3×3 stride-1 shape, both with a pinned (constant) weight as the runtime's -O2 graphs have it,
// on one thread, measured side by side: the two kernels alternate run by run in one process, so
// load on the machine falls on both alike; times are the process's CPU time (process.cpuUsage),
// which a loaded machine distorts less than wall time. Imports the BUILT runtime (`npm run build` first).
// `node bench/winograd.mjs [--runs=N]`; prints median CPU ms of each, the ratio, and whether
// winograd4Applies (the rule conv dispatch uses) picks F(4×4) for the shape.

import os from 'node:os';
import { fastPrimitives, setNumThreads, winograd4Applies } from '@kiln/runtime';

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

const rand = (n, seed) => { const a = new Float32Array(n); let s = seed; for (let i = 0; i < n; i++) { s = (s * 1103515245 + 12345) >>> 0; a[i] = s / 2 ** 31 - 1; } return a; };
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };

setNumThreads(1);
const prims = fastPrimitives();
if (!prims.conv3x3) throw new Error('bench/winograd: no WebAssembly SIMD here (or KILN_WASM=0)');
const { direct: current, winograd4: wino } = prims.conv3x3;
console.log(`bench/winograd: ${prims.kind}, 1 thread, ${runs} runs each, alternating; uptime: ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
console.log('| shape | N | C→Cout | H×W | current ms | F(4×4) ms | current / F(4×4) | ratio of minima | max |Δ| | rule picks |');
console.log('| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |');
for (const [label, N, C, H, Cout, p] of SHAPES) {
  const OH = H + 2 * p - 2;
  const d = { N, C, H, W: H, Cout, G: 1, OH, OW: OH, win: { kh: 3, kw: 3, sh: 1, sw: 1, pt: p, pl: p, dh: 1, dw: 1 } };
  const x = rand(N * C * H * H, 1), w = rand(Cout * C * 9, 2).map((v) => v / Math.sqrt(C * 9)), b = rand(Cout, 3);
  prims.pin(w);
  const epi = { relu: true };
  const a = current(x, w, b, d, epi), c = wino(x, w, b, d, epi);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i] - c[i]));
  const ta = [], tc = [];
  const reps = Math.max(1, Math.round(3e7 / (N * C * Cout * OH * OH * 9)));
  for (let r = 0; r < runs; r++) {
    for (const [f, t] of r % 2 ? [[current, ta], [wino, tc]] : [[wino, tc], [current, ta]]) {
      const t0 = process.cpuUsage();
      for (let k = 0; k < reps; k++) f(x, w, b, d, epi);
      const u = process.cpuUsage(t0);
      t.push((u.user + u.system) / 1000 / reps);
    }
  }
  const ma = median(ta), mc = median(tc);
  console.log(`| ${label} | ${N} | ${C}→${Cout} | ${H}×${H}${p ? '' : ' p0'} | ${ma.toFixed(3)} | ${mc.toFixed(3)} | ${(ma / mc).toFixed(2)}× | ${(Math.min(...ta) / Math.min(...tc)).toFixed(2)}× | ${diff.toExponential(1)} | ${winograd4Applies(d) ? 'F(4×4)' : 'current'} |`);
}
