// Input values for `kiln run`: random ones of a declared type, or read from JSON / .npy files.
// Invariant: every value handed to the runtime has exactly the dtype the graph declares and a
// shape read from the file (the runtime checks it against the declared type and names the input).

import { readFileSync } from 'node:fs';
import { convertArray, type DType, type TypedArray } from '@kiln/ir-spec';
import type { InputValue } from '@kiln/runtime';
import { UserError } from './errors.js';
import { concreteShape, parseInputSpec } from './input-spec.js';

const ARRAYS: Record<DType, (n: number | number[]) => TypedArray> = {
  float32: (n) => (typeof n === 'number' ? new Float32Array(n) : Float32Array.from(n)),
  float16: (n) => (typeof n === 'number' ? new Float32Array(n) : convertArray(n, 'float16') as Float32Array),
  bfloat16: (n) => (typeof n === 'number' ? new Float32Array(n) : convertArray(n, 'bfloat16') as Float32Array),
  int32: (n) => (typeof n === 'number' ? new Int32Array(n) : Int32Array.from(n)),
  bool: (n) => (typeof n === 'number' ? new Uint8Array(n) : Uint8Array.from(n, (v) => (v ? 1 : 0))),
  int8: (n) => (typeof n === 'number' ? new Int8Array(n) : Int8Array.from(n)),
};

/** A random input of `type` (text form, e.g. `f32[N,4]`), every symbol at `batch`. */
export function randomInput(name: string, type: string, batch: number): InputValue {
  if (!type.includes('[')) {
    if (type === 'bool') return true;
    return type === 'i32' ? 1 : 0.5;
  }
  const spec = parseInputSpec(`${name}:${type}`, `input '${name}'`);
  const shape = concreteShape(spec.shape, batch);
  const n = shape.reduce((a, b) => a * b, 1);
  const data = ARRAYS[spec.dtype](n);
  for (let i = 0; i < n; i++) data[i] = spec.dtype === 'float32' ? gaussian() : spec.dtype === 'int32' ? 0 : (i % 2);
  return { data, shape, dtype: spec.dtype };
}

function gaussian(): number {
  const u = 1 - Math.random(), v = Math.random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Reads an input from a `.json` file (`{ data, shape }` or nested arrays) or a `.npy` file. */
export function readInputFile(path: string, dtype: DType): InputValue {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new UserError(`${path}: cannot read the input file (${e instanceof Error ? e.message : String(e)})`);
  }
  if (path.endsWith('.npy')) return readNpy(path, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), dtype);
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new UserError(`${path}: not valid JSON (${e instanceof Error ? e.message : String(e)}); give { "data": [...], "shape": [...] } or nested arrays`);
  }
  if (json && typeof json === 'object' && !Array.isArray(json)) {
    const o = json as { data?: unknown; shape?: unknown };
    if (!Array.isArray(o.data) || !Array.isArray(o.shape) || !o.shape.every((d) => Number.isInteger(d))) {
      throw new UserError(`${path}: expected { "data": [numbers], "shape": [ints] }`);
    }
    return { data: ARRAYS[dtype](o.data.flat(Infinity) as number[]), shape: o.shape as number[], dtype };
  }
  const shape: number[] = [];
  for (let a: unknown = json; Array.isArray(a); a = a[0]) shape.push(a.length);
  const flat = Array.isArray(json) ? (json.flat(Infinity) as unknown[]) : [json];
  if (flat.length !== shape.reduce((a, b) => a * b, 1) || flat.some((v) => typeof v !== 'number' && typeof v !== 'boolean')) {
    throw new UserError(`${path}: nested arrays must be rectangular and hold numbers`);
  }
  return { data: ARRAYS[dtype](flat as number[]), shape, dtype };
}

/** A little-endian C-order `.npy` file of float32 (`<f4`) or int32 (`<i4`). */
function readNpy(path: string, b: Uint8Array, dtype: DType): InputValue {
  const magic = String.fromCharCode(...b.subarray(0, 6));
  if (magic !== '\x93NUMPY' || b.length < 10) throw new UserError(`${path}: not a .npy file`);
  const major = b[6];
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const hlen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  if (start + hlen > b.length) throw new UserError(`${path}: truncated .npy header`);
  const header = new TextDecoder().decode(b.subarray(start, start + hlen));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*True/.test(header);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (!descr || shapeText === undefined) throw new UserError(`${path}: unreadable .npy header: ${header.trim()}`);
  if (fortran) throw new UserError(`${path}: Fortran-order .npy is not supported; save with np.ascontiguousarray`);
  const shape = shapeText.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const n = shape.reduce((a, c) => a * c, 1);
  const off = start + hlen;
  const want = new Map([['<f4', 'float32'], ['<i4', 'int32']]).get(descr);
  if (!want) throw new UserError(`${path}: .npy dtype ${descr} is not supported; save float32 ('<f4') or int32 ('<i4')`);
  if (off + 4 * n > b.length) throw new UserError(`${path}: .npy data is shorter than its shape [${shape}]`);
  const raw = b.slice(off, off + 4 * n).buffer;
  const values = want === 'float32' ? new Float32Array(raw) : new Int32Array(raw);
  const data = ARRAYS[dtype](n);
  data.set(values);
  return { data, shape, dtype };
}
