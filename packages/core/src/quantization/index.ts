// quantization — dynamic int8 quantization (torch.quantization / torch.ao.quantization).
export { quantizeDynamic, type QuantizeDynamicOptions, type QuantizableLayer } from './quantize.js';
export { DynamicQuantizedLinear, quantizedLinear, quantizeWeightTensor, type QScheme, type QuantizedWeight } from './linear.js';
export { DynamicQuantizedLSTM, DynamicQuantizedGRU } from './rnn.js';
