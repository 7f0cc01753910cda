// @kiln/core: the eager library — Tensor, the dispatch, autograd, nn, optim.
export { Tensor, type TensorOrScalar, type IndexItem } from './tensor.js';
export { tidy, keep, DisposedError } from './lifetime.js';
export { dispatch, dispatch1, withObserver, addObserver, type DispatchObserver } from './dispatch.js';
export { initWebGpu, destroyWebGpu, webGpuDevice, device, synchronize, DeviceError, type DeviceName } from './device.js';
/** @internal jit.compile's graphs on WebGPU: tensors to and from the runtime's device tensors. */
export { deviceTensor, gpuTensorOf, writeGpu, scalarTensorGpu } from './device.js';
export { getNumThreads, setNumThreads } from '@kiln/runtime';
export * from './creation.js';
export { Generator, manualSeed, randperm, defaultGenerator } from './random.js';
export { noGrad, enableGrad, inferenceMode, isGradEnabled, isInferenceMode, setGradEnabled } from './autograd/grad-mode.js';
export * as autograd from './autograd/index.js';
export {
  add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge, neg, exp, log, sqrt, rsqrt,
  reciprocal, square, sin, cos, abs, sign, erf, relu, sigmoid, tanh, logicalNot, clone, clamp, gelu,
  where, maskedFill, cast,
} from './ops/elementwise.js';
export { floor, ceil, round, trunc, log1p, expm1, isnan, isfinite, isclose, allclose, type CloseOptions } from './ops/elementwise.js';
export { cumprod, any, all } from './ops/reduce.js';
export { sort, argsort, topk, type SortOptions } from './ops/sort.js';
export { einsum } from './ops/einsum.js';
export { narrow, roll, select, repeatInterleave } from './ops/shape.js';
export {
  sum, mean, prod, max, min, amax, amin, argmax, argmin, variance, std, logsumexp, norm, cumsum,
  softmax, logSoftmax,
} from './ops/reduce.js';
export {
  reshape, view, permute, transpose, t, expand, flatten, squeeze, unsqueeze, repeat, flip, cat, stack,
  split, chunk, unbind, slice, index,
} from './ops/shape.js';
export * from './ops/indexing.js';
export * from './ops/linalg.js';
export * as F from './functional/index.js';
export * as nn from './nn/index.js';
export * as optim from './optim/index.js';
export * as utils from './utils/index.js';
export * as quantization from './quantization/index.js';
export { loadSafetensors, saveSafetensors, parseSafetensors, SafetensorsError } from './safetensors.js';
export * as trace from './trace/index.js';
export * as memory from './memory.js';
export { attachModuleScopes, currentModuleScope, type ModuleScopeListener } from './nn/module-scope.js';
export * as amp from './amp/index.js';
export { autocast } from './amp/autocast.js';
