// Backend choice. Invariant: the only place that maps a backend name to a Device, so adding a
// backend means adding a branch here (and the device), never touching the executor or Model.

import { createCpuDevice } from './cpu-device.js';
import type { Device } from './device.js';
import { RuntimeError } from './errors.js';
import { createWebGpuDevice } from './webgpu/device.js';

/** `auto` picks WebGPU when an adapter exists and the file carries WGSL kernels, else the CPU. */
export type BackendChoice = 'cpu' | 'webgpu' | 'auto';

export interface DeviceOptions {
  /** WGSL kernel records (a `.tsgraph` header's `kernels`), compiled now for WebGPU. */
  readonly kernels?: readonly unknown[];
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
  if (backend === 'webgpu') return createWebGpuDevice({ kernels: opts.kernels ?? [] });
  // auto: WebGPU only for a file that carries kernels, and only when an adapter is there.
  if (!opts.kernels?.length) return createCpuDevice();
  try {
    return await createWebGpuDevice({ kernels: opts.kernels });
  } catch (e) {
    if (e instanceof RuntimeError && e.code === 'BACKEND') return createCpuDevice();
    throw e;
  }
}
