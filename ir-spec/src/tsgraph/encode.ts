// Graph → `.tsgraph` bytes. Invariant: deterministic — the same graph (same structure, types,
// attributes, names and tensor bytes) gives byte-identical output: values are numbered in
// program order, JSON keys are sorted, tensors are laid out in name order, and nothing
// time- or machine-dependent is written. A graph the decoder would refuse is refused here
// (the verifier runs first), so a written file always reads back.

import { isReducedFloat, toBits16, type DType, type TypedArray } from '../dtype.js';
import { walkNodes, type Block, type Graph, type Node, type TensorData, type Value } from '../ir/graph.js';
import { typeToString, type IRType } from '../ir/types.js';
import { verifyGraph, VerifyError } from '../ir/verify.js';
import { TsgraphError } from './errors.js';
import { MEMORY_PLAN_KEY, readMemoryPlan } from './memory-plan.js';
import {
  ALIGN, CHECKSUM_ALGORITHM, CHECKSUM_MINOR, HALF_MINOR, DEFAULT_PRODUCER, DTYPE_BYTES, MAX_HEADER_BYTES, PREFIX_BYTES, TSGRAPH_MAGIC, TSGRAPH_MAJOR,
  type BlockJson, type GraphJson, type NodeJson, type ProducerJson, type TensorEntryJson, type TsgraphHeader, type ValueJson,
} from './format.js';
import { canonicalJson, compareCodeUnits, encodeAttrs, JsonValueError } from './json.js';
import { describeNode } from './describe.js';
import { xxh32Hex } from './checksum.js';
import { Scopes } from './scopes.js';
import { isValidDim, MAX_RANK } from './type-string.js';

export interface EncodeOptions {
  /** Written to `producer` (default: `@kiln/ir-spec` and its version). */
  readonly producer?: ProducerJson;
  /** Reserved WGSL kernels (`{key, wgsl, ...}` JSON objects), carried through unchanged. */
  readonly kernels?: readonly unknown[];
  /**
   * Maps each source location as written: every node's `meta.loc` and the `source` metadata
   * (e.g. an absolute path made relative, so the file does not depend on where it was built).
   */
  readonly location?: (loc: string) => string;
}

/** A `host_call` calls JavaScript of the process that built the graph: a file cannot carry it. */
function refuseHostCalls(graph: Graph): void {
  for (const n of walkNodes(graph.body)) {
    if (n.op !== 'host_call') continue;
    const name = String(n.attrs.name);
    throw new TsgraphError('SCHEMA', `encodeTsgraph: the graph calls back into JavaScript (host_call '${name}', a method marked @jit.ignore), ` +
      `which a saved file cannot carry. Remove @jit.ignore from ${name} so it is compiled, mark it @jit.unused if compiled code never needs it, ` +
      'or keep the model in this process instead of saving it');
  }
}

/**
 * Writes a graph and its tensors as a `.tsgraph` file (layout: SPEC.md §13).
 *
 * @example
 * ```ts
 * const b = new GraphBuilder('double');
 * const x = b.input('x', tensorType('float32', ['N', 4]));
 * b.output('y', b.op1('mul', [x, b.literal(2)]));
 * const bytes = encodeTsgraph(b.build());
 * decodeTsgraph(bytes).graph; // the same graph
 * ```
 */
export function encodeTsgraph(graph: Graph, opts: EncodeOptions = {}): Uint8Array {
  const { entries, blobLength, order } = layoutTensors(graph.tensors);
  try {
    verifyGraph(graph);
  } catch (e) {
    if (e instanceof VerifyError) throw new TsgraphError('VERIFY', `encodeTsgraph: the graph fails verification, so no reader would accept the file: ${e.message}`, { cause: e });
    throw e;
  }
  refuseHostCalls(graph);
  for (const [k, v] of Object.entries(graph.metadata)) {
    if (typeof v !== 'string') throw new TsgraphError('SCHEMA', `encodeTsgraph: metadata '${k}' is a ${typeof v}; metadata values are strings`);
  }
  const header0: TsgraphHeader = {
    format: { major: TSGRAPH_MAJOR, minor: entries.some((e) => isReducedFloat(e.dtype) || e.storage) ? HALF_MINOR : CHECKSUM_MINOR },
    producer: { name: opts.producer?.name ?? DEFAULT_PRODUCER.name, version: opts.producer?.version ?? DEFAULT_PRODUCER.version },
    metadata: Object.fromEntries(Object.entries(graph.metadata).filter(([k]) => k !== MEMORY_PLAN_KEY)
      .map(([k, v]) => [k, k === 'source' && opts.location ? opts.location(v) : v])),
    graph: graphToJson(graph, opts.location),
    inputs: graph.inputs.filter((i) => i.kind === 'input').map((i) => ({ name: i.name, type: typeText(i.value.type, `input '${i.name}'`) })),
    outputs: graph.outputs.map((o) => ({ name: o.name, type: typeText(o.value.type, `output '${o.name}'`) })),
    tensors: entries,
    kernels: checkKernels(opts.kernels ?? []),
    plan: readMemoryPlan(graph.metadata) ?? null,
    // A placeholder of the final width: the blob is written after the header's length is fixed.
    checksum: { algorithm: CHECKSUM_ALGORITHM, blob: '00000000' },
  };
  const headerBytes = (header: TsgraphHeader): Uint8Array => {
    try {
      return new TextEncoder().encode(canonicalJson(header, 'header'));
    } catch (e) {
      if (e instanceof JsonValueError) throw new TsgraphError('SCHEMA', `encodeTsgraph: ${e.message}`, { cause: e });
      throw e;
    }
  };
  const json0 = headerBytes(header0);
  if (json0.length > MAX_HEADER_BYTES) {
    throw new TsgraphError('HEADER_TOO_LARGE', `encodeTsgraph: the header would be ${json0.length} bytes, above the ${MAX_HEADER_BYTES}-byte limit readers accept; store large constants as tensors, not attributes`);
  }
  const blobStart = alignUp(PREFIX_BYTES + json0.length);
  const out = new Uint8Array(blobStart + blobLength);
  entries.forEach((e, i) => writeLittleEndian(out, blobStart + e.offset, order[i].data, e.storage ?? e.dtype));
  const json = headerBytes({ ...header0, checksum: { algorithm: CHECKSUM_ALGORITHM, blob: xxh32Hex(out.subarray(blobStart)) } });
  if (json.length !== json0.length) throw new Error('encodeTsgraph: internal error: the checksum changed the header length');
  out.set(TSGRAPH_MAGIC, 0);
  const view = new DataView(out.buffer);
  view.setUint16(8, TSGRAPH_MAJOR, true);
  view.setUint16(10, header0.format.minor, true);
  view.setUint32(12, 0, true);
  view.setBigUint64(16, BigInt(json.length), true);
  out.set(json, PREFIX_BYTES);
  return out;
}

const alignUp = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

const ARRAY_OF: Record<DType, { readonly name: string; new (n: number): TypedArray }> = { float32: Float32Array, float16: Float32Array, bfloat16: Float32Array, int32: Int32Array, bool: Uint8Array, int8: Int8Array };

function layoutTensors(tensors: ReadonlyMap<string, TensorData>): { entries: TensorEntryJson[]; blobLength: number; order: TensorData[] } {
  const names = [...tensors.keys()].sort(compareCodeUnits);
  const entries: TensorEntryJson[] = [];
  const order: TensorData[] = [];
  let cursor = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    if (!Object.hasOwn(DTYPE_BYTES, t.dtype)) throw new TsgraphError('SCHEMA', `encodeTsgraph: tensor '${name}' has dtype ${String(t.dtype)}; the format stores float32, int32, bool and int8`);
    if (!(t.data instanceof ARRAY_OF[t.dtype])) {
      throw new TsgraphError('SCHEMA', `encodeTsgraph: tensor '${name}' is ${t.dtype} but its data is a ${t.data.constructor.name} (expected ${ARRAY_OF[t.dtype].name})`);
    }
    if (t.shape.length > MAX_RANK || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new TsgraphError('SCHEMA', `encodeTsgraph: tensor '${name}' has shape [${t.shape.join(',')}]; stored tensors need at most ${MAX_RANK} concrete non-negative dims`);
    }
    const n = t.shape.reduce((a, d) => a * d, 1);
    if (n !== t.data.length) {
      throw new TsgraphError('SIZE_MISMATCH', `encodeTsgraph: tensor '${name}' has shape [${t.shape.join(',')}] (${n} elements) but ${t.data.length} data elements`);
    }
    if (t.dtype === 'bool' && t.data.some((b) => b > 1)) {
      throw new TsgraphError('SCHEMA', `encodeTsgraph: bool tensor '${name}' holds values other than 0 and 1`);
    }
    if (t.storage && (t.dtype !== 'float32' || !(t.storage === 'float16' || t.storage === 'bfloat16'))) {
      throw new TsgraphError('SCHEMA', `encodeTsgraph: tensor '${name}' is ${t.dtype} with storage ${String(t.storage)}; only float32 tensors may be stored as float16 or bfloat16`);
    }
    const length = n * DTYPE_BYTES[t.storage ?? t.dtype];
    entries.push({ name, dtype: t.dtype, ...(t.storage ? { storage: t.storage } : {}), shape: [...t.shape], offset: cursor, length });
    order.push(t);
    cursor = alignUp(cursor + length);
  }
  return { entries, blobLength: cursor, order };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function writeLittleEndian(out: Uint8Array, at: number, data: TypedArray, dtype: DType): void {
  if (isReducedFloat(dtype)) {
    // float16/bfloat16 values are held widened (dtype.ts); the file stores their 16-bit patterns.
    const bits = toBits16(data as Float32Array, dtype);
    const view = new DataView(out.buffer, out.byteOffset + at, bits.byteLength);
    bits.forEach((b, i) => view.setUint16(i * 2, b, true));
    return;
  }
  if (LITTLE_ENDIAN || data instanceof Uint8Array || data instanceof Int8Array) {
    out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at);
    return;
  }
  const view = new DataView(out.buffer, out.byteOffset + at, data.byteLength);
  if (data instanceof Float32Array) data.forEach((v, i) => view.setFloat32(i * 4, v, true));
  else data.forEach((v, i) => view.setInt32(i * 4, v, true));
}

function checkKernels(kernels: readonly unknown[]): Record<string, unknown>[] {
  return kernels.map((k, i) => {
    if (typeof k !== 'object' || k === null || Array.isArray(k)) {
      throw new TsgraphError('SCHEMA', `encodeTsgraph: kernels[${i}] must be a JSON object ({key, wgsl, ...})`);
    }
    return k as Record<string, unknown>;
  });
}

function typeText(t: IRType, where: string): string {
  const bad = badDim(t);
  if (bad !== null) throw new TsgraphError('VERIFY', `encodeTsgraph: ${where} has type ${typeToString(t)} whose dim ${JSON.stringify(bad)} cannot be stored (dims are non-negative integers or symbols such as N, N*64)`);
  return typeToString(t);
}

function badDim(t: IRType): string | number | null {
  switch (t.kind) {
    case 'tensor': return t.shape.length > MAX_RANK ? t.shape.length : t.shape.find((d) => !isValidDim(d)) ?? null;
    case 'scalar': return null;
    case 'tuple': for (const e of t.elements) { const b = badDim(e); if (b !== null) return b; } return null;
    case 'list': return badDim(t.element);
  }
}

/** Numbers values in program order (graph inputs, then each node's outputs, then its regions). */
function graphToJson(g: Graph, location: (loc: string) => string = (l) => l): GraphJson {
  const scopes = new Scopes<Value, number>();
  let next = 0;
  const define = (v: Value, where: string, id = next++): ValueJson => {
    if (!scopes.define(v, id)) throw new TsgraphError('VERIFY', `encodeTsgraph: ${where} redefines a value already defined elsewhere (SSA values are defined once)`);
    return { id, type: typeText(v.type, where), ...(v.hint !== undefined ? { hint: v.hint } : {}) };
  };
  const use = (v: Value, where: string): number => {
    const id = scopes.lookup(v);
    if (id === undefined) {
      const what = scopes.wasDefined(v) ? 'defined in a region that is not visible here' : 'not defined before it';
      throw new TsgraphError('VERIFY', `encodeTsgraph: ${where} uses a value (${typeToString(v.type)}${v.hint ? ` '${v.hint}'` : ''}) ${what}`);
    }
    return id;
  };

  const nodeToJson = (n: Node, path: string): NodeJson => {
    const inputs = n.inputs.map((v, i) => (v === null ? null : use(v, `${path} (${n.op}) input ${i}`)));
    // Outputs are numbered before the regions' values but become visible only after the
    // regions: a region cannot use its own node's results.
    const ids = n.outputs.map(() => next++);
    const regions = n.regions.map((r, i) => blockToJson(r, `${path}.regions[${i}]`));
    const outputs = n.outputs.map((v, i) => define(v, `${path} (${n.op}) output ${i}`, ids[i]));
    let attrs;
    try {
      attrs = encodeAttrs(n.attrs, `${path}.attrs`);
    } catch (e) {
      if (e instanceof JsonValueError) throw new TsgraphError('SCHEMA', `encodeTsgraph: node ${describeNode(n.op, inputs, outputs.map((o) => o.id))}: ${e.message}`, { cause: e });
      throw e;
    }
    const meta = {
      ...(n.meta.scope !== undefined ? { scope: n.meta.scope } : {}),
      ...(n.meta.loc !== undefined ? { loc: location(n.meta.loc) } : {}),
      ...(n.meta.fused?.length ? { fused: n.meta.fused.map((f) => ({ ...f, ...(f.loc !== undefined ? { loc: location(f.loc) } : {}) })) } : {}),
    };
    return {
      op: n.op, inputs, attrs: attrs as Record<string, unknown>, outputs,
      ...(regions.length ? { regions } : {}),
      ...(Object.keys(meta).length ? { meta } : {}),
    };
  };

  const blockToJson = (b: Block, path: string): BlockJson => {
    scopes.push();
    try {
      const args = b.args.map((v, i) => define(v, `${path} argument ${i}`));
      const nodes = b.nodes.map((n, i) => nodeToJson(n, `${path}.nodes[${i}]`));
      const yields = b.yields.map((v, i) => use(v, `${path} yield ${i}`));
      return { args, nodes, yields };
    } finally {
      scopes.pop();
    }
  };

  const inputs = g.inputs.map((inp) => ({ name: inp.name, kind: inp.kind, ...define(inp.value, `graph input '${inp.name}'`) }));
  if (g.body.args.length || g.body.yields.length) throw new TsgraphError('VERIFY', 'encodeTsgraph: a graph body takes no arguments and yields nothing (use graph inputs and outputs)');
  const nodes = g.body.nodes.map((n, i) => nodeToJson(n, `graph.nodes[${i}]`));
  const outputs = g.outputs.map((o) => ({ name: o.name, id: use(o.value, `graph output '${o.name}'`) }));
  return { name: g.name, inputs, nodes, outputs };
}
