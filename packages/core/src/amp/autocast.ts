// Autocast (torch.autocast, PyTorch 1.13's CUDA op lists): inside `autocast(fn)`, the dispatch
// casts the floating inputs of each listed op before it runs. Invariant: the casts are ordinary
// `cast` ops through the dispatch, so autograd differentiates them and jit.trace / jit.script
// record them in the graph; ops on no list run in the dtype of their inputs. Backward runs with
// autocast off (PyTorch's backward runs on a thread where autocast is off).
//
// Ops that Kiln builds from several registry ops (softmax, layerNorm, the losses, …) are cast
// once at their entry by `autocastFloat32`, as PyTorch casts them at its single op.

import type { Tensor } from '../tensor.js';

export type AutocastDType = 'float16' | 'bfloat16';

export interface AutocastOptions {
  /** The reduced dtype of the lower-precision ops (default 'float16', PyTorch's CUDA default). */
  dtype?: AutocastDType;
  /** false runs `fn` with autocast off (also inside an enabled region). Default true. */
  enabled?: boolean;
}

/**
 * Registry ops on PyTorch 1.13's `lower_precision_fp` list (autocast_mode.cpp: conv*, matmul, mm,
 * bmm, addmm, baddbmm, linear, einsum, …: Kiln's bmm/addmm/baddbmm/einsum are built from
 * matmul). Their floating inputs are cast to the autocast dtype.
 */
export const LOWER_PRECISION_OPS: ReadonlySet<string> = new Set(['matmul', 'linear', 'conv2d', 'conv_transpose2d']);

/**
 * Registry ops on PyTorch's `fp32` and `fp32_set_opt_dtype` lists (exp, expm1, log, log1p,
 * rsqrt, pow, sum, prod, cumsum, …): reduced inputs are cast to float32.
 */
export const FLOAT32_OPS: ReadonlySet<string> = new Set(['exp', 'expm1', 'log', 'log1p', 'rsqrt', 'pow', 'sum', 'prod', 'cumsum']);

/** Registry ops on PyTorch's `promote` list: floating inputs are cast to the widest among them. */
export const PROMOTE_OPS: ReadonlySet<string> = new Set(['scatter_add']);

interface AutocastState { readonly enabled: boolean; readonly dtype: AutocastDType }
let state: AutocastState = { enabled: false, dtype: 'float16' };

/**
 * Runs `fn` with autocast: listed ops run in `dtype` (matmul, linear, conv) or float32 (softmax,
 * logSoftmax, layerNorm, groupNorm, losses, exp, log, pow, sum, …); returns what `fn` returns.
 * Parameters stay float32; call backward() outside.
 *
 * @example
 * const logits = autocast(() => model.forward(x));           // float16 where PyTorch uses it
 * const loss = autocast(() => F.crossEntropy(logits, y));    // float32 (the loss list)
 */
export function autocast<R>(fn: () => R, opts: AutocastOptions = {}): R {
  const dtype = opts.dtype ?? 'float16';
  if (dtype !== 'float16' && dtype !== 'bfloat16') throw new Error(`autocast: dtype must be 'float16' or 'bfloat16', got ${JSON.stringify(dtype)}`);
  const saved = state;
  state = { enabled: opts.enabled ?? true, dtype };
  try {
    const r = fn();
    if (r instanceof Promise) throw new Error('autocast: fn returned a Promise; autocast regions are synchronous (await outside, or call autocast inside the async function)');
    return r;
  } finally {
    state = saved;
  }
}

/** Whether autocast is on, and its dtype (torch.is_autocast_enabled / get_autocast_gpu_dtype). */
export function isAutocastEnabled(): boolean { return state.enabled; }
export function getAutocastDType(): AutocastDType { return state.dtype; }

/** Runs `fn` with autocast off (the backward pass). */
export function withoutAutocast<R>(fn: () => R): R {
  if (!state.enabled) return fn();
  const saved = state;
  state = { ...state, enabled: false };
  try { return fn(); } finally { state = saved; }
}

type Cast = (t: Tensor, dtype: 'float32' | AutocastDType) => Tensor;
const isReduced = (d: string) => d === 'float16' || d === 'bfloat16';

/** The inputs op `name` runs on under the current autocast state (the dispatch calls this). */
export function autocastInputs(name: string, inputs: readonly (Tensor | null)[], cast: Cast): readonly (Tensor | null)[] {
  if (!state.enabled) return inputs;
  if (LOWER_PRECISION_OPS.has(name)) {
    const to = state.dtype;
    return inputs.map((t) => (t && t.dtype === 'float32' ? cast(t, to) : t && isReduced(t.dtype) && t.dtype !== to ? cast(t, to) : t));
  }
  if (FLOAT32_OPS.has(name)) return inputs.map((t) => (t && isReduced(t.dtype) ? cast(t, 'float32') : t));
  if (PROMOTE_OPS.has(name)) {
    const floats = inputs.filter((t): t is Tensor => !!t && (t.dtype === 'float32' || isReduced(t.dtype)));
    const dtypes = new Set(floats.map((t) => t.dtype));
    if (dtypes.size <= 1) return inputs;
    const widest = dtypes.has('float32') || dtypes.size > 1 ? 'float32' : floats[0].dtype as AutocastDType;
    return inputs.map((t) => (t && floats.includes(t) && t.dtype !== widest ? cast(t, widest) : t));
  }
  return inputs;
}

let castOp: Cast | undefined;
/** The dispatch registers its cast here (amp cannot import the dispatch: it imports amp). */
export function setAutocastCast(c: Cast): void { castOp = c; }

/**
 * `ts` with float16/bfloat16 tensors cast to float32 when autocast is on: the entry of a
 * composite op on PyTorch's fp32 list (softmax, logSoftmax, logsumexp, layerNorm, groupNorm,
 * the losses, softplus).
 */
export function autocastFloat32<T extends Tensor | null | undefined>(t: T): T {
  if (!state.enabled || !t || !isReduced(t.dtype) || !castOp) return t;
  return castOp(t, 'float32') as T;
}
