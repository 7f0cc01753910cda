// WGSL codegen: graph → one compute shader per kernel node, keyed for the runtime's pipeline cache.
export { generateWgsl, kernelFor, type CodegenOptions, type CodegenResult, type Unsupported } from './emit.js';
export { KERNELS } from './table.js';
export type { KernelSig, TensorSig } from './shell.js';
