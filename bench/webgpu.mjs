// WebGPU figures, measured on the BUILT packages (`npm run build` first): the small CNN of
// bench/runtime.mjs ([N,3,32,32], conv-relu-pool ×2, linear) at batch 1 and 32, on the CPU
// executor and on WebGPU through Dawn (npm `webgpu`), each at -O0 (one kernel per op) and -O2
// (the compiler's fused graph, every pass of the level; 3×3 convs run the Winograd variant over
// weights the device packs at load), measured side by side in one process: median latency per run,
// dispatches per run, kernels compiled and the time to compile them (load). Without a GPU the
// WebGPU rows run on SwiftShader, a CPU emulation of Vulkan: its absolute figures say little
// about a real GPU; compare the -O2/-O0 ratio. `node bench/webgpu.mjs [--quick] [--profile] [--seed]` prints a
// table (--profile: GPU time per kernel at batch 32 from timestamp queries; --seed: also the seed
// ResearchModel, 3 runs per row: slow on SwiftShader).

import { mkdirSync } from 'node:fs';
import { decodeTsgraph } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice } from '@kiln/runtime';
import { LEVELS, generateWgsl, runPipeline } from '@kiln/compiler';
import { jit, manualSeed, randn } from 'kiln';
import { ResearchModel, seedInputShape } from '../examples/seed/models.mjs';
import { smallCnnTsgraph } from './runtime.mjs';
import { seededValues, isMain, summarize } from './stats.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

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

/** The seed ResearchModel (eval) traced with a dynamic batch. */
function seedGraph() {
  manualSeed(0);
  const model = new ResearchModel();
  model.eval();
  return jit.trace(model, [randn(seedInputShape(1))], { dynamicAxes: { 0: { 0: 'N' } }, warn: false, checkTrace: false }).graph;
}

/** The benchmarked models: graph builders by name. */
export const MODELS = {
  'small CNN': () => decodeTsgraph(smallCnnTsgraph()).graph,
  'seed ResearchModel': seedGraph,
};

/**
 * WebGPU rows for one model (input [N, 3, 32, 32]).
 * @param {{ model?: keyof typeof MODELS, quick?: boolean, log?: (s: string) => void }} [opts]
 */
export async function benchWebGpu({ model = 'small CNN', quick = false, log = () => {} } = {}) {
  const graph = MODELS[model]();
  const heavy = model !== 'small CNN';
  const timing = quick || heavy ? { warmup: 1, minRuns: 3, maxRuns: heavy ? 3 : 30, budgetMs: 1500 } : { warmup: 2, minRuns: 7, budgetMs: 6000 };
  const rows = [];
  for (const level of [0, 2]) {
    const g = runPipeline(graph, { level }).graph;
    const { kernels, unsupported } = generateWgsl(g);
    if (unsupported.length) throw new Error(`-O${level}: no WGSL for ${unsupported.map((u) => `${u.op} (${u.reason})`).join(', ')}`);
    const t0 = performance.now();
    const device = await createWebGpuDevice({ kernels });
    const loadMs = performance.now() - t0;
    const gpu = createModel(g, { device });
    const cpu = createModel(runPipeline(graph, { level }).graph); // the CPU at its own full -O level
    for (const n of [1, 32]) {
      const x = { data: seededValues(n * 3 * 32 * 32, 7 + n), shape: [n, 3, 32, 32], dtype: 'float32' };
      log(`${model} -O${level} batch ${n} ...`);
      const before = device.stats.dispatches;
      await gpu.run([x]);
      const dispatches = device.stats.dispatches - before;
      const gpuMs = await timeAsync(() => gpu.run([x]), timing);
      const cpuMs = await timeAsync(async () => cpu.runSync([x]), timing);
      rows.push({ model, level, batch: n, backend: 'webgpu', ms: summarize(gpuMs), dispatches, kernels: kernels.length, loadMs });
      rows.push({ model, level, batch: n, backend: 'cpu', ms: summarize(cpuMs), dispatches: null, kernels: null, loadMs: null });
    }
    device.destroy();
  }
  return rows;
}

/**
 * GPU time per kernel (timestamp queries) of one run of the small CNN at batch `n`, per level.
 * @returns {Promise<{ level: number, times: { name: string, calls: number, ms: number }[] }[]>}
 */
export async function profileWebGpu(n = 32) {
  const { graph } = decodeTsgraph(smallCnnTsgraph());
  const out = [];
  for (const level of [0, 2]) {
    const g = runPipeline(graph, { level }).graph;
    const device = await createWebGpuDevice({ kernels: generateWgsl(g).kernels, profile: true });
    const model = createModel(g, { device });
    const x = { data: seededValues(n * 3 * 32 * 32, 7 + n), shape: [n, 3, 32, 32], dtype: 'float32' };
    await model.run([x]);
    await device.profile({ reset: true }); // the first run warms up
    await model.run([x]);
    out.push({ level, times: await device.profile() });
    device.destroy();
  }
  return out;
}

if (isMain(import.meta.url)) {
  const profiled = process.argv.includes('--profile') ? await profileWebGpu(32) : [];
  const models = process.argv.includes('--seed') ? Object.keys(MODELS) : ['small CNN'];
  const rows = [];
  for (const model of models) rows.push(...await benchWebGpu({ model, quick: process.argv.includes('--quick'), log: (s) => process.stderr.write(`${s}\n`) }));
  console.log('input [N,3,32,32]; medians; WebGPU = Dawn on SwiftShader (a CPU emulation of Vulkan) unless a GPU is present');
  console.log(`-O2 = every pass, on both backends: ${LEVELS[2].join(', ')}`);
  console.log('| model | level | batch | backend | median ms (min-max, runs) | dispatches/run | kernels | compile ms |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    console.log(`| ${r.model} | -O${r.level} | ${r.batch} | ${r.backend} | ${r.ms.median.toFixed(2)} (${r.ms.min.toFixed(2)}-${r.ms.max.toFixed(2)}, ${r.ms.runs}) | ${r.dispatches ?? '-'} | ${r.kernels ?? '-'} | ${r.loadMs === null ? '-' : r.loadMs.toFixed(0)} |`);
  }
  for (const model of models) {
    for (const n of [1, 32]) {
      const at = (level, backend) => rows.find((r) => r.model === model && r.level === level && r.batch === n && r.backend === backend);
      const o0 = at(0, 'webgpu'), o2 = at(2, 'webgpu');
      console.log(`${model}, batch ${n}: WebGPU -O0/-O2 latency ${(o0.ms.median / o2.ms.median).toFixed(2)}x, dispatches ${o0.dispatches} -> ${o2.dispatches}; CPU -O2 is ${(o2.ms.median / at(2, 'cpu').ms.median).toFixed(1)}x faster than WebGPU -O2`);
    }
  }
  for (const { level, times } of profiled) {
    console.log(`small CNN -O${level}, batch 32, GPU time per kernel (timestamp queries): ${times.map((t) => `${t.name} ${t.ms.toFixed(1)} ms (${t.calls})`).join(', ')}`);
  }
}
