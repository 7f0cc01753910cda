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
export { PReLU, ELU, Softplus, Hardswish, Mish, Dropout2d } from './activation-extra.js';
export { Upsample, ZeroPad2d, ConstantPad2d, type UpsampleOptions, type UpsampleMode } from './resample.js';
export { MaxPool1d, AvgPool1d, AdaptiveMaxPool2d, InstanceNorm2d, EmbeddingBag, ParameterList, ParameterDict, type EmbeddingBagOptions } from './layers-extra.js';
export { ConvTranspose1d } from './conv.js';
export { RNNCell, LSTMCell, GRUCell, type RNNCellOptions } from './rnn-cell-layers.js';
export { RNN, type ElmanRNNOptions } from './rnn.js';
export {
  TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer, TransformerDecoder, Transformer, generateSquareSubsequentMask,
  type TransformerLayerOptions, type TransformerOptions, type EncoderForwardOptions, type DecoderForwardOptions,
} from './transformer.js';
export * as utils from './utils.js';
