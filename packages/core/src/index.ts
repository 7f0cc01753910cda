// @kiln/core: the eager library — Tensor, the dispatch, autograd, nn, optim.
export { Tensor, type TensorOrScalar, type IndexItem } from './tensor.js';
export { dispatch, dispatch1, withObserver, type DispatchObserver } from './dispatch.js';
export * from './creation.js';
export { Generator, manualSeed, randperm, defaultGenerator } from './random.js';
export { noGrad, enableGrad, inferenceMode, isGradEnabled, isInferenceMode, setGradEnabled } from './autograd/grad-mode.js';
export * as autograd from './autograd/index.js';
export * from './ops/elementwise.js';
export * from './ops/reduce.js';
export * from './ops/shape.js';
export * from './ops/indexing.js';
export * from './ops/linalg.js';
export * as F from './functional/index.js';
export * as nn from './nn/index.js';
export * as optim from './optim/index.js';
export * as utils from './utils/index.js';
export { loadSafetensors, saveSafetensors, parseSafetensors, SafetensorsError } from './safetensors.js';
