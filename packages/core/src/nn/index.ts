// nn — modules, layers and init (torch.nn).
export { Module, Parameter, type StateDict, type LoadResult } from './module.js';
export { Sequential, ModuleList, ModuleDict } from './container.js';
export { Identity, Linear, Flatten, Unflatten } from './linear.js';
export { Conv1d, Conv2d, ConvTranspose2d, type ConvOptions, type ConvTransposeOptions, type SizeArg } from './conv.js';
export { BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm, type BatchNormOptions } from './norm.js';
export { ReLU, LeakyReLU, GELU, SiLU, Sigmoid, Tanh, Softmax, LogSoftmax, Dropout } from './activation.js';
export { MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, type MaxPool2dOptions, type AvgPool2dOptions } from './pool.js';
export { Embedding, type EmbeddingOptions } from './embedding.js';
export { LSTM, GRU, type RNNOptions } from './rnn.js';
export { MultiheadAttention, NonDynamicallyQuantizableLinear, type MultiheadAttentionOptions, type AttentionForwardOptions } from './attention.js';
export * as init from './init.js';
export * from './loss.js';
