// The eager Tensor. Invariant: data is dense, row-major, and owned by a Storage that carries the
// version counter; tensors that share a Storage are views of each other (reshape/view/flatten/
// squeeze/unsqueeze/detach share; permute/transpose/slice/expand/index copy — documented in
// the README). Every computing method goes through the dispatch (via the ops/ modules).

import { allocate, isFloating, numel, type CpuTensor, type DType, type TypedArray } from '@kiln/ir-spec';
import type { GradHook, Node } from './autograd/node.js';
import { isGradEnabled, isInferenceMode, noGrad } from './autograd/grad-mode.js';
import { runBackward, seedFor } from './autograd/engine.js';
import * as E from './ops/elementwise.js';
import * as R from './ops/reduce.js';
import * as S from './ops/shape.js';
import * as I from './ops/indexing.js';
import * as L from './ops/linalg.js';
import * as Sort from './ops/sort.js';
import { formatTensor } from './format.js';
import { traceHooks } from './trace/hooks.js';
import { checkDeviceName, DeviceError, registerTensorClass, readGpu, uploadArray, type DeviceName } from './device.js';
import { noteStorage } from './memory.js';
import { adopt, disposedError, disposeTensor, keep, registerTensorTest, releaseStorage, type Scope } from './lifetime.js';

/**
 * A tensor's elements and version counter; a 'webgpu' storage also has `gpu` (device.ts), and its
 * `data` throws. `refs` counts the tensors made on it, `free` returns its buffer (lifetime.ts).
 */
export interface Storage {
  readonly data: TypedArray;
  version: number;
  refs?: number;
  disposed?: boolean;
  free?: () => void;
}

export type TensorOrScalar = Tensor | number;
export type IndexItem = number | null | '...' | string | { start?: number | null; stop?: number | null; step?: number | null } | Tensor;

export class Tensor {
  /** @internal the gradient, read without handing it out (optimizers); see `grad`. */
  _grad: Tensor | null = null;
  /** @internal `_grad` was made by backward and never handed out, so zeroGrad() may dispose it. */
  _gradOwned = false;
  /** @internal the tidy() scope this tensor belongs to (lifetime.ts); null when none or kept. */
  _scope: Scope | null = null;
  /** @internal disposed: any use throws a DisposedError. */
  _disposed = false;
  /** @internal creation order (lifetime.ts's tensorsMade). */
  _seq = 0;
  /** The node that produced this tensor, or null for leaves. */
  gradFn: Node | null = null;
  /** Which output of `gradFn` this tensor is. */
  outputIndex = 0;
  /** Made inside inferenceMode(): can never join an autograd graph. */
  readonly isInference: boolean;
  private _requiresGrad = false;
  /** @internal hooks on a leaf, run before its gradient is accumulated. */
  readonly _hooks: GradHook[] = [];

  /** @internal use tensor(), zeros(), ... */
  constructor(
    /** @internal (reassigned only by Module.to, which moves a parameter between devices) */ public _storage: Storage,
    readonly shape: readonly number[],
    readonly dtype: DType,
  ) {
    this.isInference = isInferenceMode();
    noteStorage(_storage);
    adopt(this);
  }

  /** Gradient accumulated by backward() (leaves, and non-leaves after retainGrad()). */
  get grad(): Tensor | null {
    this._gradOwned = false; // the caller may hold it now: zeroGrad() no longer disposes it
    return this._grad;
  }
  set grad(g: Tensor | null) {
    this._grad = g;
    this._gradOwned = false;
  }

  /**
   * Releases this tensor now (tfjs's dispose): its GPU buffer goes back to the pool as soon as no
   * other live tensor (a view) shares it, instead of when JavaScript collects it. Using it after
   * throws a DisposedError. Idempotent. @example const y = x.mul(2); x.dispose();
   */
  dispose(): void { disposeTensor(this); }
  /** Whether dispose() (or the end of its tidy()) released this tensor. */
  get isDisposed(): boolean { return this._disposed; }
  /** @internal throws a DisposedError naming `where` when this tensor was disposed. */
  _checkLive(where: string): void {
    if (this._disposed) throw disposedError(this, where);
  }
  /** @internal puts this tensor on storage `s` (Module.to moving a parameter): counts it there, not on the old one. */
  _replaceStorage(s: Storage): void {
    const old = this._storage;
    s.refs = (s.refs ?? 0) + 1;
    this._storage = s;
    releaseStorage(old);
  }

  /** @internal */
  static _fromCpu(c: CpuTensor): Tensor {
    return new Tensor({ data: c.data, version: 0 }, [...c.shape], c.dtype);
  }
  /** @internal a tensor sharing `base`'s storage with another shape. */
  static _view(base: Tensor, shape: readonly number[]): Tensor {
    return new Tensor(base._storage, [...shape], base.dtype);
  }
  /** @internal a 0-d constant. */
  static _scalar(v: number, dtype: DType): Tensor {
    const data = allocate(dtype, 1);
    data[0] = dtype === 'bool' ? (v ? 1 : 0) : v;
    return new Tensor({ data, version: 0 }, [], dtype);
  }

  /** Where the elements live: 'cpu' or 'webgpu' (see to(), initWebGpu()). */
  get device(): DeviceName { return 'gpu' in this._storage ? 'webgpu' : 'cpu'; }
  get ndim(): number { return this.shape.length; }
  /** The number of dims (torch's dim()); the same as `ndim`. */
  dim(): number { return this.shape.length; }
  /** The number of elements (torch's numel()). */
  numel(): number { return numel(this.shape); }
  /** The same as numel() (torch's nelement()). */
  nelement(): number { return numel(this.shape); }
  /** Elements in row-major order. Read-only by contract: writing to it bypasses autograd. */
  get data(): TypedArray { return this._storage.data; }
  /** @internal version counter shared by views; bumped by every in-place op. */
  get _version(): number { return this._storage.version; }
  /** @internal the kernel view of this tensor. */
  cpu(): CpuTensor { return { data: this._storage.data, shape: this.shape, dtype: this.dtype }; }

  get requiresGrad(): boolean { return this._requiresGrad || this.gradFn !== null; }
  set requiresGrad(v: boolean) { this.requiresGrad_(v); }
  /** A leaf is a tensor not produced by a recorded op. */
  get isLeaf(): boolean { return this.gradFn === null; }
  size(dim?: number): number | readonly number[] {
    return dim === undefined ? this.shape : this.shape[dim < 0 ? dim + this.shape.length : dim];
  }

  /** Marks a leaf as needing gradients (in place); returns this. */
  requiresGrad_(on = true): this {
    if (this.gradFn && !on) throw new Error('requiresGrad_(false) on a non-leaf tensor: use detach() to get a tensor without history');
    if (on && !isFloating(this.dtype)) throw new Error(`only floating-point tensors (float32, float16, bfloat16) can require gradients, this one is ${this.dtype}`);
    if (on && this.isInference) throw new Error('an inference tensor (made inside inferenceMode()) cannot require grad; clone() it outside inferenceMode first');
    this._requiresGrad = on;
    return this;
  }

  /** @internal */
  _setGradFn(node: Node | null, index: number): void {
    this.gradFn = node;
    this.outputIndex = index;
  }

  /**
   * @internal Set on a gradient whose storage nothing else references (a compiled backward
   * graph's fresh output): the first accumulation into a leaf takes it as `.grad` instead of a
   * copy, as PyTorch's AccumulateGrad steals a gradient no one else holds.
   */
  _ownedGrad = false;

  /** @internal adds `g` into `.grad` (backward's accumulation rule). */
  _accumulateGrad(g: Tensor, createGraph: boolean): void {
    // A gradient made here is private to this tensor (kept out of tidy scopes; zeroGrad may dispose it).
    if (createGraph) this.grad = this._grad ? this._grad.add(g) : g;
    else if (!this._grad) { this._grad = keep(g._ownedGrad && !g.gradFn && g.dtype === this.dtype ? g : g.detach().clone()); this._gradOwned = true; }
    else { const gd = this._grad; noGrad(() => gd.add_(g)); }
  }

  /** Registers a hook called with this tensor's gradient; it may return a replacement. */
  registerHook(hook: GradHook): { remove(): void } {
    if (!this.requiresGrad) throw new Error('cannot register a hook on a tensor that does not require grad');
    const list = this.gradFn ? (this.gradFn.outputHooks[this.outputIndex] ??= []) : this._hooks;
    list.push(hook);
    return { remove: () => { const i = list.indexOf(hook); if (i >= 0) list.splice(i, 1); } };
  }

  /** Makes backward() fill `.grad` of this non-leaf tensor too. */
  retainGrad(): this {
    if (this.isLeaf) return this;
    this.registerHook((g) => { this.grad = this.grad ? this.grad.add(g.detach()) : g.detach(); });
    return this;
  }

  /** Computes gradients of this tensor with respect to the graph leaves. */
  backward(opts: { gradient?: Tensor; retainGraph?: boolean; createGraph?: boolean } = {}): void {
    if (!this.requiresGrad) {
      throw new Error('backward(): this tensor does not require grad and has no gradFn. Did you forget requiresGrad: true on the parameters, or compute it inside noGrad()?');
    }
    runBackward([this], [seedFor(this, opts.gradient ?? null, 'backward()')], opts);
  }

  /** @internal throws for a GPU tensor read synchronously. */
  private _hostOnly(what: string): void {
    this._checkLive(what);
    if ('gpu' in this._storage) {
      throw new DeviceError(`${what} on a 'webgpu' tensor would wait for the GPU, which JavaScript cannot do synchronously: use \`await t.${what === 'item()' ? 'itemAsync()' : 'toArrayAsync()'}\` (or \`await t.toAsync('cpu')\`)`);
    }
  }

  /** The single value of a one-element tensor. */
  item(): number {
    this._hostOnly('item()');
    if (this.numel() !== 1) {
      throw new Error(`item(): a Tensor with ${this.numel()} elements (shape [${this.shape.join(',')}]) cannot be converted to a number; only one-element tensors can`);
    }
    traceHooks.listener?.onValueRead('item()', this);
    return this._storage.data[0];
  }
  /** `t > 0`, `+t`, template strings: a one-element tensor converts to its number, as in Python. */
  [Symbol.toPrimitive](hint: string): number | string {
    if (hint === 'string') return this.toString();
    this._hostOnly('item()');
    if (this.numel() !== 1) {
      throw new Error(`a Tensor with ${this.numel()} elements (shape [${this.shape.join(',')}]) was used as a number (a comparison or arithmetic in JavaScript); only one-element tensors can — use tensor ops such as gt() or add() instead`);
    }
    traceHooks.listener?.onValueRead('a comparison or arithmetic on a tensor in JavaScript', this);
    return this._storage.data[0];
  }
  /** A flat copy of the elements (Float32Array for float32, Int32Array for int32, Uint8Array for bool). */
  toArray(): TypedArray {
    this._hostOnly('toArray()');
    traceHooks.listener?.onValueRead('toArray()', this);
    return this._storage.data.slice(0, this.numel()) as TypedArray;
  }
  /** Nested JS arrays (numbers; booleans for bool tensors). */
  tolist(): unknown {
    this._hostOnly('tolist()');
    traceHooks.listener?.onValueRead('tolist()', this);
    const d = this._storage.data, shape = this.shape, isBool = this.dtype === 'bool';
    const rec = (dim: number, off: number): unknown => {
      if (dim === shape.length) return isBool ? d[off] !== 0 : d[off];
      const step = numel(shape.slice(dim + 1));
      return Array.from({ length: shape[dim] }, (_, i) => rec(dim + 1, off + i * step));
    };
    return rec(0, 0);
  }
  toString(): string { return formatTensor(this); }

  /**
   * A flat copy of the elements on any device: for a 'webgpu' tensor it submits the recorded
   * kernels and resolves when the GPU has produced the value (the only wait in a GPU program).
   * @example const probs = await model.forward(x).softmax(1).toArrayAsync();
   */
  async toArrayAsync(): Promise<TypedArray> {
    this._checkLive('toArrayAsync()');
    if (!('gpu' in this._storage)) return this.toArray();
    traceHooks.listener?.onValueRead('toArrayAsync()', this);
    return readGpu(this);
  }
  /** The single value of a one-element tensor on any device. @example const l = await loss.itemAsync(); */
  async itemAsync(): Promise<number> {
    if (this.numel() !== 1) return this.item();
    return (await this.toArrayAsync())[0];
  }

  /**
   * This tensor on `device` (the same tensor when it is there already). CPU → 'webgpu' records an
   * upload (no wait; `await initWebGpu()` first); 'webgpu' → CPU must wait, so it is toAsync.
   * A leaf that requires grad gives a leaf that requires grad (the move itself is not recorded).
   */
  _toDevice(device: DeviceName): Tensor {
    if (device === this.device) return this;
    this._checkLive(`to('${device}')`);
    if (device === 'cpu') throw new DeviceError("to('cpu') on a 'webgpu' tensor would wait for the GPU: use `await t.toAsync('cpu')`");
    if (this.gradFn) throw new DeviceError("to('webgpu'): moving a tensor with autograd history between devices is not differentiable here; detach() it, or create it on 'webgpu' (factories take { device })");
    const t = new Tensor(uploadArray(this._storage.data, this.shape, this.dtype), this.shape, this.dtype);
    if (this.requiresGrad) t.requiresGrad_(true);
    return t;
  }
  /** This tensor on `device` (any direction; from 'webgpu' it waits for the GPU). */
  async toAsync(device: DeviceName): Promise<Tensor> {
    checkDeviceName(device, 'toAsync()');
    if (device === this.device || device === 'webgpu') return this._toDevice(device);
    this._checkLive("toAsync('cpu')");
    const data = await readGpu(this);
    const t = new Tensor({ data, version: 0 }, this.shape, this.dtype);
    if (this.requiresGrad && !this.gradFn) t.requiresGrad_(true);
    return t;
  }

  // ---- autograd-related -------------------------------------------------------------------
  /** A tensor sharing this one's data with no autograd history. */
  detach(): Tensor { return Tensor._view(this, this.shape); }
  detach_(): this { this.gradFn = null; this._requiresGrad = false; return this; }
  /** A copy with its own storage (differentiable). */
  clone(): Tensor { return E.clone(this); }
  /** Zeroes (drops) the accumulated gradient. */
  zeroGrad(): void {
    if (this._gradOwned) this._grad?.dispose();
    this.grad = null;
  }
  /** A cast to `dtype`, or a move to a device ('cpu' | 'webgpu'; see _toDevice and toAsync). */
  to(dtypeOrDevice: DType | DeviceName): Tensor {
    return dtypeOrDevice === 'cpu' || dtypeOrDevice === 'webgpu' ? this._toDevice(dtypeOrDevice) : E.cast(this, dtypeOrDevice);
  }
  /** This tensor as float32 (torch's `.float()`; the same tensor when it already is). */
  float(): Tensor { return this.dtype === 'float32' ? this : E.cast(this, 'float32'); }
  /** This tensor as float16, rounded to nearest even (torch's `.half()`). @example randn([2]).half().dtype // 'float16' */
  half(): Tensor { return this.dtype === 'float16' ? this : E.cast(this, 'float16'); }
  /** This tensor as bfloat16, rounded to nearest even (torch's `.bfloat16()`). */
  bfloat16(): Tensor { return this.dtype === 'bfloat16' ? this : E.cast(this, 'bfloat16'); }
  int(): Tensor { return E.cast(this, 'int32'); }
  bool(): Tensor { return E.cast(this, 'bool'); }

  // ---- elementwise ---------------------------------------------------------------------------
  add(other: TensorOrScalar, opts?: { alpha?: number }): Tensor { return E.add(this, other, opts); }
  sub(other: TensorOrScalar, opts?: { alpha?: number }): Tensor { return E.sub(this, other, opts); }
  mul(other: TensorOrScalar): Tensor { return E.mul(this, other); }
  div(other: TensorOrScalar): Tensor { return E.div(this, other); }
  pow(exponent: TensorOrScalar): Tensor { return E.pow(this, exponent); }
  neg(): Tensor { return E.neg(this); }
  exp(): Tensor { return E.exp(this); }
  log(): Tensor { return E.log(this); }
  sqrt(): Tensor { return E.sqrt(this); }
  rsqrt(): Tensor { return E.rsqrt(this); }
  reciprocal(): Tensor { return E.reciprocal(this); }
  square(): Tensor { return E.square(this); }
  sin(): Tensor { return E.sin(this); }
  cos(): Tensor { return E.cos(this); }
  abs(): Tensor { return E.abs(this); }
  sign(): Tensor { return E.sign(this); }
  clamp(min?: number | null, max?: number | null): Tensor { return E.clamp(this, min, max); }
  maximum(other: Tensor): Tensor { return E.maximum(this, other); }
  minimum(other: Tensor): Tensor { return E.minimum(this, other); }
  relu(): Tensor { return E.relu(this); }
  sigmoid(): Tensor { return E.sigmoid(this); }
  tanh(): Tensor { return E.tanh(this); }
  gelu(opts?: { approximate?: 'none' | 'tanh' }): Tensor { return E.gelu(this, opts); }
  eq(other: TensorOrScalar): Tensor { return E.eq(this, other); }
  ne(other: TensorOrScalar): Tensor { return E.ne(this, other); }
  lt(other: TensorOrScalar): Tensor { return E.lt(this, other); }
  le(other: TensorOrScalar): Tensor { return E.le(this, other); }
  gt(other: TensorOrScalar): Tensor { return E.gt(this, other); }
  ge(other: TensorOrScalar): Tensor { return E.ge(this, other); }
  logicalNot(): Tensor { return E.logicalNot(this); }
  where(cond: Tensor, other: TensorOrScalar): Tensor { return E.where(cond, this, other); }
  maskedFill(mask: Tensor, value: number): Tensor { return E.maskedFill(this, mask, value); }
  floor(): Tensor { return E.floor(this); }
  ceil(): Tensor { return E.ceil(this); }
  /** Halves round to even, as torch.round. */
  round(opts?: { decimals?: number }): Tensor { return E.round(this, opts); }
  trunc(): Tensor { return E.trunc(this); }
  log1p(): Tensor { return E.log1p(this); }
  expm1(): Tensor { return E.expm1(this); }
  isnan(): Tensor { return E.isnan(this); }
  isfinite(): Tensor { return E.isfinite(this); }
  isclose(other: TensorOrScalar, opts?: E.CloseOptions): Tensor { return E.isclose(this, other, opts); }
  allclose(other: TensorOrScalar, opts?: E.CloseOptions): boolean { return E.allclose(this, other, opts); }

  // ---- in-place (checked by version counters) -----------------------------------------------
  add_(other: TensorOrScalar, opts?: { alpha?: number }): this { return E.inplace(this, (t) => E.add(t, other, opts), 'add_'); }
  sub_(other: TensorOrScalar, opts?: { alpha?: number }): this { return E.inplace(this, (t) => E.sub(t, other, opts), 'sub_'); }
  mul_(other: TensorOrScalar): this { return E.inplace(this, (t) => E.mul(t, other), 'mul_'); }
  div_(other: TensorOrScalar): this { return E.inplace(this, (t) => E.div(t, other), 'div_'); }
  pow_(exponent: TensorOrScalar): this { return E.inplace(this, (t) => E.pow(t, exponent), 'pow_'); }
  neg_(): this { return E.inplace(this, (t) => E.neg(t), 'neg_'); }
  exp_(): this { return E.inplace(this, (t) => E.exp(t), 'exp_'); }
  sqrt_(): this { return E.inplace(this, (t) => E.sqrt(t), 'sqrt_'); }
  relu_(): this { return E.inplace(this, (t) => E.relu(t), 'relu_'); }
  sigmoid_(): this { return E.inplace(this, (t) => E.sigmoid(t), 'sigmoid_'); }
  tanh_(): this { return E.inplace(this, (t) => E.tanh(t), 'tanh_'); }
  clamp_(min?: number | null, max?: number | null): this { return E.inplace(this, (t) => E.clamp(t, min, max), 'clamp_'); }
  maskedFill_(mask: Tensor, value: number): this { return E.inplace(this, (t) => E.maskedFill(t, mask, value), 'maskedFill_'); }
  /** Copies `src` (broadcast) into this tensor. */
  copy_(src: Tensor): this {
    // A host array copied into a GPU tensor is uploaded first (no gradient flows back to the CPU source).
    const from = src.device === 'cpu' && this.device === 'webgpu' && src.ndim > 0 ? src.detach()._toDevice('webgpu') : src;
    return E.inplace(this, (t) => E.copyFrom(t, from), 'copy_');
  }
  fill_(value: number): this { return E.inplace(this, (t) => E.filledLike(t, value), 'fill_'); }
  zero_(): this { return this.fill_(0); }

  // ---- reductions ----------------------------------------------------------------------------
  sum(dim?: number | number[] | null, opts?: { keepdim?: boolean }): Tensor { return R.sum(this, dim, opts); }
  mean(dim?: number | number[] | null, opts?: { keepdim?: boolean }): Tensor { return R.mean(this, dim, opts); }
  prod(dim?: number | null, opts?: { keepdim?: boolean }): Tensor { return R.prod(this, dim, opts); }
  /** Without `dim`: the max value. With `dim`: `[values, indices]` (as torch.max). */
  max(): Tensor;
  max(dim: number, opts?: { keepdim?: boolean }): [Tensor, Tensor];
  max(dim?: number, opts?: { keepdim?: boolean }): Tensor | [Tensor, Tensor] { return R.max(this, dim, opts); }
  min(): Tensor;
  min(dim: number, opts?: { keepdim?: boolean }): [Tensor, Tensor];
  min(dim?: number, opts?: { keepdim?: boolean }): Tensor | [Tensor, Tensor] { return R.min(this, dim, opts); }
  amax(dim?: number | number[] | null, opts?: { keepdim?: boolean }): Tensor { return R.amax(this, dim, opts); }
  amin(dim?: number | number[] | null, opts?: { keepdim?: boolean }): Tensor { return R.amin(this, dim, opts); }
  argmax(dim?: number | null, opts?: { keepdim?: boolean }): Tensor { return R.argmax(this, dim, opts); }
  argmin(dim?: number | null, opts?: { keepdim?: boolean }): Tensor { return R.argmin(this, dim, opts); }
  var(dim?: number | number[] | null, opts?: { unbiased?: boolean; keepdim?: boolean }): Tensor { return R.variance(this, dim, opts); }
  std(dim?: number | number[] | null, opts?: { unbiased?: boolean; keepdim?: boolean }): Tensor { return R.std(this, dim, opts); }
  logsumexp(dim: number | number[], opts?: { keepdim?: boolean }): Tensor { return R.logsumexp(this, dim, opts); }
  norm(p?: number, dim?: number | number[] | null, opts?: { keepdim?: boolean }): Tensor { return R.norm(this, p, dim, opts); }
  cumsum(dim: number): Tensor { return R.cumsum(this, dim); }
  cumprod(dim: number): Tensor { return R.cumprod(this, dim); }
  any(dim?: number | null, opts?: { keepdim?: boolean }): Tensor { return R.any(this, dim, opts); }
  all(dim?: number | null, opts?: { keepdim?: boolean }): Tensor { return R.all(this, dim, opts); }
  /** Stable sort: `[values, indices]` along `dim` (default -1). */
  sort(opts?: Sort.SortOptions): [Tensor, Tensor] { return Sort.sort(this, opts); }
  argsort(opts?: Sort.SortOptions): Tensor { return Sort.argsort(this, opts); }
  topk(k: number, opts?: { dim?: number; largest?: boolean; sorted?: boolean }): [Tensor, Tensor] { return Sort.topk(this, k, opts); }
  softmax(dim: number): Tensor { return R.softmax(this, dim); }
  logSoftmax(dim: number): Tensor { return R.logSoftmax(this, dim); }

  // ---- shape ---------------------------------------------------------------------------------
  reshape(...shape: number[] | [readonly number[]]): Tensor { return S.reshape(this, S.shapeArg(shape)); }
  view(...shape: number[] | [readonly number[]]): Tensor { return S.view(this, S.shapeArg(shape)); }
  permute(...dims: number[] | [readonly number[]]): Tensor { return S.permute(this, S.shapeArg(dims)); }
  transpose(dim0: number, dim1: number): Tensor { return S.transpose(this, dim0, dim1); }
  /** 2-D transpose (PyTorch's .t()); the `.T` getter is the same for 2-D tensors. */
  t(): Tensor { return S.t(this); }
  get T(): Tensor { return S.t(this); }
  flatten(startDim = 0, endDim = -1): Tensor { return S.flatten(this, startDim, endDim); }
  squeeze(dim?: number | number[]): Tensor { return S.squeeze(this, dim); }
  unsqueeze(dim: number): Tensor { return S.unsqueeze(this, dim); }
  expand(...shape: number[] | [readonly number[]]): Tensor { return S.expand(this, S.shapeArg(shape)); }
  expandAs(other: Tensor): Tensor { return S.expand(this, other.shape); }
  repeat(...repeats: number[] | [readonly number[]]): Tensor { return S.repeat(this, S.shapeArg(repeats)); }
  flip(dims: number | number[]): Tensor { return S.flip(this, dims); }
  roll(shifts: number | number[], dims?: number | number[] | null): Tensor { return S.roll(this, shifts, dims); }
  narrow(dim: number, start: number, length: number): Tensor { return S.narrow(this, dim, start, length); }
  select(dim: number, index: number): Tensor { return S.select(this, dim, index); }
  repeatInterleave(repeats: number | number[] | Tensor, dim?: number | null): Tensor { return S.repeatInterleave(this, repeats, dim); }
  split(sizeOrSections: number | number[], dim = 0): Tensor[] { return S.split(this, sizeOrSections, dim); }
  chunk(chunks: number, dim = 0): Tensor[] { return S.chunk(this, chunks, dim); }
  unbind(dim = 0): Tensor[] { return S.unbind(this, dim); }
  /** Elements start..end (exclusive) with `step` along `dim`; a copy. */
  slice(dim: number, start?: number | null, end?: number | null, step?: number): Tensor { return S.slice(this, dim, start, end, step); }
  /** PyTorch indexing `x[...]`: numbers select, `'1:5:2'`/`{start,stop,step}` slice, `null` adds an
   * axis, `'...'` is Ellipsis, an int32 tensor picks rows, a bool tensor masks. Example: `x.index(':', '1:5:2', 0)`. */
  index(...items: IndexItem[]): Tensor { return S.index(this, items); }
  contiguous(): Tensor { return this; }

  // ---- indexing ------------------------------------------------------------------------------
  indexSelect(dim: number, index: Tensor): Tensor { return I.indexSelect(this, dim, index); }
  gather(dim: number, index: Tensor): Tensor { return I.gather(this, dim, index); }
  scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor { return I.scatterAdd(this, dim, index, src); }
  scatter(dim: number, index: Tensor, src: Tensor | number, opts?: { reduce?: 'add' | 'multiply' }): Tensor { return I.scatter(this, dim, index, src, opts); }
  scatterReduce(dim: number, index: Tensor, src: Tensor, reduce: I.ScatterReduce, opts?: { includeSelf?: boolean }): Tensor { return I.scatterReduce(this, dim, index, src, reduce, opts); }
  nonzero(): Tensor { return I.nonzero(this); }
  maskedSelect(mask: Tensor): Tensor { return I.maskedSelect(this, mask); }
  tril(diagonal = 0): Tensor { return I.tril(this, diagonal); }
  triu(diagonal = 0): Tensor { return I.triu(this, diagonal); }

  // ---- linear algebra ------------------------------------------------------------------------
  matmul(other: Tensor): Tensor { return L.matmul(this, other); }
  mm(other: Tensor): Tensor { return L.mm(this, other); }
  bmm(other: Tensor): Tensor { return L.bmm(this, other); }
  outer(other: Tensor): Tensor { return L.outer(this, other); }
  diag(diagonal = 0): Tensor { return L.diag(this, diagonal); }
}

registerTensorClass(Tensor);
registerTensorTest((x): x is Tensor => x instanceof Tensor);

/** True when grad recording applies to an op on these inputs (used by in-place checks). */
export function recordsGrad(...ts: (Tensor | null | undefined)[]): boolean {
  return isGradEnabled() && ts.some((t) => t?.requiresGrad);
}
