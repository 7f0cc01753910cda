// Loading a `.tsgraph`: bytes from a buffer or a string source, the container decoded and
// verified by ir-spec, then a Model on the chosen device. Invariant: this file knows nothing
// about where strings come from — each entry point (index.ts for Node, browser.ts for
// browsers) passes its own reader, so the browser bundle never references a Node built-in.

import { decodeTsgraph, Graph, type TensorData } from '@kiln/ir-spec';
import { createDevice, type BackendChoice } from './backend.js';
import type { Device } from './device.js';
import { RuntimeError } from './errors.js';
import { checkKernelBindings } from './webgpu/check-kernels.js';
import { Model, type ModelOptions } from './model.js';
import { wasmXxh32Stripes } from './wasm/checksum.js';
import { wasmKernels } from './wasm/heap.js';

/** What load() reads: the file's bytes, or a path (Node) / URL (browsers, and http(s) in Node). */
export type ModelSource = Uint8Array | ArrayBuffer | string;

export interface LoadOptions extends Omit<ModelOptions, 'device' | 'verify'> {
  /**
   * Where to run (default `auto`: WebGPU on a hardware adapter when the file's WGSL covers its
   * whole graph, else the CPU).
   */
  readonly backend?: BackendChoice;
  /**
   * Check the tensor data against the checksum in the file's header (default true): a corrupted
   * file is refused with a CHECKSUM_MISMATCH TsgraphError instead of running with changed
   * weights. `false` skips the one pass over the data (about 15–30 ms per 50 MB in Node) for huge files.
   */
  readonly verifyChecksum?: boolean;
  /**
   * On WebGPU, time each dispatch with GPU timestamp queries where the adapter has them
   * (`timestamp-query`), so kiln's profiler reports each node's GPU time (`timing: 'gpu'`) instead
   * of waiting for each node; costs a compute pass per dispatch. Default false.
   */
  readonly profile?: boolean;
}

/** load()'s default maxRunMs: a run of a loaded file fails with TIME_LIMIT after a minute. */
export const LOAD_MAX_RUN_MS = 60_000;

/**
 * Reads the bytes a string source names; throws a SOURCE RuntimeError when it cannot. A reader
 * that knows the size first may read into `into(size)` when it gives a buffer.
 */
export type ReadSource = (source: string, into?: (size: number) => Uint8Array | undefined) => Promise<Uint8Array>;

/** Files at least this big are read straight into the CPU kernels' memory (weights used in place). */
const RESIDENT_MIN_BYTES = 1 << 20;
/**
 * Reading a file at least this big (millions of weights: layers big enough to split over the
 * threads) starts the kernels' worker threads first, so they boot while the read waits; on
 * ResNet-18 the first run then splits from its first layer (first run 205 → 165 ms).
 */
const WORKERS_MIN_BYTES = 8 << 20;

/**
 * Reads a string source for the CPU: a big file goes straight into a block of the WebAssembly
 * kernel memory (where the engine shares that memory), so its weights are read once into their
 * final place and the kernels use them there instead of copying each on first use. `done`
 * hands the block's lifetime to the decoded tensors (or frees it when decoding failed).
 */
async function readResident(source: string, read: ReadSource): Promise<{ bytes: Uint8Array; done: (arrays: readonly ArrayBufferView[] | null) => void }> {
  const heap = wasmKernels();
  let block: Uint8Array | undefined;
  const into = (size: number) => {
    if (!heap || size < RESIDENT_MIN_BYTES) return undefined;
    if (size >= WORKERS_MIN_BYTES) heap.startWorkers();
    return (block = heap.residentBlock(size));
  };
  let bytes: Uint8Array;
  try {
    bytes = await read(source, into);
  } catch (e) {
    if (block) heap!.free(block.byteOffset);
    throw e;
  }
  const done = (arrays: readonly ArrayBufferView[] | null) => {
    if (!block || bytes !== block) return;
    if (arrays === null) heap!.free(block.byteOffset);
    else heap!.freeWhenCollected(block.byteOffset, arrays.filter((a) => a.buffer === block!.buffer));
  };
  return { bytes, done };
}

/** `g` with every tensor that views `bytes` copied into its own array. */
function withOwnTensors(g: Graph, bytes: Uint8Array): Graph {
  const own = (t: TensorData): TensorData => (t.data.buffer === bytes.buffer ? { ...t, data: t.data.slice() } : t);
  return new Graph(g.name, g.inputs, g.body, g.outputs, new Map([...g.tensors].map(([k, t]) => [k, own(t)])), g.metadata);
}

/** load() with the string reader of the platform. */
export async function loadWith(source: ModelSource, opts: LoadOptions, read: ReadSource): Promise<Model> {
  let bytes: Uint8Array;
  // Bytes this function read itself belong to nobody else: the weights stay views into them.
  let owned = false;
  let settle: (arrays: readonly ArrayBufferView[] | null) => void = () => {};
  if (source instanceof Uint8Array) bytes = source;
  else if (source instanceof ArrayBuffer) bytes = new Uint8Array(source);
  else if (typeof source === 'string') {
    // WebGPU uploads the weights: only a run that may be on the CPU reads them into its memory.
    if (opts.backend === 'webgpu') bytes = await read(source);
    else ({ bytes, done: settle } = await readResident(source, read));
    owned = true;
  } else {
    const what = source === null ? 'null' : typeof source === 'object' ? (source as object).constructor?.name ?? 'an object' : typeof source;
    throw new RuntimeError('SOURCE', `load() takes a Uint8Array, an ArrayBuffer, or a path/URL string; got ${what}`);
  }
  const { verifyChecksum, backend, profile, ...modelOpts } = opts;
  let graph: Graph, device: Device;
  try {
    const heap = wasmKernels();
    // Bytes in the kernel memory are checksummed there (the same XXH32, its loop in SIMD).
    const checksumStripes = heap?.addressOf(bytes) !== undefined ? wasmXxh32Stripes(heap!) : undefined;
    const decoded = decodeTsgraph(bytes, { verifyChecksum, adoptBytes: owned, checksumStripes }); // checks the file and verifies the graph
    // Stored WGSL is checked whichever backend runs: a file whose kernels would bind other
    // buffers than their nodes' is refused at load, not when a WebGPU device meets it.
    checkKernelBindings(decoded.graph, decoded.header.kernels);
    device = await createDevice(backend ?? 'auto', { kernels: decoded.header.kernels, graph: decoded.graph, ...(profile ? { profile } : {}) });
    // A GPU (which `auto` may pick) is handed plain arrays: Dawn's writeBuffer does not read
    // views of a shared memory. The copies then free the kernel-memory block at once.
    const shared = typeof SharedArrayBuffer === 'function' && bytes.buffer instanceof SharedArrayBuffer;
    graph = device.backend === 'cpu' || !shared ? decoded.graph : withOwnTensors(decoded.graph, bytes);
  } catch (e) {
    settle(null);
    throw e;
  }
  settle([...graph.tensors.values()].map((t) => t.data));
  // A file's graph may loop for ever within the trip limit (a matmul per trip): runs of loaded
  // files are bounded in time unless the caller says otherwise.
  return new Model(graph, device, { ...modelOpts, maxRunMs: modelOpts.maxRunMs ?? LOAD_MAX_RUN_MS });
}
