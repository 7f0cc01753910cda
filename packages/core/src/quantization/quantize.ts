// quantizeDynamic (PyTorch's torch.quantization.quantize_dynamic): swaps every layer of the
// listed types for its dynamically quantized form. Invariant: without `inplace` the given model
// is left unchanged: the modules on the paths to swapped layers are copied (their other members
// shared), subtrees with nothing to quantize are shared as they are.

import { Linear } from '../nn/linear.js';
import { GRU, LSTM } from '../nn/rnn.js';
import { Module } from '../nn/module.js';
import { defaultGenerator } from '../random.js';
import { DynamicQuantizedLinear, type QScheme } from './linear.js';
import { DynamicQuantizedGRU, DynamicQuantizedLSTM } from './rnn.js';

/** The layer classes quantizeDynamic knows (matched by exact class, as PyTorch matches types). */
export type QuantizableLayer = typeof Linear | typeof LSTM | typeof GRU;

export interface QuantizeDynamicOptions {
  /** Layer classes to quantize (PyTorch's qconfig_spec set); default [nn.Linear, nn.LSTM, nn.GRU]. */
  layers?: readonly QuantizableLayer[];
  /** The weight type: 'qint8' (the only one; float16 weights are jit.optimizeForInference's). */
  dtype?: 'qint8';
  /** 'per_tensor' (default_dynamic_qconfig, the default) or 'per_channel' (per_channel_dynamic_qconfig). */
  qscheme?: QScheme;
  /**
   * Quantize activations to [0, 127] instead of [0, 255]: true (the default) as fbgemm and onednn,
   * PyTorch's x86 engines; false as qnnpack (ARM).
   */
  reduceRange?: boolean;
  /** Swap layers inside `model` itself (default false: `model` is left unchanged). */
  inplace?: boolean;
}

const DEFAULT_LAYERS: readonly QuantizableLayer[] = [Linear, LSTM, GRU];

function swapFor(m: Module, layers: readonly QuantizableLayer[], opts: { qscheme: QScheme; reduceRange: boolean }): Module | null {
  const cls = m.constructor;
  if (!layers.some((l) => l === cls)) return null;
  if (m instanceof LSTM) return DynamicQuantizedLSTM.fromFloat(m, opts);
  if (m instanceof GRU) return DynamicQuantizedGRU.fromFloat(m, opts);
  if (m instanceof Linear) return DynamicQuantizedLinear.fromFloat(m, opts);
  return null;
}

/**
 * A new instance of m's class (its constructor called with no arguments, so private members
 * exist; the random stream is restored after) holding m's own fields.
 */
function shallowCopy(m: Module, path: string): Module {
  const state = defaultGenerator.getState();
  let copy: Module;
  try {
    copy = Reflect.construct(m.constructor, []) as Module;
  } catch (e) {
    throw new Error(`quantizeDynamic: cannot copy '${path || 'the model'}' (${m.constructor.name}: its constructor needs arguments: ${(e as Error).message}); pass { inplace: true } to quantize the model itself`);
  } finally {
    defaultGenerator.setState(state);
  }
  for (const key of Object.keys(m)) Object.defineProperty(copy, key, { value: Reflect.get(m, key), writable: true, enumerable: true, configurable: true });
  return copy;
}

/**
 * Returns `model` with its Linear/LSTM/GRU submodules replaced by int8 dynamically quantized ones
 * (weights quantized once, activations per call), for inference on the CPU or in a .tsgraph.
 * As PyTorch, only submodules are swapped: a bare nn.Linear given as the model stays float
 * (wrap it: `new nn.Sequential(layer)`).
 * @example const q = quantization.quantizeDynamic(model, { layers: [nn.Linear, nn.LSTM], dtype: 'qint8' }); q.forward(x)
 */
export function quantizeDynamic<M extends Module>(model: M, opts: QuantizeDynamicOptions = {}): M {
  if (!(model instanceof Module)) throw new Error('quantizeDynamic: the first argument must be an nn.Module');
  const dtype = opts.dtype ?? 'qint8';
  if (dtype !== 'qint8') throw new Error(`quantizeDynamic: dtype '${String(dtype)}' is not supported; use 'qint8' (for float16 weights use jit.optimizeForInference(m, { weights: 'float16' }))`);
  const qscheme = opts.qscheme ?? 'per_tensor';
  if (qscheme !== 'per_tensor' && qscheme !== 'per_channel') throw new Error(`quantizeDynamic: qscheme must be 'per_tensor' or 'per_channel', got '${String(qscheme)}'`);
  const layers = opts.layers ?? DEFAULT_LAYERS;
  for (const l of layers) {
    if (!DEFAULT_LAYERS.includes(l)) throw new Error(`quantizeDynamic: layers may hold nn.Linear, nn.LSTM and nn.GRU, got ${(l as { name?: string })?.name ?? String(l)}`);
  }
  const q = { qscheme, reduceRange: opts.reduceRange ?? true };
  const inplace = opts.inplace ?? false;
  const visit = (m: Module, path: string): Module => {
    let out = m;
    for (const [name, child] of m.namedChildren()) {
      const swapped = swapFor(child, layers, q) ?? visit(child, path ? `${path}.${name}` : name);
      if (swapped === child) continue;
      if (out === m && !inplace) out = shallowCopy(m, path);
      for (const key of Object.keys(out)) if (Reflect.get(out, key) === child) Reflect.set(out, key, swapped);
    }
    return out;
  };
  return visit(model, '') as M;
}
