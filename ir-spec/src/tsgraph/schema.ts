// Zod schemas of the `.tsgraph` header (types in format.ts). Invariant: a header that passes
// `headerSchema` has every field present with the right JSON type, every number a safe
// non-negative integer where the layout needs one, every type string parseable, and a tensor
// table sorted by unique names; what remains for the reader is cross-checking (blob bounds,
// overlaps, sizes, the graph itself).
//
// A file of a newer minor version may carry fields this reader does not know: `lenient`
// schemas strip unknown keys instead of refusing them (format.ts: minor = additive).

import { memoryPlanSchema } from './memory-plan.js';
import * as z from 'zod';
import { ALIGN, CHECKSUM_ALGORITHM, type BlockJson, type NodeJson, type TsgraphHeader, type ValueJson } from './format.js';
import { compareCodeUnits } from './json.js';
import { MAX_RANK, MAX_TYPE_STRING, parseTypeString, TypeStringError } from './type-string.js';

const id = z.number().int().nonnegative();
const dtype = z.enum(['float32', 'float16', 'bfloat16', 'int32', 'bool', 'int8']);

const typeString = z.string().max(MAX_TYPE_STRING).superRefine((s, ctx) => {
  try {
    parseTypeString(s);
  } catch (e) {
    if (!(e instanceof TypeStringError)) throw e;
    ctx.addIssue({ code: 'custom', message: e.message });
  }
});

const cache = new Map<string, z.ZodType<TsgraphHeader>>();

/**
 * The header schema; `lenient` strips unknown keys (files of a newer minor version). With
 * `nodesChecked`, `graph.nodes` is taken as it is: for a header whose nodes passed
 * `nodesWellFormed` (which accepts only what the full schema accepts, unchanged), so that a large
 * graph is not walked and copied by zod. Built once each.
 */
export function headerSchema(lenient: boolean, nodesChecked = false): z.ZodType<TsgraphHeader> {
  const key = `${lenient}/${nodesChecked}`;
  let s = cache.get(key);
  if (!s) cache.set(key, s = buildHeaderSchema(lenient, nodesChecked));
  return s;
}

// ---- the node fast path ------------------------------------------------------------------------
// A hand-written check of `graph.nodes` that is at least as strict as the strict schema below and
// allocates nothing per node; what it refuses goes through zod, which finds the exact message.

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const NODE_KEYS = new Set(['op', 'inputs', 'attrs', 'outputs', 'regions', 'meta']);
const VALUE_KEYS = new Set(['id', 'type', 'hint']);
const META_KEYS = new Set(['scope', 'loc', 'fused']);
const FUSED_KEYS = new Set(['op', 'scope', 'loc']);
const BLOCK_KEYS = new Set(['args', 'nodes', 'yields']);

function onlyKeys(o: Json, allowed: ReadonlySet<string>): boolean {
  for (const k in o) if (!Object.hasOwn(o, k) || !allowed.has(k)) return false;
  return true;
}

/** Type strings already parsed in this check (graphs repeat a few types many times). */
function valueOk(v: unknown, types: Set<string>): boolean {
  if (!isObject(v) || !onlyKeys(v, VALUE_KEYS) || !isId(v.id)) return false;
  if (v.hint !== undefined && typeof v.hint !== 'string') return false;
  const t = v.type;
  if (typeof t !== 'string' || t.length > MAX_TYPE_STRING) return false;
  if (!types.has(t)) {
    try { parseTypeString(t); } catch { return false; }
    types.add(t);
  }
  return true;
}

function valuesOk(vs: unknown, types: Set<string>): boolean {
  if (!Array.isArray(vs)) return false;
  for (const v of vs) if (!valueOk(v, types)) return false;
  return true;
}

function blockOk(b: unknown, types: Set<string>): boolean {
  if (!isObject(b) || !onlyKeys(b, BLOCK_KEYS) || !valuesOk(b.args, types) || !nodesOk(b.nodes, types)) return false;
  return Array.isArray(b.yields) && b.yields.every(isId);
}

function nodesOk(nodes: unknown, types: Set<string>): boolean {
  if (!Array.isArray(nodes)) return false;
  for (const n of nodes) {
    if (!isObject(n) || !onlyKeys(n, NODE_KEYS)) return false;
    if (typeof n.op !== 'string' || n.op.length === 0) return false;
    if (!Array.isArray(n.inputs)) return false;
    for (const i of n.inputs) if (i !== null && !isId(i)) return false;
    if (!isObject(n.attrs) || !valuesOk(n.outputs, types)) return false;
    if (n.regions !== undefined && !(Array.isArray(n.regions) && n.regions.every((r) => blockOk(r, types)))) return false;
    if (n.meta !== undefined) {
      const m = n.meta;
      if (!isObject(m) || !onlyKeys(m, META_KEYS)) return false;
      if ((m.scope !== undefined && typeof m.scope !== 'string') || (m.loc !== undefined && typeof m.loc !== 'string')) return false;
      if (m.fused !== undefined && !(Array.isArray(m.fused) && m.fused.every((f) => isObject(f) && onlyKeys(f, FUSED_KEYS) && typeof f.op === 'string' &&
        (f.scope === undefined || typeof f.scope === 'string') && (f.loc === undefined || typeof f.loc === 'string')))) return false;
    }
  }
  return true;
}

/**
 * Whether `nodes` (a header's `graph.nodes`, JSON already bounded by checkJsonShape) passes the
 * strict node schema as it is. False means "let zod decide", not "invalid".
 */
export function nodesWellFormed(nodes: unknown): boolean {
  return nodesOk(nodes, new Set());
}

function buildHeaderSchema(lenient: boolean, nodesChecked: boolean): z.ZodType<TsgraphHeader> {
  const obj = <S extends z.ZodRawShape>(shape: S) => (lenient ? z.object(shape) : z.strictObject(shape));

  const value = obj({ id, type: typeString, hint: z.string().optional() });
  const valueJson: z.ZodType<ValueJson> = value;

  const block: z.ZodType<BlockJson> = z.lazy(() => obj({
    args: z.array(valueJson),
    nodes: z.array(node),
    yields: z.array(id),
  }));

  const node: z.ZodType<NodeJson> = z.lazy(() => obj({
    op: z.string().min(1),
    inputs: z.array(id.nullable()),
    attrs: z.record(z.string(), z.unknown()),
    outputs: z.array(valueJson),
    regions: z.array(block).optional(),
    meta: obj({
      scope: z.string().optional(), loc: z.string().optional(),
      fused: z.array(obj({ op: z.string(), scope: z.string().optional(), loc: z.string().optional() })).optional(),
    }).optional(),
  }));

  const graph = obj({
    name: z.string(),
    inputs: z.array(obj({ name: z.string(), kind: z.enum(['input', 'param']), id, type: typeString, hint: z.string().optional() })),
    nodes: nodesChecked ? z.custom<NodeJson[]>((v) => Array.isArray(v)) : z.array(node),
    outputs: z.array(obj({ name: z.string(), id })),
  });

  const tensor = obj({
    name: z.string(),
    dtype,
    storage: z.enum(['float16', 'bfloat16']).optional(),
    shape: z.array(z.number().int().nonnegative()).max(MAX_RANK),
    offset: z.number().int().nonnegative().multipleOf(ALIGN),
    length: z.number().int().nonnegative(),
  });

  const signature = obj({ name: z.string(), type: typeString });

  return obj({
    format: obj({ major: z.number().int().nonnegative(), minor: z.number().int().nonnegative() }),
    producer: obj({ name: z.string(), version: z.string() }),
    metadata: z.record(z.string(), z.string()),
    graph,
    inputs: z.array(signature),
    outputs: z.array(signature),
    tensors: z.array(tensor).superRefine((ts, ctx) => {
      for (let i = 1; i < ts.length; i++) {
        if (compareCodeUnits(ts[i - 1].name, ts[i].name) >= 0) {
          ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `tensor names must be unique and sorted; '${ts[i].name}' follows '${ts[i - 1].name}'` });
          return;
        }
      }
    }),
    kernels: z.array(z.record(z.string(), z.unknown())),
    plan: lenient ? z.unknown() : z.union([z.null(), memoryPlanSchema]),
    // A newer minor may name another algorithm: read leniently, refused (or skipped) at verification.
    checksum: obj({
      algorithm: lenient ? z.string() : z.literal(CHECKSUM_ALGORITHM),
      blob: lenient ? z.string() : z.string().regex(/^[0-9a-f]{8}$/, 'must be 8 lower-case hex digits'),
    }).optional(),
  });
}

/** `graph.nodes[3].outputs[0].type` from a zod issue path. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`;
  return out || '(the header itself)';
}
