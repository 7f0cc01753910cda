// `.tsgraph` bytes → header, tensors and Graph. Invariant: safe on any input — nothing from
// the file is executed, every number that sizes an allocation or indexes the buffer is checked
// first (header length against the file and a cap, each tensor's offset and length against the
// blob, each length against its shape), nesting is bounded before recursive code runs, and every
// refusal is a TsgraphError naming the place. Checks run in layout order, so the code reports the
// first thing wrong: magic, version, lengths, JSON, schema, tensor table, graph, verifier.

import { fromBits16, isReducedFloat, type DType, type TypedArray } from '../dtype.js';
import type { Graph, TensorData } from '../ir/graph.js';
import { OpError } from '../shape.js';
import { verifyGraph, VerifyError } from '../ir/verify.js';
import { DimError } from '../ir/dims.js';
import { TsgraphError } from './errors.js';
import {
  ALIGN, CHECKSUM_ALGORITHM, CHECKSUM_MINOR, HALF_MINOR, DTYPE_BYTES, MAX_HEADER_BYTES, MAX_JSON_DEPTH, PREFIX_BYTES, TSGRAPH_MAGIC, TSGRAPH_MAJOR, TSGRAPH_MINOR,
  type TensorEntryJson, type TsgraphHeader,
} from './format.js';
import { checkJsonShape } from './json.js';
import { formatPath, headerSchema, nodesWellFormed } from './schema.js';
import { rebuildGraph } from './decode-graph.js';
import { xxh32Hex, type Xxh32Stripes } from './checksum.js';

export interface DecodedTsgraph {
  readonly graph: Graph;
  readonly header: TsgraphHeader;
}

export interface TsgraphLayout {
  readonly header: TsgraphHeader;
  /** Byte offset of the blob in the file. */
  readonly blobOffset: number;
  readonly blobLength: number;
}

const REEXPORT = 're-export the model with `jit.save` / `kiln compile`';

export interface DecodeOptions {
  /**
   * Check the blob against the header's checksum (default true). Turning it off saves one pass
   * over the tensor data (about 15–30 ms per 50 MB in Node) for huge files whose integrity is checked
   * elsewhere; a file without a checksum (format 1.0) is read either way.
   */
  readonly verifyChecksum?: boolean;
  /**
   * The caller hands `bytes` over (default false): tensors become views into it where their
   * bytes are aligned for their dtype (no copy of the weights; the graph then keeps `bytes`
   * alive), and the caller must not write `bytes` afterwards. Without it every tensor is copied,
   * so the graph never aliases the caller's memory.
   */
  readonly adoptBytes?: boolean;
  /**
   * A faster loop for the bulk of the checksum, computing exactly what the JavaScript one does
   * (checksum.ts Xxh32Stripes): the CPU runtime passes its WebAssembly SIMD loop when it read the
   * file into its kernel memory. The check itself is the same either way.
   */
  readonly checksumStripes?: Xxh32Stripes;
}

/**
 * Reads and checks a whole `.tsgraph` file: layout, header schema, tensor table, and the graph
 * (re-typed node by node and verified). Throws a TsgraphError on any defect.
 *
 * @example
 * ```ts
 * const { graph, header } = decodeTsgraph(new Uint8Array(readFileSync('model.tsgraph')));
 * header.inputs; // [{ name: 'x', type: 'f32[N,3,32,32]' }]
 * ```
 */
export function decodeTsgraph(bytes: Uint8Array, opts: DecodeOptions = {}): DecodedTsgraph {
  const layout = readTsgraphHeader(bytes);
  if (opts.verifyChecksum ?? true) verifyChecksum(bytes, layout, opts.checksumStripes);
  const tensors = readTensors(bytes, layout, opts.adoptBytes ?? false);
  try {
    const graph = rebuildGraph(layout.header, tensors);
    verifyGraph(graph, { typesInferred: true }); // rebuildGraph typed every node with inferTypes
    return { graph, header: layout.header };
  } catch (e) {
    if (e instanceof TsgraphError) throw e;
    // Every failure of reading a file is a TsgraphError: an error class the checks did not
    // foresee (a TypeError from a file's odd value) is a refusal of the graph too, never a crash.
    const known = e instanceof VerifyError || e instanceof OpError || e instanceof RangeError || e instanceof DimError;
    const why = known ? (e as Error).message : `${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} (an unexpected error of the reader; please report it with the file)`;
    throw new TsgraphError('VERIFY', `the graph fails verification: ${why}\nThe file is corrupt or was written by an incompatible Kiln; ${REEXPORT}`, { cause: e });
  }
}

/**
 * Reads and checks the layout, the header and the tensor table, without reading tensor data
 * or the graph (for inspection tools).
 *
 * @example
 * ```ts
 * const { header } = readTsgraphHeader(bytes);
 * console.log(header.producer, header.tensors.length);
 * ```
 */
export function readTsgraphHeader(bytes: Uint8Array): TsgraphLayout {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('decodeTsgraph expects the file contents as a Uint8Array');
  checkMagic(bytes);
  if (bytes.length < PREFIX_BYTES) throw truncated(bytes.length, PREFIX_BYTES, 'the 24-byte prefix');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const major = view.getUint16(8, true), minor = view.getUint16(10, true), flags = view.getUint32(12, true);
  if (major !== TSGRAPH_MAJOR) {
    const hint = major > TSGRAPH_MAJOR ? 'upgrade Kiln to read it' : `${REEXPORT} using this Kiln`;
    throw new TsgraphError('UNSUPPORTED_VERSION', `the file has format version ${major}.${minor}; this reader supports version ${TSGRAPH_MAJOR}.x (up to ${TSGRAPH_MAJOR}.${TSGRAPH_MINOR}): ${hint}`);
  }
  if (flags !== 0) {
    throw new TsgraphError('UNSUPPORTED_VERSION', `the file sets flags 0x${flags.toString(16)} (bytes 12..15), which format ${TSGRAPH_MAJOR}.${TSGRAPH_MINOR} reserves as 0: the file needs a newer Kiln, or is corrupt`);
  }
  const headerLength = view.getBigUint64(16, true);
  if (headerLength > BigInt(MAX_HEADER_BYTES)) {
    throw new TsgraphError('HEADER_TOO_LARGE', `the header length (bytes 16..23) is ${headerLength} bytes, above the ${MAX_HEADER_BYTES}-byte limit: the file is corrupt or not written by Kiln; ${REEXPORT}`);
  }
  const hlen = Number(headerLength);
  if (PREFIX_BYTES + hlen > bytes.length) throw truncated(bytes.length, PREFIX_BYTES + hlen, `the ${hlen}-byte header`);
  const blobOffset = Math.ceil((PREFIX_BYTES + hlen) / ALIGN) * ALIGN;
  if (blobOffset > bytes.length) throw truncated(bytes.length, blobOffset, 'the padding after the header');

  const header = parseHeader(bytes.subarray(PREFIX_BYTES, PREFIX_BYTES + hlen), major, minor);
  const blobLength = bytes.length - blobOffset;
  checkTensorTable(header.tensors, blobLength);
  return { header, blobOffset, blobLength };
}

/**
 * Checks the blob against `header.checksum` (SPEC.md §13.5 step 12). A 1.0 file has none and
 * passes; a checksum of an algorithm this reader does not know (a newer minor) is refused.
 */
export function verifyChecksum(bytes: Uint8Array, layout: TsgraphLayout, stripes?: Xxh32Stripes): void {
  const c = layout.header.checksum;
  if (!c) return;
  if (c.algorithm !== CHECKSUM_ALGORITHM) {
    throw new TsgraphError('UNSUPPORTED_VERSION', `the header's checksum uses algorithm '${c.algorithm}', which this reader does not know (it checks '${CHECKSUM_ALGORITHM}'): upgrade Kiln, or load with { verifyChecksum: false } to skip the check`);
  }
  const got = xxh32Hex(bytes.subarray(layout.blobOffset), stripes);
  if (got !== c.blob) {
    throw new TsgraphError('CHECKSUM_MISMATCH', `the tensor data (blob bytes ${layout.blobOffset}..${bytes.length}) has ${CHECKSUM_ALGORITHM} checksum ${got} but the header records ${c.blob}: the weights were changed or corrupted after the file was written (a bad disk, download or copy?); copy the file again or ${REEXPORT}. To load it anyway, pass { verifyChecksum: false }`);
  }
}

function checkMagic(bytes: Uint8Array): void {
  const n = Math.min(bytes.length, TSGRAPH_MAGIC.length);
  for (let i = 0; i < n; i++) {
    if (bytes[i] !== TSGRAPH_MAGIC[i]) {
      const head = Array.from(bytes.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join(' ');
      throw new TsgraphError('BAD_MAGIC', `not a .tsgraph file: it starts with bytes ${head}, expected "KILNGRPH" (4b 49 4c 4e 47 52 50 48); pass a file written by \`jit.save\` or \`kiln compile\` (for safetensors weights use loadSafetensors)`);
    }
  }
  if (bytes.length < TSGRAPH_MAGIC.length) throw truncated(bytes.length, TSGRAPH_MAGIC.length, 'the magic');
}

function truncated(have: number, need: number, what: string): TsgraphError {
  return new TsgraphError('TRUNCATED', `the file is ${have} bytes but ${what} ends at byte ${need}: it was cut short (an interrupted download or copy?); copy the file again or ${REEXPORT}`);
}

function parseHeader(raw: Uint8Array, major: number, minor: number): TsgraphHeader {
  let text: string;
  try {
    // The lenient decoder marks every invalid sequence with U+FFFD: a text without one came from
    // valid UTF-8 (what Kiln writes is all ASCII), and only a text with one — invalid bytes or a
    // real U+FFFD — is decoded again by the validating decoder. No JavaScript pass over the bytes.
    text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(raw);
    if (text.includes('\uFFFD')) new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(raw);
  } catch (e) {
    throw new TsgraphError('BAD_JSON', `the header (bytes ${PREFIX_BYTES}..${PREFIX_BYTES + raw.length}) is not valid UTF-8: the file is corrupt; ${REEXPORT}`, { cause: e });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new TsgraphError('BAD_JSON', `the header (bytes ${PREFIX_BYTES}..${PREFIX_BYTES + raw.length}) is not valid JSON (${why}): the file is corrupt; ${REEXPORT}`, { cause: e });
  }
  const shape = checkJsonShape(json, MAX_JSON_DEPTH);
  if (shape) throw new TsgraphError('SCHEMA', `header ${shape}; ${REEXPORT}`);
  const lenient = minor > TSGRAPH_MINOR;
  // The nodes, nearly all of a large header, are checked by hand when they pass as they are.
  const graph = (json as { graph?: { nodes?: unknown } } | null)?.graph;
  const nodesChecked = !lenient && typeof graph === 'object' && graph !== null && nodesWellFormed(graph.nodes);
  const r = headerSchema(lenient, nodesChecked).safeParse(json);
  if (!r.success) {
    const [issue] = r.error.issues;
    const more = r.error.issues.length > 1 ? ` (and ${r.error.issues.length - 1} more problem(s))` : '';
    throw new TsgraphError('SCHEMA', `header field ${formatPath(issue.path)}: ${issue.message}${more}; the file does not follow format ${major}.${minor}: ${REEXPORT}`);
  }
  const header = r.data;
  if (header.format.major !== major || header.format.minor !== minor) {
    throw new TsgraphError('SCHEMA', `header field format says ${header.format.major}.${header.format.minor} but the file prefix says ${major}.${minor}: the file is corrupt; ${REEXPORT}`);
  }
  if (minor < CHECKSUM_MINOR && header.checksum) {
    throw new TsgraphError('SCHEMA', `header field checksum is not part of format ${major}.${minor} (it was added in ${major}.${CHECKSUM_MINOR}): the header was edited or is corrupt; ${REEXPORT}`);
  }
  const half = header.tensors.find((t) => isReducedFloat(t.dtype) || t.storage);
  if (half && minor < HALF_MINOR) {
    throw new TsgraphError('SCHEMA', `tensor '${half.name}' is ${half.storage ? `stored as ${half.storage}` : half.dtype}, which format ${major}.${minor} cannot hold (added in ${major}.${HALF_MINOR}): the header was edited or is corrupt; ${REEXPORT}`);
  }
  if (minor >= CHECKSUM_MINOR && !header.checksum) {
    throw new TsgraphError('SCHEMA', `header field checksum is missing, but files of format ${major}.${CHECKSUM_MINOR} and later always carry one: the header was edited or is corrupt; ${REEXPORT}`);
  }
  return header;
}

/** Number of elements of a concrete shape, or Infinity when it exceeds `limit` (no overflow). */
function boundedNumel(shape: readonly number[], limit: number): number {
  if (shape.includes(0)) return 0;
  let n = 1;
  for (const d of shape) {
    n *= d;
    if (n > limit) return Infinity;
  }
  return n;
}

function checkTensorTable(entries: readonly TensorEntryJson[], blobLength: number): void {
  entries.forEach((t, i) => {
    const where = `tensor '${t.name}' (tensors[${i}], ${t.dtype}[${t.shape.join(',')}])`;
    const elems = boundedNumel(t.shape, blobLength);
    if (t.storage && t.dtype !== 'float32') throw new TsgraphError('SCHEMA', `${where} has storage ${t.storage}, which only float32 tensors may have: the tensor table is corrupt; ${REEXPORT}`);
    const want = elems * DTYPE_BYTES[t.storage ?? t.dtype];
    if (t.length !== want) {
      const need = Number.isFinite(want) ? `${want} bytes` : `more bytes than the whole ${blobLength}-byte blob`;
      throw new TsgraphError('SIZE_MISMATCH', `${where} has length ${t.length} but its shape needs ${need}: the tensor table is corrupt; ${REEXPORT}`);
    }
    if (t.offset > blobLength || t.length > blobLength - t.offset) {
      throw new TsgraphError('OFFSET_OUT_OF_RANGE', `${where} spans blob bytes ${t.offset}..${t.offset + t.length}, past the end of the ${blobLength}-byte blob: the file is truncated or corrupt; ${REEXPORT}`);
    }
  });
  const byOffset = entries.filter((t) => t.length > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byOffset.length; i++) {
    const a = byOffset[i - 1], b = byOffset[i];
    if (b.offset < a.offset + a.length) {
      throw new TsgraphError('OVERLAP', `tensors '${a.name}' (bytes ${a.offset}..${a.offset + a.length}) and '${b.name}' (bytes ${b.offset}..${b.offset + b.length}) overlap in the blob: the tensor table is corrupt; ${REEXPORT}`);
    }
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Every tensor of the blob (checked by checkTensorTable) as a typed array: a view into `bytes`
 * when `adopt` and the bytes are aligned for the dtype on a little-endian host, else a copy.
 */
function readTensors(bytes: Uint8Array, layout: TsgraphLayout, adopt: boolean): Map<string, TensorData> {
  const out = new Map<string, TensorData>();
  layout.header.tensors.forEach((t, i) => {
    const start = layout.blobOffset + t.offset;
    let raw: Uint8Array;
    if (adopt && LITTLE_ENDIAN && (bytes.byteOffset + start) % 4 === 0) {
      raw = bytes.subarray(start, start + t.length);
    } else {
      // A fresh, offset-0 copy: `bytes` may be a view into a larger (or pooled, as Node's Buffer)
      // ArrayBuffer at any alignment, and the graph must not alias the caller's memory.
      raw = new Uint8Array(t.length);
      raw.set(bytes.subarray(start, start + t.length));
    }
    const stored = t.storage ?? t.dtype;
    const data = isReducedFloat(stored) ? widen16(stored, raw) : toTyped(t.dtype, raw);
    if (t.dtype === 'bool') {
      const bad = raw.findIndex((b) => b > 1);
      if (bad >= 0) throw new TsgraphError('SCHEMA', `tensors[${i}] ('${t.name}', bool): element ${bad} is byte ${raw[bad]}, but bool data is 0 or 1: the file is corrupt; ${REEXPORT}`);
    }
    out.set(t.name, { dtype: t.dtype, shape: [...t.shape], data, ...(t.storage ? { storage: t.storage } : {}) });
  });
  return out;
}

/** float16/bfloat16 bits (little-endian) widened to the Float32Array that holds such values in memory (dtype.ts). */
function widen16(dtype: 'float16' | 'bfloat16', raw: Uint8Array): Float32Array {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const bits = new Uint16Array(raw.length / 2);
  for (let i = 0; i < bits.length; i++) bits[i] = view.getUint16(i * 2, true);
  return fromBits16(bits, dtype);
}

/** `raw` (4-byte aligned on a little-endian host) as the dtype's array. */
function toTyped(dtype: DType, raw: Uint8Array): TypedArray {
  if (dtype === 'bool') return raw;
  if (dtype === 'int8') return new Int8Array(raw.buffer, raw.byteOffset, raw.length);
  const n = raw.length / 4;
  if (LITTLE_ENDIAN) return dtype === 'float32' ? new Float32Array(raw.buffer, raw.byteOffset, n) : new Int32Array(raw.buffer, raw.byteOffset, n);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const out = dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = dtype === 'float32' ? view.getFloat32(i * 4, true) : view.getInt32(i * 4, true);
  return out;
}
