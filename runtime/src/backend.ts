// Backend choice. Invariant: the only place that maps a backend name to a Device, so adding
// WebGPU means adding a branch here (and the device), never touching the executor or Model.

import { createCpuDevice } from './cpu-device.js';
import type { Device } from './device.js';
import { RuntimeError } from './errors.js';

/** `auto` picks the best backend available (today: the CPU). */
export type BackendChoice = 'cpu' | 'webgpu' | 'auto';

const CHOICES: readonly string[] = ['cpu', 'webgpu', 'auto'];

/**
 * The device for a backend choice.
 *
 * @example
 * ```ts
 * const device = await createDevice('auto'); // the CPU device today
 * ```
 */
export async function createDevice(backend: BackendChoice = 'auto'): Promise<Device> {
  if (!CHOICES.includes(backend)) {
    throw new RuntimeError('BACKEND', `unknown backend ${JSON.stringify(backend)}; choose 'cpu', 'webgpu' or 'auto'`);
  }
  if (backend === 'webgpu') {
    throw new RuntimeError('BACKEND', "the WebGPU backend is not available yet (it arrives with a later issue); use backend: 'cpu', or 'auto' to pick the best available");
  }
  return createCpuDevice();
}
