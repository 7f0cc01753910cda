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
const dtype = z.enum(['float32', 'int32', 'bool']);

const typeString = z.string().max(MAX_TYPE_STRING).superRefine((s, ctx) => {
  try {
    parseTypeString(s);
  } catch (e) {
    if (!(e instanceof TypeStringError)) throw e;
    ctx.addIssue({ code: 'custom', message: e.message });
  }
});

const cache = new Map<boolean, z.ZodType<TsgraphHeader>>();

/** The header schema; `lenient` strips unknown keys (files of a newer minor version). Built once. */
export function headerSchema(lenient: boolean): z.ZodType<TsgraphHeader> {
  let s = cache.get(lenient);
  if (!s) cache.set(lenient, s = buildHeaderSchema(lenient));
  return s;
}

function buildHeaderSchema(lenient: boolean): z.ZodType<TsgraphHeader> {
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
    meta: obj({ scope: z.string().optional(), loc: z.string().optional() }).optional(),
  }));

  const graph = obj({
    name: z.string(),
    inputs: z.array(obj({ name: z.string(), kind: z.enum(['input', 'param']), id, type: typeString, hint: z.string().optional() })),
    nodes: z.array(node),
    outputs: z.array(obj({ name: z.string(), id })),
  });

  const tensor = obj({
    name: z.string(),
    dtype,
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
