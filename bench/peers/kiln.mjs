// Kiln's rows of the peer benchmark: the traced seed model compiled at -O0 (one kernel per op) or
// -O2 and run by the runtime's WebGPU device on the GPU that ./gpu.mjs installs. Invariant: -O2
// uses every pass of LEVELS[2] when WGSL exists for all resulting nodes, else all but
// `prepack-weights` (whose packed layouts may be CPU-only); the chosen passes are reported.

import { createModel, createWebGpuDevice } from '@kiln/runtime';
import { LEVELS, generateWgsl, runPipeline } from '@kiln/compiler';
import { installGpu } from './gpu.mjs';

/** The graph compiled for WebGPU at -O`level`, with the passes used and what was dropped. */
export function compileForWebGpu(graph, level) {
  const all = runPipeline(graph, { passes: LEVELS[level] }).graph;
  const { kernels, unsupported } = generateWgsl(all);
  if (!unsupported.length) return { graph: all, kernels, dropped: [] };
  const passes = LEVELS[level].filter((p) => p !== 'prepack-weights');
  const g = runPipeline(graph, { passes }).graph;
  const gen = generateWgsl(g);
  if (gen.unsupported.length) {
    throw new Error(`bench/peers: -O${level} has no WGSL for ${gen.unsupported.map((u) => `${u.op} (${u.reason})`).join(', ')}; fix the WGSL codegen before benchmarking`);
  }
  return { graph: g, kernels: gen.kernels, dropped: passes.length < LEVELS[level].length ? ['prepack-weights'] : [] };
}

/**
 * Kiln on WebGPU at one -O level.
 * @param {import('@kiln/ir-spec').Graph} graph the traced seed model (dynamic batch)
 * @param {0 | 2} level
 */
export async function createKilnPeer(graph, level) {
  const gpu = await installGpu();
  const { graph: g, kernels, dropped } = compileForWebGpu(graph, level);
  const device = await createWebGpuDevice({ kernels, gpu });
  const model = createModel(g, { device });
  const note = dropped.length ? ` (without ${dropped.join(', ')})` : '';
  return {
    name: `Kiln WebGPU -O${level}${note}`,
    kernels: kernels.length,
    device,
    async run(x) {
      const [y] = await model.run([x]);
      return y.data;
    },
    async release() {
      device.destroy();
    },
  };
}
