// Kiln's rows of the peer benchmark: the traced seed model compiled at -O0 (one kernel per op) or
// -O2 and run by the runtime's WebGPU device on the GPU that ./gpu.mjs installs (which packs 3×3
// conv weights for its Winograd kernels at load). Invariant: every pass of the level runs, and
// every resulting node has WGSL (else the script stops, naming the node).

import { createModel, createWebGpuDevice } from '@kiln/runtime';
import { LEVELS, generateWgsl, runPipeline } from '@kiln/compiler';
import { installGpu } from './gpu.mjs';

/** The graph compiled for WebGPU at -O`level`, and its kernels. */
export function compileForWebGpu(graph, level) {
  const g = runPipeline(graph, { passes: LEVELS[level] }).graph;
  const { kernels, unsupported } = generateWgsl(g);
  if (unsupported.length) {
    throw new Error(`bench/peers: -O${level} has no WGSL for ${unsupported.map((u) => `${u.op} (${u.reason})`).join(', ')}; fix the WGSL codegen before benchmarking`);
  }
  return { graph: g, kernels };
}

/**
 * Kiln on WebGPU at one -O level.
 * @param {import('@kiln/ir-spec').Graph} graph the traced seed model (dynamic batch)
 * @param {0 | 2} level
 */
export async function createKilnPeer(graph, level) {
  const gpu = await installGpu();
  const { graph: g, kernels } = compileForWebGpu(graph, level);
  const device = await createWebGpuDevice({ kernels, gpu });
  const model = createModel(g, { device });
  return {
    name: `Kiln WebGPU -O${level}`,
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
