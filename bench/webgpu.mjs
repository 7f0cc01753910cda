// WebGPU figures, measured on the BUILT packages (`npm run build` first): the small CNN of
// bench/runtime.mjs ([N,3,32,32], conv-relu-pool ×2, linear) at batch 1 and 32, on the CPU
// executor and on WebGPU through Dawn (npm `webgpu`), each at -O0 (one kernel per op) and -O2
// (the compiler's fused graph), measured side by side in one process: median latency per run,
// dispatches per run, kernels compiled and the time to compile them (load). Without a GPU the
// WebGPU rows run on SwiftShader, a CPU emulation of Vulkan: its absolute figures say little
// about a real GPU; compare the -O2/-O0 ratio. `node bench/webgpu.mjs [--quick]` prints a table.

import { mkdirSync } from 'node:fs';
import { decodeTsgraph } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice } from '@kiln/runtime';
import { generateWgsl, runPipeline } from '@kiln/compiler';
import { smallCnnTsgraph } from './runtime.mjs';
import { isMain, summarize } from './stats.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

/** Deterministic values in [-0.5, 0.5). */
function values(n, seed) {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 32 - 0.5;
  }
  return out;
}

/** Milliseconds of each timed call of async `fn`, after `warmup` untimed calls. */
async function timeAsync(fn, { warmup = 2, minRuns = 5, maxRuns = 30, budgetMs = 4000 } = {}) {
  for (let i = 0; i < warmup; i++) await fn();
  const samples = [];
  const start = performance.now();
  while (samples.length < minRuns || (samples.length < maxRuns && performance.now() - start < budgetMs)) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return samples;
}

/**
 * WebGPU rows for the small CNN.
 * @param {{ quick?: boolean, log?: (s: string) => void }} [opts]
 */
export async function benchWebGpu({ quick = false, log = () => {} } = {}) {
  const { graph } = decodeTsgraph(smallCnnTsgraph());
  const timing = quick ? { warmup: 1, minRuns: 3, budgetMs: 1500 } : { warmup: 2, minRuns: 7, budgetMs: 6000 };
  const rows = [];
  for (const level of [0, 2]) {
    const g = runPipeline(graph, { level }).graph;
    const { kernels, unsupported } = generateWgsl(g);
    if (unsupported.length) throw new Error(`-O${level}: no WGSL for ${unsupported.map((u) => `${u.op} (${u.reason})`).join(', ')}`);
    const t0 = performance.now();
    const device = await createWebGpuDevice({ kernels });
    const loadMs = performance.now() - t0;
    const gpu = createModel(g, { device });
    const cpu = createModel(g);
    for (const n of [1, 32]) {
      const x = { data: values(n * 3 * 32 * 32, 7 + n), shape: [n, 3, 32, 32], dtype: 'float32' };
      log(`-O${level} batch ${n} ...`);
      const before = device.stats.dispatches;
      await gpu.run([x]);
      const dispatches = device.stats.dispatches - before;
      const gpuMs = await timeAsync(() => gpu.run([x]), timing);
      const cpuMs = await timeAsync(async () => cpu.runSync([x]), timing);
      rows.push({ level, batch: n, backend: 'webgpu', ms: summarize(gpuMs), dispatches, kernels: kernels.length, loadMs });
      rows.push({ level, batch: n, backend: 'cpu', ms: summarize(cpuMs), dispatches: null, kernels: null, loadMs: null });
    }
    device.destroy();
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const rows = await benchWebGpu({ quick: process.argv.includes('--quick'), log: (s) => process.stderr.write(`${s}\n`) });
  const adapterNote = 'WebGPU = Dawn on SwiftShader (CPU emulation) unless a GPU is present';
  console.log(`small CNN [N,3,32,32]; medians; ${adapterNote}`);
  console.log('| level | batch | backend | median ms (min-max, runs) | dispatches/run | kernels | compile ms |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    console.log(`| -O${r.level} | ${r.batch} | ${r.backend} | ${r.ms.median.toFixed(2)} (${r.ms.min.toFixed(2)}-${r.ms.max.toFixed(2)}, ${r.ms.runs}) | ${r.dispatches ?? '-'} | ${r.kernels ?? '-'} | ${r.loadMs === null ? '-' : r.loadMs.toFixed(0)} |`);
  }
  for (const n of [1, 32]) {
    const at = (level, backend) => rows.find((r) => r.level === level && r.batch === n && r.backend === backend);
    const o0 = at(0, 'webgpu'), o2 = at(2, 'webgpu');
    console.log(`batch ${n}: WebGPU -O0/-O2 latency ${(o0.ms.median / o2.ms.median).toFixed(2)}x, dispatches ${o0.dispatches} -> ${o2.dispatches}; WebGPU -O2 vs CPU -O2 ${(at(2, 'cpu').ms.median / o2.ms.median).toFixed(2)}x`);
  }
}
