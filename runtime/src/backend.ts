// Backend choice. Invariant: the only place that maps a backend name to a Device, so adding a
// backend means adding a branch here (and the device), never touching the executor or Model.

import type { Graph } from '@kiln/ir-spec';
import { nodesWithoutKernels } from './coverage.js';
import { createCpuDevice } from './cpu-device.js';
import type { Device } from './device.js';
import { RuntimeError } from './errors.js';
import { createWebGpuDevice } from './webgpu/device.js';
import { requestAdapter } from './webgpu/gpu.js';
import { nodeBindingProblem } from './webgpu/bindings.js';

/**
 * `auto` picks WebGPU when the file's WGSL kernels cover every node of its graph and a hardware
 * adapter exists; else the CPU. A fallback adapter (a CPU emulation such as SwiftShader) is
 * slower than the CPU backend, so `auto` passes it over; ask for `webgpu` to use it anyway.
 */
export type BackendChoice = 'cpu' | 'webgpu' | 'auto';

export interface DeviceOptions {
  /** WGSL kernel records (a `.tsgraph` header's `kernels`), compiled now for WebGPU. */
  readonly kernels?: readonly unknown[];
  /** The graph the device will run: WebGPU needs a kernel for each of its nodes. */
  readonly graph?: Graph;
  /** WebGPU: time each dispatch with timestamp queries where the adapter has them (createWebGpuDevice's `profile: 'if-available'`). */
  readonly profile?: boolean;
}

const CHOICES: readonly string[] = ['cpu', 'webgpu', 'auto'];

/**
 * The device for a backend choice.
 *
 * @example
 * ```ts
 * const device = await createDevice('webgpu', { kernels: header.kernels });
 * ```
 */
export async function createDevice(backend: BackendChoice = 'auto', opts: DeviceOptions = {}): Promise<Device> {
  if (!CHOICES.includes(backend)) {
    throw new RuntimeError('BACKEND', `unknown backend ${JSON.stringify(backend)}; choose 'cpu', 'webgpu' or 'auto'`);
  }
  if (backend === 'cpu') return createCpuDevice();
  const kernels = opts.kernels ?? [];
  const missing = opts.graph ? nodesWithoutKernels(opts.graph, kernels) : [];
  if (backend === 'webgpu') {
    const over = missing.map((n) => nodeBindingProblem(n)).filter((p): p is string => p !== undefined);
    if (over.length) {
      throw new RuntimeError('BACKEND', `this file cannot run on WebGPU: ${over.length} node${over.length > 1 ? 's have' : ' has'} no kernel because ${over[0]}` +
        `${over.length > 1 ? ` (and ${over.length - 1} more)` : ''}. The file was optimized without respecting that limit (an older kiln's fusion); ` +
        "compile it again (fuse-elementwise now splits such chains), or use backend 'cpu' (or 'auto', which falls back to the CPU)");
    }
    if (missing.length) {
      const ops = [...new Set(missing.map((n) => n.op))].join(', ');
      throw new RuntimeError('BACKEND', `this file stores no WGSL kernel for ${missing.length} node${missing.length > 1 ? 's' : ''} (${ops}), so it cannot run on WebGPU; ` +
        "use backend 'cpu' (or 'auto', which falls back to the CPU), or compile it again with a kiln whose codegen covers these ops");
    }
    return createWebGpuDevice({ kernels, ...(opts.profile ? { profile: 'if-available' } : {}) });
  }
  // auto: WebGPU only for a file it can run to the end, and only on a hardware adapter.
  if (!kernels.length || missing.length) return createCpuDevice();
  try {
    const adapter = await requestAdapter();
    if (adapter.info?.isFallbackAdapter) return createCpuDevice();
    return await createWebGpuDevice({ kernels, ...(opts.profile ? { profile: 'if-available' } : {}) });
  } catch (e) {
    if (e instanceof RuntimeError && e.code === 'BACKEND') return createCpuDevice();
    throw e;
  }
}
