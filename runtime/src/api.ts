// What both entry points export besides load(): the model, the device contract, errors and
// types. Invariant: nothing here imports a Node built-in or reads a string source.

export { Model, createModel, type IOInfo, type ModelOptions, type Output, type RunStats } from './model.js';
export { RuntimeError, RUNTIME_ERROR_CODES, type RuntimeErrorCode } from './errors.js';
export { createDevice, type BackendChoice, type DeviceOptions } from './backend.js';
export * from './webgpu/index.js';
export { createCpuDevice } from './cpu-device.js';
export { fastPrimitives, getNumThreads, setNumThreads, type FastPrimitives } from './wasm/primitives.js';
export { winograd4Applies } from './wasm/winograd.js';
export { winograd2Applies } from './wasm/winograd2.js';
export { nodesWithoutKernels } from './coverage.js';
export type { Arena, BackendName, Device, DeviceRecorder, DeviceTensor, DispatchTimer, RecordedWork } from './device.js';
export { freshCopy, readsBack, type DeviceInput } from './device-run.js';
export type { InputValue, TensorInput } from './validate.js';
export type { HostFunction, HostValue } from './executor.js';
export type { LoadOptions, ModelSource } from './load.js';
export { setNodeProfiler, nodeProfiler, coveredNodes, type NodeProfiler, type NodeEvent, type RunEvent, type CoveredNode } from './node-profiler.js';
