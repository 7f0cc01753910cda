// The `.tsgraph` layout constants and the shape of its JSON header (SPEC.md §13 is
// the normative description; keep the two in step). Invariant: a change that an older reader
// cannot ignore bumps TSGRAPH_MAJOR; an additive change that older readers may skip bumps
// TSGRAPH_MINOR.
//
//   offset  size  field
//   0       8     magic "KILNGRPH"
//   8       2     format major (u16 LE)
//   10      2     format minor (u16 LE)
//   12      4     flags (u32 LE, reserved, 0)
//   16      8     header length L in bytes (u64 LE)
//   24      L     header: UTF-8 JSON
//   24+L    pad   zero bytes up to the next multiple of 64 = blob start
//   blob    ...   tensors, each at a 64-byte-aligned offset from the blob start

import type { DType } from '../dtype.js';

/** The 8 magic bytes, ASCII `KILNGRPH`. */
export const TSGRAPH_MAGIC: readonly number[] = Array.from('KILNGRPH', (c) => c.charCodeAt(0));
/** The format version this code writes; it reads any file with this major and any minor. */
export const TSGRAPH_MAJOR = 1;
export const TSGRAPH_MINOR = 2;
/** The first minor version whose tensor table may hold float16/bfloat16 tensors (2 bytes each);
 * writers use it only for files that hold one, so other files stay 1.1, byte for byte. */
export const HALF_MINOR = 2;
/** The first minor version whose files carry `checksum` (files of 1.0 have none). */
export const CHECKSUM_MINOR = 1;
/** The checksum algorithm writers use (checksum.ts). */
export const CHECKSUM_ALGORITHM = 'xxh32';
/** Size of the fixed prefix (magic, version, flags, header length). */
export const PREFIX_BYTES = 24;
/** Alignment of the blob start and of every tensor inside it. */
export const ALIGN = 64;
/** Largest header accepted, so a forged length cannot make a reader allocate or scan gigabytes. */
export const MAX_HEADER_BYTES = 64 * 1024 * 1024;
/** Deepest JSON nesting accepted in the header (regions nest about 4 levels per `if`/`loop`). */
export const MAX_JSON_DEPTH = 256;
/** Byte size of one element of each dtype in the blob. */
export const DTYPE_BYTES: Readonly<Record<DType, number>> = { float32: 4, float16: 2, bfloat16: 2, int32: 4, bool: 1, int8: 1 };
/** The producer written when the caller names none. Kept equal to ir-spec's package version by a test. */
export const DEFAULT_PRODUCER: Readonly<ProducerJson> = { name: '@kiln/ir-spec', version: '0.1.0' };

export interface ProducerJson { readonly name: string; readonly version: string }

/** A value definition: an SSA id, its type in text form, and an optional readable name. */
export interface ValueJson { readonly id: number; readonly type: string; readonly hint?: string }

export interface NodeJson {
  readonly op: string;
  /** Value ids; `null` stands for an omitted optional input. */
  readonly inputs: readonly (number | null)[];
  /** The op's attributes; non-finite numbers and -0 are written `{"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}`. */
  readonly attrs: Readonly<Record<string, unknown>>;
  readonly outputs: readonly ValueJson[];
  /** Omitted when the node has none. */
  readonly regions?: readonly BlockJson[];
  /** Omitted when empty. */
  readonly meta?: { readonly scope?: string; readonly loc?: string; readonly fused?: readonly { readonly op: string; readonly scope?: string; readonly loc?: string }[] };
}

export interface BlockJson {
  readonly args: readonly ValueJson[];
  readonly nodes: readonly NodeJson[];
  readonly yields: readonly number[];
}

export interface GraphInputJson extends ValueJson {
  readonly name: string;
  readonly kind: 'input' | 'param';
}

export interface GraphJson {
  readonly name: string;
  readonly inputs: readonly GraphInputJson[];
  readonly nodes: readonly NodeJson[];
  readonly outputs: readonly { readonly name: string; readonly id: number }[];
}

/** One entry of the tensor table; `offset` is relative to the blob start. */
export interface TensorEntryJson {
  readonly name: string;
  readonly dtype: DType;
  /**
   * A float32 tensor stored in 16 bits (format 1.2; `jit.optimizeForInference(m, { weights:
   * 'float16' })`): its values are exactly representable there, readers widen them to float32.
   */
  readonly storage?: 'float16' | 'bfloat16';
  readonly shape: readonly number[];
  readonly offset: number;
  readonly length: number;
}

export interface SignatureJson { readonly name: string; readonly type: string }

/** The blob's checksum: the algorithm and its value over every byte from the blob start to the
 * end of the file (8 lower-case hex digits for xxh32). */
export interface ChecksumJson { readonly algorithm: string; readonly blob: string }

/** The JSON header of a `.tsgraph` file, as stored. */
export interface TsgraphHeader {
  readonly format: { readonly major: number; readonly minor: number };
  readonly producer: ProducerJson;
  readonly metadata: Readonly<Record<string, string>>;
  readonly graph: GraphJson;
  /** The run-time inputs (graph inputs of kind `input`), in order. */
  readonly inputs: readonly SignatureJson[];
  readonly outputs: readonly SignatureJson[];
  /** Sorted by name (UTF-16 code unit order), names unique. */
  readonly tensors: readonly TensorEntryJson[];
  /** Reserved for WGSL kernels (`{key, wgsl, ...}` objects); carried through unchanged. */
  readonly kernels: readonly Readonly<Record<string, unknown>>[];
  /** The memory plan (memory-plan.ts: value name → buffer slot), or `null` when none was made. */
  readonly plan: unknown;
  /** Present in every file of format 1.1 and later; absent in 1.0 files (written before checksums). */
  readonly checksum?: ChecksumJson;
}
