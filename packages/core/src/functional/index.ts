// F — the functional forms of layers and losses (torch.nn.functional).
export * from './activation.js';
export * from './conv.js';
export * from './pool.js';
export * from './norm.js';
export * from './loss.js';
export * from './embedding.js';
export { linear } from '../ops/linalg.js';
export { softmax, logSoftmax } from '../ops/reduce.js';
export * from './pad.js';
export * from './interpolate.js';
export * from './attention.js';
