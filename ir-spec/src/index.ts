// @kiln/ir-spec: the op set and the contract every layer above relies on.
export * from './dtype.js';
export * from './shape.js';
export * from './op-def.js';
export * from './op-queries.js';
export * from './scalar.js';
export * from './random.js';
export * from './grad-builder.js';
export * from './ops/index.js';
export * from './ir/index.js';
export * from './tsgraph/index.js';
export * from './kernels/primitives.js';
export { KernelDeadline, kernelDeadlinePassed, kernelDeadlineSet, kernelInterrupted, kernelInterrupts, kernelTick, setKernelDeadline } from './kernels/deadline.js';
export * from './viz/index.js';
export { chooseQParams, nearbyint, quantizeActivations, quantizeWeight, requantizeToFloat, type ActivationQParams } from './kernels/quant.js';
