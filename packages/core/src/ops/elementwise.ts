// Function forms of the elementwise ops, the scalar-operand rule, and the in-place protocol.
// Every function here ends in the dispatch; composites are a few lines over primitives.

import { scalarDType, fmtShape, type DType } from '@kiln/ir-spec';
import { Tensor, type TensorOrScalar } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import { isGradEnabled } from '../autograd/grad-mode.js';
import { traceHooks } from '../trace/hooks.js';
import { tensorsMade } from '../lifetime.js';
import { cloneGpu, copyGpu, DeviceError } from '../device.js';

/** A JS number next to tensor `like` becomes a 0-d constant of PyTorch's promoted dtype. */
export function toTensor(v: TensorOrScalar, like: Tensor): Tensor {
  return typeof v === 'number' ? Tensor._scalar(v, scalarDType(v, like.dtype)) : v;
}
function bin(op: string, a: TensorOrScalar, b: TensorOrScalar): Tensor {
  if (typeof a === 'number' && typeof b === 'number') throw new Error(`${op}: at least one operand must be a Tensor`);
  const ta = typeof a === 'number' ? toTensor(a, b as Tensor) : a;
  return dispatch1(op, [ta, toTensor(b, ta)]);
}
const un = (op: string, x: Tensor): Tensor => dispatch1(op, [x]);

/** a + alpha * b with broadcasting; a JS number operand follows PyTorch's scalar promotion. */
export function add(a: TensorOrScalar, b: TensorOrScalar, opts: { alpha?: number } = {}): Tensor {
  return bin('add', a, scaled(b, opts.alpha));
}
/** a - alpha * b with broadcasting. */
export function sub(a: TensorOrScalar, b: TensorOrScalar, opts: { alpha?: number } = {}): Tensor {
  return bin('sub', a, scaled(b, opts.alpha));
}
function scaled(b: TensorOrScalar, alpha: number | undefined): TensorOrScalar {
  if (alpha === undefined || alpha === 1) return b;
  return typeof b === 'number' ? b * alpha : mul(b, alpha);
}
export const mul = (a: TensorOrScalar, b: TensorOrScalar): Tensor => bin('mul', a, b);
export const div = (a: TensorOrScalar, b: TensorOrScalar): Tensor => bin('div', a, b);
export const pow = (a: TensorOrScalar, b: TensorOrScalar): Tensor => bin('pow', a, b);
export const maximum = (a: Tensor, b: TensorOrScalar): Tensor => bin('maximum', a, b);
export const minimum = (a: Tensor, b: TensorOrScalar): Tensor => bin('minimum', a, b);
export const eq = (a: Tensor, b: TensorOrScalar): Tensor => bin('eq', a, b);
export const ne = (a: Tensor, b: TensorOrScalar): Tensor => bin('ne', a, b);
export const lt = (a: Tensor, b: TensorOrScalar): Tensor => bin('lt', a, b);
export const le = (a: Tensor, b: TensorOrScalar): Tensor => bin('le', a, b);
export const gt = (a: Tensor, b: TensorOrScalar): Tensor => bin('gt', a, b);
export const ge = (a: Tensor, b: TensorOrScalar): Tensor => bin('ge', a, b);

export const neg = (x: Tensor): Tensor => un('neg', x);
export const exp = (x: Tensor): Tensor => un('exp', x);
export const log = (x: Tensor): Tensor => un('log', x);
export const sqrt = (x: Tensor): Tensor => un('sqrt', x);
export const rsqrt = (x: Tensor): Tensor => un('rsqrt', x);
export const reciprocal = (x: Tensor): Tensor => div(1, x);
export const square = (x: Tensor): Tensor => mul(x, x);
export const sin = (x: Tensor): Tensor => un('sin', x);
export const cos = (x: Tensor): Tensor => un('cos', x);
export const abs = (x: Tensor): Tensor => un('abs', x);
export const sign = (x: Tensor): Tensor => un('sign', x);
export const erf = (x: Tensor): Tensor => un('erf', x);
export const relu = (x: Tensor): Tensor => un('relu', x);
export const sigmoid = (x: Tensor): Tensor => un('sigmoid', x);
export const tanh = (x: Tensor): Tensor => un('tanh', x);
export const logicalNot = (x: Tensor): Tensor => un('logical_not', x);
export const clone = (x: Tensor): Tensor => un('clone', x);

/** Clamps into [min, max]; either bound may be omitted. */
export function clamp(x: Tensor, min?: number | null, max?: number | null): Tensor {
  if ((min === undefined || min === null) && (max === undefined || max === null)) {
    throw new Error('clamp: at least one of min or max must be given');
  }
  return dispatch1('clamp', [x], { min: min ?? null, max: max ?? null });
}

/**
 * GELU: x·Φ(x) with the exact normal CDF (erf) by default, or PyTorch's tanh approximation.
 * Both are written in PyTorch's operation order so float32 results agree closely.
 * @example gelu(tensor([-1, 0, 1]), { approximate: 'tanh' })
 */
export function gelu(x: Tensor, opts: { approximate?: 'none' | 'tanh' } = {}): Tensor {
  const approximate = opts.approximate ?? 'none';
  if (approximate === 'tanh') {
    // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); x·x·x as PyTorch computes the cube.
    const inner = mul(add(x, mul(mul(mul(x, x), x), 0.044715)), Math.sqrt(2 / Math.PI));
    return mul(mul(x, 0.5), add(tanh(inner), 1));
  }
  if (approximate !== 'none') throw new Error(`gelu: approximate must be 'none' or 'tanh', got '${String(approximate)}'`);
  return mul(mul(x, 0.5), add(erf(mul(x, Math.SQRT1_2)), 1));
}

/** cond ? a : b, elementwise with broadcasting; scalars allowed for a and b. */
export function where(cond: Tensor, a: TensorOrScalar, b: TensorOrScalar): Tensor {
  const like = typeof a === 'number' ? (typeof b === 'number' ? Tensor._scalar(0, 'float32') : b) : a;
  return dispatch1('where', [cond, toTensor(a, like), toTensor(b, like)]);
}
/** Elements of `x`, with `value` where `mask` is true (mask broadcasts). */
export function maskedFill(x: Tensor, mask: Tensor, value: number): Tensor {
  if (mask.dtype !== 'bool') throw new Error(`maskedFill: mask must be a bool tensor, got ${mask.dtype}`);
  return where(mask, Tensor._scalar(value, x.dtype), x);
}
export function cast(x: Tensor, dtype: DType): Tensor {
  return x.dtype === dtype ? x : dispatch1('cast', [x], { dtype });
}
/** `src` broadcast to `like`'s shape and dtype (what copy_ writes). */
export function copyFrom(like: Tensor, src: Tensor): Tensor {
  return dispatch1('expand', [cast(src, like.dtype)], { shape: [...like.shape] });
}
export function filledLike(like: Tensor, value: number): Tensor {
  return dispatch1('expand', [Tensor._scalar(value, like.dtype)], { shape: [...like.shape] });
}

/**
 * In-place protocol: compute `f(t)` out of place, write it into t's storage, bump the version
 * counter (so autograd can detect saved tensors that changed), and move t's history to the new
 * node. A leaf that requires grad cannot be modified while grad mode is on (as in PyTorch).
 */
export function inplace<T extends Tensor>(t: T, f: (t: Tensor) => Tensor, name: string): T {
  const recording = isGradEnabled();
  if (recording && t.isLeaf && t.requiresGrad) {
    throw new Error(`${name}: a leaf tensor that requires grad is used in an in-place operation. Wrap the update in noGrad() (as optimizers do) or use the out-of-place op.`);
  }
  const mark = tensorsMade();
  const out = f(t);
  if (out.shape.length !== t.shape.length || out.shape.some((d, i) => d !== t.shape[i])) {
    throw new Error(`${name}: the result has shape ${fmtShape(out.shape)} but the tensor being modified has shape ${fmtShape(t.shape)}; in-place ops cannot change the shape`);
  }
  if (out.dtype !== t.dtype) {
    throw new Error(`${name}: the result type ${out.dtype} can't be cast to the ${t.dtype} tensor being modified in place`);
  }
  const node = out.gradFn;
  if (node && recording) node.resaveInput(t, () => snapshot(t));
  if (out._storage !== t._storage) {
    if (t.device !== out.device) throw new DeviceError(`${name}: the result is on '${out.device}' but the tensor being modified is on '${t.device}'; move the other operand with .to('${t.device}')`);
    if (t.device === 'webgpu') copyGpu(out, t); // recorded after the kernel that made out
    else t._storage.data.set(out.data);
  }
  t._storage.version++;
  traceHooks.listener?.onInplace(t, out);
  // The result's buffer was copied into t's: a GPU temporary made here goes back to the pool now.
  if (t.device === 'webgpu' && out._storage !== t._storage && out._seq >= mark && !traceHooks.listener) out.dispose();
  if (recording) {
    t._setGradFn(out.gradFn, out.outputIndex);
    node?.resaveOutput(out.outputIndex, t);
  }
  return t;
}

/** A copy of t's current value that keeps t's history (for rules that saved the old value). */
function snapshot(t: Tensor): Tensor {
  const s = new Tensor(t.device === 'webgpu' ? cloneGpu(t) : { data: t.data.slice(), version: 0 }, t.shape, t.dtype);
  s._setGradFn(t.gradFn, t.outputIndex);
  return s;
}

// ---- rounding, log1p/expm1, NaN tests, closeness -------------------------------------------

export const floor = (x: Tensor): Tensor => un('floor', x);
export const ceil = (x: Tensor): Tensor => un('ceil', x);
export const trunc = (x: Tensor): Tensor => un('trunc', x);
/** Nearest integer, halves to even (torch.round); with `decimals`, round(x·10^d)/10^d. */
export function round(x: Tensor, opts: { decimals?: number } = {}): Tensor {
  const d = opts.decimals ?? 0;
  if (!Number.isInteger(d)) throw new Error(`round: decimals must be an integer, got ${d}`);
  if (d === 0) return un('round', x);
  const s = 10 ** d;
  return div(un('round', mul(x, s)), s);
}
export const log1p = (x: Tensor): Tensor => un('log1p', x);
export const expm1 = (x: Tensor): Tensor => un('expm1', x);
export const isnan = (x: Tensor): Tensor => un('isnan', x);
export const isfinite = (x: Tensor): Tensor => un('isfinite', x);
/** Elementwise a || b of two bool tensors (broadcast). */
const either = (a: Tensor, b: Tensor): Tensor => where(a, a, b);

export interface CloseOptions { rtol?: number; atol?: number; equalNan?: boolean }
/**
 * |a − b| <= atol + rtol·|b| elementwise, as bool (torch.isclose: equal values, infinities
 * included, are close; NaN is close to NaN only with equalNan).
 */
export function isclose(a: Tensor, b: TensorOrScalar, opts: CloseOptions = {}): Tensor {
  const rtol = opts.rtol ?? 1e-5, atol = opts.atol ?? 1e-8;
  const tb = toTensor(b, a);
  let close = eq(a, tb);
  const finite = where(isfinite(a), isfinite(tb), Tensor._scalar(0, 'bool'));
  const near = le(abs(sub(a, tb)), add(mul(abs(tb), rtol), atol));
  close = either(close, where(finite, near, Tensor._scalar(0, 'bool')));
  if (opts.equalNan) close = either(close, where(isnan(a), isnan(tb), Tensor._scalar(0, 'bool')));
  return close;
}
/** Whether every element of a is close to b (torch.allclose); reads the result. */
export function allclose(a: Tensor, b: TensorOrScalar, opts: CloseOptions = {}): boolean {
  const c = isclose(a, b, opts);
  return dispatch1('sum', [logicalNot(c)], { dim: null, keepdim: false }).item() === 0;
}
