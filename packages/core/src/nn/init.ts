// nn.init: PyTorch's weight initialisers. Invariant: every function fills the given tensor in
// place through `copy_` under noGrad (so its version counter moves and no history is recorded),
// draws from the core default generator unless one is given (manualSeed makes runs
// reproducible), and returns the same tensor.

import { fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { tensor } from '../creation.js';
import { defaultGenerator, type Generator } from '../random.js';
import { noGrad } from '../autograd/grad-mode.js';

export type Nonlinearity =
  | 'linear' | 'conv1d' | 'conv2d' | 'conv3d' | 'conv_transpose1d' | 'conv_transpose2d' | 'conv_transpose3d'
  | 'sigmoid' | 'tanh' | 'relu' | 'leaky_relu' | 'selu';

export interface GenOptions { generator?: Generator }

/** Writes `values` (row-major, length numel) into `t`. */
function write(t: Tensor, values: Float32Array | Float64Array): Tensor {
  const src = tensor(values instanceof Float32Array ? values : Float32Array.from(values), { shape: t.shape });
  noGrad(() => t.copy_(src));
  return t;
}
function sample(t: Tensor, draw: () => number): Tensor {
  const v = new Float32Array(t.numel());
  for (let i = 0; i < v.length; i++) v[i] = draw();
  return write(t, v);
}

/** The recommended gain for a nonlinearity (PyTorch's calculate_gain). */
export function calculateGain(nonlinearity: Nonlinearity, param?: number | null): number {
  switch (nonlinearity) {
    case 'linear': case 'conv1d': case 'conv2d': case 'conv3d':
    case 'conv_transpose1d': case 'conv_transpose2d': case 'conv_transpose3d': case 'sigmoid':
      return 1;
    case 'tanh': return 5 / 3;
    case 'relu': return Math.SQRT2;
    case 'leaky_relu': {
      const slope = param ?? 0.01;
      if (!Number.isFinite(slope)) throw new Error(`calculateGain: negative slope ${slope} is not a valid number`);
      return Math.sqrt(2 / (1 + slope * slope));
    }
    case 'selu': return 3 / 4;
    default: throw new Error(`calculateGain: unsupported nonlinearity '${String(nonlinearity)}'`);
  }
}

/** [fanIn, fanOut]: dim 1 and dim 0 sizes times the receptive field (the product of dims 2..). */
export function calculateFanInAndFanOut(t: Tensor): [number, number] {
  if (t.ndim < 2) throw new Error(`nn.init: fan in and fan out can not be computed for a tensor with fewer than 2 dimensions (shape ${fmtShape(t.shape)})`);
  const receptive = t.shape.slice(2).reduce((a, d) => a * d, 1);
  return [t.shape[1] * receptive, t.shape[0] * receptive];
}

function fanFor(t: Tensor, mode: 'fan_in' | 'fan_out'): number {
  if (mode !== 'fan_in' && mode !== 'fan_out') throw new Error(`nn.init: mode '${String(mode)}' not supported, please use one of 'fan_in', 'fan_out'`);
  const [fanIn, fanOut] = calculateFanInAndFanOut(t);
  return mode === 'fan_in' ? fanIn : fanOut;
}

/** Fills with U(a, b). */
export function uniform_(t: Tensor, a = 0, b = 1, opts: GenOptions = {}): Tensor {
  const g = opts.generator ?? defaultGenerator;
  return sample(t, () => a + (b - a) * g.random());
}

/** Fills with N(mean, std²). */
export function normal_(t: Tensor, mean = 0, std = 1, opts: GenOptions = {}): Tensor {
  const g = opts.generator ?? defaultGenerator;
  return sample(t, () => mean + std * g.normal());
}

/** Fills with `value`. */
export function constant_(t: Tensor, value: number): Tensor {
  noGrad(() => t.fill_(value));
  return t;
}
export const zeros_ = (t: Tensor): Tensor => constant_(t, 0);
export const ones_ = (t: Tensor): Tensor => constant_(t, 1);

export interface KaimingOptions extends GenOptions {
  /** Negative slope of the rectifier after this layer (leaky_relu only). Default 0. */
  a?: number;
  /** 'fan_in' (default) keeps the forward variance, 'fan_out' the backward one. */
  mode?: 'fan_in' | 'fan_out';
  /** Default 'leaky_relu' (with a = 0 that is ReLU's gain). */
  nonlinearity?: Nonlinearity;
}

/** He initialisation, uniform: U(-bound, bound) with bound = gain·√(3 / fan). */
export function kaimingUniform_(t: Tensor, opts: KaimingOptions = {}): Tensor {
  if (t.shape.includes(0)) return t; // PyTorch warns and leaves an empty tensor alone
  const fan = fanFor(t, opts.mode ?? 'fan_in');
  const bound = calculateGain(opts.nonlinearity ?? 'leaky_relu', opts.a ?? 0) * Math.sqrt(3 / fan);
  return uniform_(t, -bound, bound, opts);
}

/** He initialisation, normal: N(0, std²) with std = gain / √fan. */
export function kaimingNormal_(t: Tensor, opts: KaimingOptions = {}): Tensor {
  if (t.shape.includes(0)) return t;
  const fan = fanFor(t, opts.mode ?? 'fan_in');
  const std = calculateGain(opts.nonlinearity ?? 'leaky_relu', opts.a ?? 0) / Math.sqrt(fan);
  return normal_(t, 0, std, opts);
}

/** Glorot initialisation, uniform: U(-a, a) with a = gain·√(6 / (fanIn + fanOut)). */
export function xavierUniform_(t: Tensor, opts: GenOptions & { gain?: number } = {}): Tensor {
  const [fanIn, fanOut] = calculateFanInAndFanOut(t);
  const a = (opts.gain ?? 1) * Math.sqrt(6 / (fanIn + fanOut));
  return uniform_(t, -a, a, opts);
}

/** Glorot initialisation, normal: N(0, std²) with std = gain·√(2 / (fanIn + fanOut)). */
export function xavierNormal_(t: Tensor, opts: GenOptions & { gain?: number } = {}): Tensor {
  const [fanIn, fanOut] = calculateFanInAndFanOut(t);
  return normal_(t, 0, (opts.gain ?? 1) * Math.sqrt(2 / (fanIn + fanOut)), opts);
}

/**
 * A (semi-)orthogonal matrix: the tensor viewed as [size(0), numel/size(0)] gets orthonormal rows
 * or columns (whichever are fewer), times `gain`. As PyTorch: Q of the QR factorisation of a
 * Gaussian matrix, with column signs fixed by diag(R) so the result is Haar-distributed.
 */
export function orthogonal_(t: Tensor, opts: GenOptions & { gain?: number } = {}): Tensor {
  if (t.ndim < 2) throw new Error(`orthogonal_: only tensors with 2 or more dimensions are supported, got shape ${fmtShape(t.shape)}`);
  if (t.numel() === 0) return t;
  const g = opts.generator ?? defaultGenerator;
  const rows = t.shape[0], cols = t.numel() / rows;
  // Factor the tall orientation: m ≥ n.
  const m = Math.max(rows, cols), n = Math.min(rows, cols);
  const a = new Float64Array(m * n);
  // Drawn as a [rows, cols] matrix (as PyTorch), then read transposed when rows < cols.
  const flat = new Float64Array(rows * cols);
  for (let i = 0; i < flat.length; i++) flat[i] = g.normal();
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) a[i * n + j] = rows >= cols ? flat[i * cols + j] : flat[j * cols + i];
  const q = householderQ(a, m, n);
  const gain = opts.gain ?? 1;
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      const v = q[i * n + j] * gain;
      if (rows >= cols) out[i * cols + j] = v;
      else out[j * cols + i] = v;
    }
  }
  return write(t, out);
}

/**
 * The thin Q (m×n, m ≥ n) of A = QR by Householder reflections, with each column multiplied by
 * sign(R[j][j]) (so R's diagonal is positive, making Q unique). `a` is overwritten.
 */
function householderQ(a: Float64Array, m: number, n: number): Float64Array {
  const vs: Float64Array[] = [];
  const diagSign = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const v = new Float64Array(m - k);
    let norm2 = 0;
    for (let i = k; i < m; i++) { v[i - k] = a[i * n + k]; norm2 += v[i - k] * v[i - k]; }
    const norm = Math.sqrt(norm2);
    // Reflect x onto alpha·e1 with alpha = -sign(x0)·|x| (avoids cancellation); R[k][k] = alpha.
    const alpha = v[0] > 0 ? -norm : norm;
    diagSign[k] = alpha > 0 ? 1 : alpha < 0 ? -1 : 0;
    v[0] -= alpha;
    let vn2 = 0;
    for (let i = 0; i < v.length; i++) vn2 += v[i] * v[i];
    if (vn2 > 0) {
      const s = 1 / Math.sqrt(vn2);
      for (let i = 0; i < v.length; i++) v[i] *= s;
      for (let j = k; j < n; j++) {
        let dot = 0;
        for (let i = k; i < m; i++) dot += v[i - k] * a[i * n + j];
        for (let i = k; i < m; i++) a[i * n + j] -= 2 * v[i - k] * dot;
      }
    }
    vs.push(vn2 > 0 ? v : new Float64Array(m - k));
  }
  // Q = H0·H1·…·H(n-1)·I[:, :n], applied right to left.
  const q = new Float64Array(m * n);
  for (let j = 0; j < n; j++) q[j * n + j] = 1;
  for (let k = n - 1; k >= 0; k--) {
    const v = vs[k];
    for (let j = 0; j < n; j++) {
      let dot = 0;
      for (let i = k; i < m; i++) dot += v[i - k] * q[i * n + j];
      if (dot === 0) continue;
      for (let i = k; i < m; i++) q[i * n + j] -= 2 * v[i - k] * dot;
    }
  }
  // sign(0) = 0 in PyTorch too, which zeroes a column of a rank-deficient draw (probability 0).
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) q[i * n + j] *= diagSign[j];
  return q;
}
