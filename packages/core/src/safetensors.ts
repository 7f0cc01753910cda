// The safetensors format (Hugging Face): an 8-byte little-endian header length N, N bytes of JSON
// header (`{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__"?: {str: str}}`,
// offsets relative to the data section), then raw little-endian data. Invariant: the reader
// checks every length, offset, dtype and size before it allocates or converts anything, so a
// corrupt or hostile file gets a SafetensorsError naming the problem — never a crash, a hang or
// a huge allocation — and nothing in the file is executed.

import { fmtShape, toBits16, type DType, type TypedArray } from '@kiln/ir-spec';
import { Tensor } from './tensor.js';

/** A malformed safetensors file, or tensors that cannot be written as one. */
export class SafetensorsError extends Error {
  constructor(message: string) {
    super(`safetensors: ${message}`);
    this.name = 'SafetensorsError';
  }
}

/** Element size in bytes of each file dtype we can read, and the Kiln dtype it becomes. */
const FILE_DTYPES: Record<string, { size: number; to: DType }> = {
  F32: { size: 4, to: 'float32' },
  F16: { size: 2, to: 'float16' },
  BF16: { size: 2, to: 'bfloat16' },
  F64: { size: 8, to: 'float32' },
  I64: { size: 8, to: 'int32' },
  I32: { size: 4, to: 'int32' },
  I16: { size: 2, to: 'int32' },
  I8: { size: 1, to: 'int32' },
  U8: { size: 1, to: 'int32' },
  BOOL: { size: 1, to: 'bool' },
};
const WRITE_DTYPE: Record<DType, string> = { float32: 'F32', float16: 'F16', bfloat16: 'BF16', int32: 'I32', bool: 'BOOL', int8: 'I8' };

/** The safetensors reference implementation refuses headers past 100 MB; so do we. */
const MAX_HEADER = 100_000_000;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** A safetensors header nests 3 deep (root → entry → shape); anything deeper is refused unparsed. */
const MAX_HEADER_DEPTH = 3;
/** Ranks past this are refused (the IR's limit too). */
const MAX_RANK = 32;

interface Entry { name: string; dtype: string; shape: number[]; begin: number; end: number }

/**
 * One linear pass over the header text before JSON.parse: refuses nesting deeper than a
 * safetensors header has (a 20 MB `[[[[...` would otherwise cost seconds and a gigabyte before
 * failing) and a key that appears twice in one object (JSON.parse would keep the last silently,
 * so two readers could see different tensors). Malformed JSON is left for JSON.parse to report.
 */
function prescanHeader(text: string): void {
  const keys: Set<string>[] = [];
  const kinds: string[] = []; // '{' or '[' per open container
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) { // a string: find its end, then whether it is an object key
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1;
      let k = j + 1;
      while (k < text.length && (text.charCodeAt(k) === 0x20 || text.charCodeAt(k) === 0x0a || text.charCodeAt(k) === 0x0d || text.charCodeAt(k) === 0x09)) k++;
      if (text.charCodeAt(k) === 0x3a && kinds[kinds.length - 1] === '{') {
        let key: string;
        try { key = JSON.parse(text.slice(i, j + 1)) as string; } catch { return; } // JSON.parse reports it
        const seen = keys[keys.length - 1];
        if (seen.has(key)) throw new SafetensorsError(`the header has key ${JSON.stringify(key)} twice in one object${kinds.length === 1 ? ' (two tensors of the same name)' : ''}; a header names each key once`);
        seen.add(key);
      }
      i = j;
    } else if (c === 0x7b || c === 0x5b) {
      if (kinds.length >= MAX_HEADER_DEPTH) throw new SafetensorsError(`the header nests deeper than ${MAX_HEADER_DEPTH} levels (a safetensors header is {name: {dtype, shape: [...], data_offsets: [...]}}): corrupt or not a safetensors file`);
      kinds.push(c === 0x7b ? '{' : '[');
      keys.push(new Set());
    } else if (c === 0x7d || c === 0x5d) {
      kinds.pop();
      keys.pop();
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Defines `key` as an own enumerable property (safe for keys such as `__proto__`). */
function put<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Reads and validates the header; returns the entries, the metadata and where data starts. */
function readHeader(bytes: Uint8Array): { entries: Entry[]; metadata: Record<string, string> | null; dataStart: number } {
  if (bytes.length < 8) throw new SafetensorsError(`truncated file: ${bytes.length} bytes, but the header length alone takes 8`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lo = dv.getUint32(0, true), hi = dv.getUint32(4, true);
  const n = hi * 2 ** 32 + lo;
  if (hi !== 0 || n > MAX_HEADER) throw new SafetensorsError(`header length ${hi !== 0 ? `${hi}·2^32+${lo}` : n} is larger than the ${MAX_HEADER}-byte limit (corrupt file?)`);
  if (8 + n > bytes.length) throw new SafetensorsError(`header length ${n} runs past the end of the file (${bytes.length} bytes, so at most ${bytes.length - 8} for the header): truncated or not a safetensors file`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n));
  } catch {
    throw new SafetensorsError('the header is not valid UTF-8');
  }
  prescanHeader(text);
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (e) {
    throw new SafetensorsError(`the header is not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!isObject(header)) throw new SafetensorsError('the header must be a JSON object of tensor entries');

  const dataStart = 8 + n, dataLen = bytes.length - dataStart;
  let metadata: Record<string, string> | null = null;
  const entries: Entry[] = [];
  for (const [name, v] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (!isObject(v)) throw new SafetensorsError('__metadata__ must be an object of string values');
      metadata = {};
      for (const [k, mv] of Object.entries(v)) {
        if (typeof mv !== 'string') throw new SafetensorsError(`__metadata__ value for '${k}' must be a string, got ${JSON.stringify(mv)}`);
        put(metadata, k, mv);
      }
      continue;
    }
    if (!isObject(v)) throw new SafetensorsError(`entry '${name}' must be an object with dtype, shape and data_offsets`);
    const { dtype, shape, data_offsets: offs } = v;
    if (typeof dtype !== 'string') throw new SafetensorsError(`tensor '${name}': dtype must be a string, got ${JSON.stringify(dtype)}`);
    const info = FILE_DTYPES[dtype];
    if (!Object.prototype.hasOwnProperty.call(FILE_DTYPES, dtype) || !info) {
      throw new SafetensorsError(`tensor '${name}': unknown or unsupported dtype '${dtype}' (supported: ${Object.keys(FILE_DTYPES).join(', ')})`);
    }
    if (!Array.isArray(shape) || !shape.every(isCount)) throw new SafetensorsError(`tensor '${name}': shape must be a list of non-negative integers, got ${JSON.stringify(shape)}`);
    if (shape.length > MAX_RANK) throw new SafetensorsError(`tensor '${name}': rank ${shape.length} is above the limit of ${MAX_RANK}`);
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every(isCount)) {
      throw new SafetensorsError(`tensor '${name}': data_offsets must be [begin, end] with non-negative integers, got ${JSON.stringify(offs)}`);
    }
    const [begin, end] = offs as [number, number];
    if (begin > end) throw new SafetensorsError(`tensor '${name}': data_offsets [${begin}, ${end}] end before they begin`);
    if (end > dataLen) throw new SafetensorsError(`tensor '${name}': data_offsets [${begin}, ${end}] run past the end of the data section (${dataLen} bytes): truncated file?`);
    const count = shape.reduce((a: number, d: number) => a * d, 1);
    const want = count * info.size;
    if (!Number.isSafeInteger(want) || want !== end - begin) {
      throw new SafetensorsError(`tensor '${name}': ${dtype}${fmtShape(shape)} needs ${want} bytes but data_offsets [${begin}, ${end}] hold ${end - begin}`);
    }
    entries.push({ name, dtype, shape, begin, end });
  }
  // Tensors may not share bytes: sort by start and check neighbours.
  const byStart = entries.filter((e) => e.end > e.begin).sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < byStart.length; i++) {
    const p = byStart[i - 1], c = byStart[i];
    if (c.begin < p.end) throw new SafetensorsError(`tensors '${p.name}' [${p.begin}, ${p.end}] and '${c.name}' [${c.begin}, ${c.end}] overlap in the data section`);
  }
  return { entries, metadata, dataStart };
}

/** Converts one entry's bytes (already bounds-checked) to a Kiln buffer. */
function decode(e: Entry, bytes: Uint8Array, at: number): TypedArray {
  const n = (e.end - e.begin) / FILE_DTYPES[e.dtype].size;
  const dv = new DataView(bytes.buffer, bytes.byteOffset + at, e.end - e.begin);
  switch (e.dtype) {
    case 'F32': {
      if (LITTLE_ENDIAN) return new Float32Array(bytes.slice(at, at + n * 4).buffer);
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
      return out;
    }
    case 'F16': {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = halfToFloat(dv.getUint16(i * 2, true));
      return out;
    }
    case 'BF16': {
      // bfloat16 is the top half of a float32.
      const out = new Float32Array(n), bits = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) bits[i] = dv.getUint16(i * 2, true) << 16;
      return out;
    }
    case 'F64': {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getFloat64(i * 8, true);
      return out;
    }
    case 'I64': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        const lo = dv.getUint32(i * 8, true), hi = dv.getInt32(i * 8 + 4, true);
        // Fits in int32 exactly when the high word is the sign extension of the low word.
        if (hi !== (lo | 0) >> 31) {
          const v = dv.getBigInt64(i * 8, true);
          throw new SafetensorsError(`tensor '${e.name}': I64 value ${v} at element ${i} does not fit in int32 (Kiln's integer type)`);
        }
        out[i] = lo | 0;
      }
      return out;
    }
    case 'I32': {
      if (LITTLE_ENDIAN) return new Int32Array(bytes.slice(at, at + n * 4).buffer);
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getInt32(i * 4, true);
      return out;
    }
    case 'I16': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getInt16(i * 2, true);
      return out;
    }
    case 'I8': {
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) out[i] = dv.getInt8(i);
      return out;
    }
    case 'U8': return Int32Array.from(bytes.subarray(at, at + n));
    case 'BOOL': {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = bytes[at + i] ? 1 : 0;
      return out;
    }
    default: throw new SafetensorsError(`tensor '${e.name}': unsupported dtype '${e.dtype}'`);
  }
}

/** IEEE half → number (subnormals, infinities and NaN included). */
function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

function asBytes(bytes: Uint8Array | ArrayBuffer): Uint8Array {
  // A Node Buffer (readFileSync) is a Uint8Array whose slice() shares memory: view it as a plain
  // Uint8Array so that the decoders' slice() copies.
  if (bytes instanceof Uint8Array) return bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  throw new SafetensorsError('expected the file contents as a Uint8Array (or ArrayBuffer)');
}

/**
 * Reads a safetensors file: its tensors (F32/F64 become float32, F16 float16, BF16 bfloat16; I64/I32/I16/I8/U8
 * become int32, with an error for an I64 value outside int32; BOOL becomes bool) and its
 * `__metadata__` (null when absent).
 */
export function parseSafetensors(data: Uint8Array | ArrayBuffer): { tensors: Record<string, Tensor>; metadata: Record<string, string> | null } {
  const bytes = asBytes(data);
  const { entries, metadata, dataStart } = readHeader(bytes);
  const tensors: Record<string, Tensor> = {};
  for (const e of entries) {
    const buf = decode(e, bytes, dataStart + e.begin);
    put(tensors, e.name, Tensor._fromCpu({ data: buf, shape: e.shape, dtype: FILE_DTYPES[e.dtype].to }));
  }
  return { tensors, metadata };
}

/**
 * The tensors of a safetensors file (e.g. a PyTorch `state_dict` saved with
 * `safetensors.torch.save_file`), ready for `module.loadStateDict`.
 * @example const sd = loadSafetensors(readFileSync('model.safetensors')); model.loadStateDict(sd);
 */
export function loadSafetensors(bytes: Uint8Array | ArrayBuffer): Record<string, Tensor> {
  return parseSafetensors(bytes).tensors;
}

/**
 * Writes tensors (float32 → F32, int32 → I32, bool → BOOL) and optional string metadata as a
 * safetensors file, in the order given. The header is padded with spaces to an 8-byte boundary.
 * @example writeFileSync('model.safetensors', saveSafetensors(model.stateDict()));
 */
export function saveSafetensors(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata !== undefined) {
    if (!isObject(metadata)) throw new SafetensorsError('metadata must be an object of string values');
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new SafetensorsError(`metadata value for '${k}' must be a string, got ${typeof v}`);
    }
    put(header, '__metadata__', { ...metadata });
  }
  const parts: { t: Tensor; begin: number; bytes: number }[] = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    if (name === '' || name === '__metadata__') throw new SafetensorsError(`'${name}' cannot be a tensor name`);
    if (!(t instanceof Tensor)) throw new SafetensorsError(`value for '${name}' is not a Tensor`);
    const size = FILE_DTYPES[WRITE_DTYPE[t.dtype]].size;
    const nbytes = t.numel() * size;
    put(header, name, { dtype: WRITE_DTYPE[t.dtype], shape: [...t.shape], data_offsets: [offset, offset + nbytes] });
    parts.push({ t, begin: offset, bytes: nbytes });
    offset += nbytes;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + offset);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, json.length, true);
  dv.setUint32(4, 0, true);
  out.set(json, 8);
  const base = 8 + json.length;
  for (const { t, begin, bytes: nbytes } of parts) {
    const src = t.data;
    const at = base + begin;
    if (t.dtype === 'float16' || t.dtype === 'bfloat16') {
      // Held widened in memory (ir-spec dtype.ts); the file gets the 16-bit patterns.
      toBits16(src as Float32Array, t.dtype).forEach((b, i) => dv.setUint16(at + i * 2, b, true));
    } else if (LITTLE_ENDIAN || t.dtype === 'bool') {
      out.set(new Uint8Array(src.buffer, src.byteOffset, nbytes), at);
    } else {
      const n = t.numel();
      for (let i = 0; i < n; i++) {
        if (t.dtype === 'float32') dv.setFloat32(at + i * 4, src[i], true);
        else dv.setInt32(at + i * 4, src[i], true);
      }
    }
  }
  return out;
}
