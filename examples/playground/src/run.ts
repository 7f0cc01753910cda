// Running a `.tsgraph` in the page: WebGPU when asked (or `auto` and it can), else the CPU
// device with the reason shown; one warm-up run, then one profiled run whose device dispatches
// are timed one by one. Invariant: the outputs are those of the runtime's own Model on the
// chosen device (the timing wrapper only observes calls), so they equal what `load()` gives.

import { decodeTsgraph, type DType } from '@kiln/ir-spec';
import { createDevice, createModel, nodesWithoutKernels, type Device, type InputValue, type Output } from '@kiln/runtime';

export interface KernelTiming { readonly op: string; readonly calls: number; readonly ms: number }

export interface RunReport {
  readonly backend: 'cpu' | 'webgpu';
  /** Why the CPU ran when WebGPU was wanted (undefined when WebGPU ran, or the CPU was asked for). */
  readonly fallback?: string;
  readonly outputs: readonly Output[];
  /** Host time per op over the profiled run's dispatches (on WebGPU: encoding and submission; the GPU finishes asynchronously). */
  readonly kernels: readonly KernelTiming[];
  readonly firstRunMs: number;
  readonly runMs: number;
  readonly peakIntermediateBytes: number;
  readonly totalIntermediateBytes: number;
  readonly weightBytes: number;
  readonly fileBytes: number;
  readonly nodesRun: number;
}

export type BackendWish = 'auto' | 'webgpu' | 'cpu';

/** Why WebGPU cannot run this file here, or undefined when it can try. */
async function webgpuUnavailable(kernelsMissing: readonly string[]): Promise<string | undefined> {
  if (kernelsMissing.length) return `the file has no WGSL kernel for ${[...new Set(kernelsMissing)].join(', ')}`;
  const gpu = (globalThis as { navigator?: { gpu?: { requestAdapter(): Promise<unknown> } } }).navigator?.gpu;
  if (!gpu) return 'this browser has no WebGPU (navigator.gpu is missing; Chrome 113+, or start Chromium with --enable-unsafe-webgpu)';
  if (!(await gpu.requestAdapter())) return 'navigator.gpu.requestAdapter() found no adapter';
  return undefined;
}

/** A device whose dispatch calls are timed into `times` (op → [calls, ms]) while `profiling.on`. */
function timed(device: Device, times: Map<string, [number, number]>, profiling: { on: boolean }): Device {
  return new Proxy(device, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (key !== 'dispatch' || typeof v !== 'function') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return (op: string, ...rest: unknown[]) => {
        if (!profiling.on) return (v as (...a: unknown[]) => unknown).call(target, op, ...rest);
        const t = performance.now();
        try {
          return (v as (...a: unknown[]) => unknown).call(target, op, ...rest);
        } finally {
          const e = times.get(op) ?? [0, 0];
          e[0]++; e[1] += performance.now() - t;
          times.set(op, e);
        }
      };
    },
  });
}

/** Loads `bytes` on the wished backend and runs `inputs` twice (warm-up, then profiled). */
export async function runBytes(bytes: Uint8Array, inputs: readonly InputValue[], wish: BackendWish): Promise<RunReport> {
  const { graph, header } = decodeTsgraph(bytes);
  let fallback: string | undefined;
  let device: Device | undefined;
  if (wish !== 'cpu') {
    fallback = await webgpuUnavailable(nodesWithoutKernels(graph, header.kernels).map((n) => n.op));
    if (!fallback) {
      try {
        device = await createDevice('webgpu', { kernels: header.kernels, graph });
      } catch (e) {
        fallback = `the WebGPU device failed to start: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
  }
  device ??= await createDevice('cpu', { kernels: header.kernels, graph });
  const times = new Map<string, [number, number]>();
  const profiling = { on: false };
  const model = createModel(graph, { device: timed(device, times, profiling), verify: false });
  let t = performance.now();
  await model.run(inputs);
  const firstRunMs = performance.now() - t;
  profiling.on = true;
  t = performance.now();
  const outputs = await model.run(inputs);
  const runMs = performance.now() - t;
  profiling.on = false;
  let weightBytes = 0;
  for (const tensor of graph.tensors.values()) weightBytes += tensor.data.byteLength;
  return {
    backend: device.backend === 'webgpu' ? 'webgpu' : 'cpu', fallback: wish === 'cpu' ? undefined : fallback, outputs,
    kernels: [...times].map(([op, [calls, ms]]) => ({ op, calls, ms })).sort((a, b) => b.ms - a.ms),
    firstRunMs, runMs, peakIntermediateBytes: model.stats?.peakIntermediateBytes ?? 0, totalIntermediateBytes: model.stats?.totalIntermediateBytes ?? 0,
    nodesRun: model.stats?.nodesRun ?? 0, weightBytes, fileBytes: bytes.length,
  };
}

/** Plain-array form of an output, for JSON (tests) and display. */
export function plainOutput(o: Output): { name: string; shape: number[]; dtype: DType; data: number[] } {
  return { name: o.name, shape: [...o.shape], dtype: o.dtype, data: Array.from(o.data as ArrayLike<number>) };
}
