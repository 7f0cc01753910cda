// Shapes and the helpers every shape rule uses. A dim is a number or a symbol (a dynamic
// size such as the batch `N`); eager code only ever sees numbers.

export type Dim = number | string;
export type Shape = readonly Dim[];

import type { DType } from './dtype.js';

/** The static type of a tensor value. */
export interface TensorType { readonly dtype: DType; readonly shape: Shape }

/** A user error about shapes, dtypes or arguments of one op; the message names the op. */
export class OpError extends Error {
  constructor(readonly op: string, message: string) {
    super(`${op}: ${message}`);
    this.name = 'OpError';
  }
}

export function fmtShape(s: Shape): string { return `[${s.join(',')}]`; }

/** Number of elements; throws on a symbolic dim (callers that allow symbols must not call this). */
export function numel(s: Shape): number {
  let n = 1;
  for (const d of s) {
    if (typeof d !== 'number') throw new Error(`numel of symbolic shape ${fmtShape(s)}`);
    n *= d;
  }
  return n;
}

/** Row-major strides of a concrete shape. */
export function stridesOf(s: readonly number[]): number[] {
  const st = new Array<number>(s.length);
  let acc = 1;
  for (let i = s.length - 1; i >= 0; i--) { st[i] = acc; acc *= s[i]; }
  return st;
}

/** Normalizes a possibly negative dim index against `rank` (PyTorch's wrap rule). */
export function normDim(op: string, dim: number, rank: number): number {
  const r = Math.max(rank, 1);
  if (!Number.isInteger(dim) || dim < -r || dim >= r) {
    throw new OpError(op, `dim ${dim} is out of range for a tensor of rank ${rank} (expected ${-r}..${r - 1})`);
  }
  return dim < 0 ? dim + r : dim;
}

/** Normalized, sorted, de-duplicated dims; `undefined`/`null` means all dims. */
export function normDims(op: string, dims: number | readonly number[] | null | undefined, rank: number): number[] {
  if (dims === undefined || dims === null) return Array.from({ length: rank }, (_, i) => i);
  const list = typeof dims === 'number' ? [dims] : dims;
  const out = [...new Set(list.map((d) => normDim(op, d, rank)))].sort((a, b) => a - b);
  if (out.length !== list.length) throw new OpError(op, `dim ${JSON.stringify(dims)} repeats a dimension`);
  return out;
}

export function sameDim(a: Dim, b: Dim): boolean { return a === b; }

export function shapesEqual(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** NumPy/PyTorch broadcasting of two shapes; the error names the op and both shapes. */
export function broadcastShapes(op: string, a: Shape, b: Shape): Dim[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<Dim>(n);
  for (let i = 0; i < n; i++) {
    const da = i < n - a.length ? 1 : a[i - (n - a.length)];
    const db = i < n - b.length ? 1 : b[i - (n - b.length)];
    if (da === db || db === 1) out[i] = da;
    else if (da === 1) out[i] = db;
    else throw new OpError(op, `shapes ${fmtShape(a)} and ${fmtShape(b)} cannot be broadcast: dimension ${i} is ${da} vs ${db}`);
  }
  return out;
}

/** Product of dims, symbolic if any dim is a symbol (`N*64`). */
export function dimProduct(dims: readonly Dim[]): Dim {
  let n = 1;
  const syms: string[] = [];
  for (const d of dims) {
    if (typeof d === 'number') n *= d;
    else syms.push(d);
  }
  if (syms.length === 0) return n;
  if (n === 0) return 0;
  return n === 1 ? syms.join('*') : `${syms.join('*')}*${n}`;
}
