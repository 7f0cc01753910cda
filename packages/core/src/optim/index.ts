// optim — optimizers (torch.optim). Each update is one fused loop per parameter under noGrad.
export { Optimizer, type ParamGroup, type ParamGroupSpec, type ParamState, type ParamsArg, type OptimizerStateDict } from './optimizer.js';
export { SGD, type SGDOptions, type SGDState } from './sgd.js';
export { Adam, AdamW, type AdamOptions, type AdamState } from './adam.js';
export { RMSprop, type RMSpropOptions, type RMSpropState } from './rmsprop.js';
export { Adagrad, type AdagradOptions, type AdagradState } from './adagrad.js';
export * as lrScheduler from './lr-scheduler.js';
