// The WebGPU backend of the runtime: device, kernel records and their keys.
export { createWebGpuDevice, type KernelCompileTime, type WebGpuDevice, type WebGpuDeviceOptions, type WebGpuStats } from './device.js';
export { gridSize, isKernelRecord, kernelKey, metaWords, splitGrid, type KernelGrid, type KernelRecord } from './kernel.js';
export { findGpu, requestAdapter } from './gpu.js';
export { DEFAULT_MAX_STORAGE_BUFFERS, kernelStorageBuffers, nodeBindingProblem, nodeStorageBuffers } from './bindings.js';
export type { KernelTime } from './profiler.js';
export { sizeClass, type PoolMemory } from './pool.js';
export { INDEX_ERROR_DECL } from './index-errors.js';
