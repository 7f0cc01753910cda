// Tensor factories. Invariant: every factory returns a fresh leaf with its own storage.

import { allocate, convertArray, fmtShape, isFloating, isReducedFloat, numel, roundInPlace, roundToDType, type DType, type TypedArray } from '@kiln/ir-spec';
import { Tensor } from './tensor.js';
import { defaultGenerator, type Generator } from './random.js';
import { dispatch, dispatch1 } from './dispatch.js';
import { placeOf, uploadArray, type DeviceName } from './device.js';

export interface TensorOptions {
  dtype?: DType;
  requiresGrad?: boolean;
  /** Where the tensor lives (default: device(), 'cpu' unless set); 'webgpu' needs `await initWebGpu()`. */
  device?: DeviceName;
}
export interface RandomOptions extends TensorOptions { generator?: Generator }

type Nested = number | boolean | readonly Nested[];

function make(data: TypedArray, shape: readonly number[], dtype: DType, opts: TensorOptions): Tensor {
  const storage = placeOf(opts.device) === 'webgpu' ? uploadArray(data, shape, dtype) : { data, version: 0 };
  const t = new Tensor(storage, [...shape], dtype);
  if (opts.requiresGrad) t.requiresGrad_(true);
  return t;
}

function checkShape(where: string, shape: readonly number[]): void {
  if (!shape.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`${where}: invalid shape ${fmtShape(shape)}: dims must be non-negative integers`);
}

/**
 * A tensor from nested arrays, a flat array with `shape`, or a typed array.
 * @example tensor([[1, 2], [3, 4]]); tensor(new Float32Array(6), { shape: [2, 3] })
 */
export function tensor(data: Nested | ArrayLike<number> | TypedArray, opts: TensorOptions & { shape?: readonly number[] } = {}): Tensor {
  let flat: number[] | ArrayLike<number>;
  let shape: number[];
  let inferred: DType = 'float32';
  if (ArrayBuffer.isView(data)) {
    flat = data as ArrayLike<number>;
    shape = opts.shape ? [...opts.shape] : [flat.length];
    if (data instanceof Int32Array) inferred = 'int32';
    else if (data instanceof Uint8Array) inferred = 'bool';
  } else if (typeof data === 'number' || typeof data === 'boolean') {
    flat = [Number(data)];
    shape = [];
    if (typeof data === 'boolean') inferred = 'bool';
  } else {
    shape = [];
    let probe: Nested = data as Nested;
    while (Array.isArray(probe)) { shape.push(probe.length); probe = probe[0] as Nested; }
    if (typeof probe === 'boolean') inferred = 'bool';
    const out: number[] = [];
    const walk = (v: Nested, dim: number) => {
      if (dim === shape.length) {
        if (Array.isArray(v)) throw new Error(`tensor(): ragged nested array: expected a number at depth ${dim}`);
        out.push(Number(v));
        return;
      }
      if (!Array.isArray(v) || v.length !== shape[dim]) throw new Error(`tensor(): ragged nested array: expected ${shape[dim]} elements at depth ${dim}`);
      for (const e of v) walk(e, dim + 1);
    };
    walk(data as Nested, 0);
    flat = out;
    if (opts.shape) shape = [...opts.shape];
  }
  checkShape('tensor()', shape);
  if (numel(shape) !== flat.length) throw new Error(`tensor(): ${flat.length} values do not fill shape ${fmtShape(shape)} (${numel(shape)} elements)`);
  const dtype = opts.dtype ?? inferred;
  return make(convertArray(flat, dtype), shape, dtype, opts);
}

export function full(shape: readonly number[], value: number, opts: TensorOptions = {}): Tensor {
  checkShape('full', shape);
  const dtype = opts.dtype ?? 'float32';
  const data = allocate(dtype, numel(shape));
  data.fill(dtype === 'bool' ? (value ? 1 : 0) : isReducedFloat(dtype) ? roundToDType(value, dtype) : value);
  return make(data, shape, dtype, opts);
}
export const zeros = (shape: readonly number[], opts: TensorOptions = {}): Tensor => full(shape, 0, opts);
export const ones = (shape: readonly number[], opts: TensorOptions = {}): Tensor => full(shape, 1, opts);
export const zerosLike = (t: Tensor, opts: TensorOptions = {}): Tensor => full(t.shape, 0, { dtype: t.dtype, device: t.device, ...opts });
export const onesLike = (t: Tensor, opts: TensorOptions = {}): Tensor => full(t.shape, 1, { dtype: t.dtype, device: t.device, ...opts });
export const fullLike = (t: Tensor, value: number, opts: TensorOptions = {}): Tensor => full(t.shape, value, { dtype: t.dtype, device: t.device, ...opts });

/**
 * A random op through the dispatch (so jit.trace and jit.script record it as a graph op that
 * draws at run time, never a constant), as a fresh leaf.
 */
function sample(op: 'uniform' | 'normal', where: string, like: Tensor | null, shape: readonly number[] | undefined, opts: RandomOptions): Tensor {
  if (opts.dtype && !isFloating(opts.dtype)) throw new Error(`${where}: random samples are floating point (float32, float16, bfloat16), got dtype ${opts.dtype}; cast the result with .to('${opts.dtype}')`);
  // The dispatch's own result (not a copy): a tracer knows it as the op's output. float16 and
  // bfloat16 samples are float32 samples rounded to nearest even.
  let drawn = dispatch1(op, [like], shape ? { shape: [...shape] } : {}, { generator: opts.generator ?? defaultGenerator });
  if (opts.dtype && opts.dtype !== drawn.dtype) drawn = dispatch1('cast', [drawn], { dtype: opts.dtype });
  // Drawn on the CPU stream either way, so a seed gives the same numbers on every device.
  const t = like || placeOf(opts.device) === 'cpu' ? drawn : drawn._toDevice('webgpu');
  if (opts.requiresGrad) t.requiresGrad_(true);
  return t;
}

/** Standard normal samples (torch.randn). @example randn([2, 3]) */
export function randn(shape: readonly number[], opts: RandomOptions = {}): Tensor {
  checkShape('randn', shape);
  return sample('normal', 'randn', null, shape, opts);
}
/** Uniform samples in [0, 1) (torch.rand). @example rand([2, 3]) */
export function rand(shape: readonly number[], opts: RandomOptions = {}): Tensor {
  checkShape('rand', shape);
  return sample('uniform', 'rand', null, shape, opts);
}
/** Standard normal samples shaped like `t` (torch.randn_like); a dynamic dim of `t` stays dynamic in a graph. */
export function randnLike(t: Tensor, opts: RandomOptions = {}): Tensor { return sample('normal', 'randnLike', t, undefined, opts); }
/** Uniform samples in [0, 1) shaped like `t` (torch.rand_like). @example randLike(x) */
export function randLike(t: Tensor, opts: RandomOptions = {}): Tensor { return sample('uniform', 'randLike', t, undefined, opts); }
/**
 * Integers uniform in [low, high) (torch.randint): min(int(uniform · (high − low)), high − low − 1)
 * + low, all through the dispatch, so traces and jit.script draw at run time.
 * @example randint(0, 10, [3])
 */
export function randint(low: number, high: number, shape: readonly number[], opts: RandomOptions = {}): Tensor {
  checkShape('randint', shape);
  if (!Number.isInteger(low) || !Number.isInteger(high) || high <= low) throw new Error(`randint: needs integers low < high, got low=${low}, high=${high}`);
  const n = high - low;
  const u = sample('uniform', 'randint', null, shape, { generator: opts.generator });
  // The clamp keeps float32 rounding of u·n (u < 1) from ever reaching n.
  const k = dispatch1('minimum', [dispatch1('cast', [dispatch1('mul', [u, Tensor._scalar(n, 'float32')])], { dtype: 'int32' }), Tensor._scalar(n - 1, 'int32')]);
  const r = low === 0 ? k : dispatch1('add', [k, Tensor._scalar(low, 'int32')]);
  return opts.dtype && opts.dtype !== 'int32' ? dispatch1('cast', [r], { dtype: opts.dtype }) : r;
}

/** arange(end), arange(start, end), arange(start, end, step); int32 when all are integers. */
export function arange(start: number, end?: number, step = 1, opts: TensorOptions = {}): Tensor {
  if (end === undefined) { end = start; start = 0; }
  if (step === 0) throw new Error('arange: step must be nonzero');
  const n = Math.max(0, Math.ceil((end - start) / step));
  const dtype = opts.dtype ?? ([start, end, step].every(Number.isInteger) ? 'int32' : 'float32');
  const data = allocate(dtype, n);
  for (let i = 0; i < n; i++) data[i] = start + i * step;
  if (isReducedFloat(dtype)) roundInPlace(data as Float32Array, dtype);
  return make(data, [n], dtype, opts);
}

export function linspace(start: number, end: number, steps: number, opts: TensorOptions = {}): Tensor {
  const data = new Float32Array(steps);
  for (let i = 0; i < steps; i++) data[i] = steps === 1 ? start : start + ((end - start) * i) / (steps - 1);
  return make(data, [steps], 'float32', opts);
}

export function eye(n: number, m = n, opts: TensorOptions = {}): Tensor {
  const data = allocate(opts.dtype ?? 'float32', n * m);
  for (let i = 0; i < Math.min(n, m); i++) data[i * m + i] = 1;
  return make(data, [n, m], opts.dtype ?? 'float32', opts);
}

/**
 * `numSamples` category indices per row of `probs` (1-D or 2-D, non-negative weights, need not
 * sum to 1), as int32 (torch.multinomial). With replacement: the count of cumulative weights
 * below a uniform draw. Without (the default, as PyTorch): the top numSamples of
 * log(w) + Gumbel noise, which samples without replacement in proportion to the weights. All
 * through the dispatch, so graphs draw at run time; draws differ from PyTorch's generator.
 */
export function multinomial(probs: Tensor, numSamples: number, opts: { replacement?: boolean; generator?: Generator } = {}): Tensor {
  if (probs.ndim !== 1 && probs.ndim !== 2) throw new Error(`multinomial: probs must be 1-D or 2-D, got shape ${fmtShape(probs.shape)}`);
  const c = probs.shape[probs.ndim - 1];
  if (!Number.isInteger(numSamples) || numSamples <= 0) throw new Error(`multinomial: numSamples must be a positive integer, got ${numSamples}`);
  if (!opts.replacement && numSamples > c) throw new Error(`multinomial: cannot draw ${numSamples} samples without replacement from ${c} categories; pass { replacement: true }`);
  const rows = probs.ndim === 2 ? dispatch1('reshape', [probs], { shape: [...probs.shape] }) : dispatch1('reshape', [probs], { shape: [1, c] });
  const r = rows.shape[0];
  const gen = { generator: opts.generator };
  let out: Tensor;
  if (opts.replacement) {
    const cdf = dispatch1('cumsum', [rows], { dim: 1 });
    const total = dispatch1('slice', [cdf], { dim: 1, start: c - 1, end: c, step: 1 });
    const u = dispatch1('mul', [sample('uniform', 'multinomial', null, [r, numSamples], gen), total]);
    // index = #{j : cdf[j] <= u}, clamped for u rounding up to the total.
    const below = dispatch1('le', [dispatch1('reshape', [cdf], { shape: [r, 1, c] }), dispatch1('reshape', [u], { shape: [r, numSamples, 1] })]);
    out = dispatch1('minimum', [dispatch1('sum', [below], { dim: 2, keepdim: false }), Tensor._scalar(c - 1, 'int32')]);
  } else {
    const u = sample('uniform', 'multinomial', null, [r, c], gen);
    // Gumbel noise −log(−log u); u = 0 gives −inf noise (never picked first), as intended.
    const gumbel = dispatch1('neg', [dispatch1('log', [dispatch1('neg', [dispatch1('log', [u])])])]);
    const keys = dispatch1('add', [dispatch1('log', [rows]), gumbel]);
    const [, idx] = dispatch('sort', [keys], { dim: 1, descending: true });
    out = dispatch1('slice', [idx], { dim: 1, start: 0, end: numSamples, step: 1 });
  }
  return probs.ndim === 1 ? dispatch1('reshape', [out], { shape: [numSamples] }) : out;
}
