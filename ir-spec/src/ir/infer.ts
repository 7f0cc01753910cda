// Types of a node's results, from the op registry (tensor ops) or the builtins (structural ops).
// Shared by the graph builder and the verifier, so both apply exactly the same rules.

import { getOp, hasOp } from '../op-def.js';
import { OpError, type TensorType } from '../shape.js';
import { getBuiltin, type BuiltinContext } from './builtins.js';
import { tensorType, typeToString, type IRType } from './types.js';
import type { Attrs, Block } from './graph.js';

export interface Inferred {
  /** The attributes after schema parsing (defaults filled in): what the node stores. */
  attrs: Attrs;
  types: IRType[];
}

/**
 * Parsed empty attributes per op, when every parsed value is a primitive, frozen and shared by
 * every node of that op without attributes (attributes are never written after parsing): most
 * nodes of a large graph are elementwise ops without attributes, and parsing `{}` through the
 * schema again for each, or keeping a copy per node, would dominate typing and holding them.
 */
const parsedEmpty = new Map<string, Attrs | null>();

/** Validates `attrs` against op `name`'s schema; throws OpError naming the attribute. */
export function parseOpAttrs(name: string, attrs: Record<string, unknown>): Attrs {
  let empty = true;
  for (const k in attrs) if (Object.hasOwn(attrs, k)) { empty = false; break; }
  if (empty) {
    let cached = parsedEmpty.get(name);
    if (cached === undefined) {
      const r = getOp(name).attrs.safeParse({});
      cached = r.success && Object.values(r.data as object).every((v) => v === null || typeof v !== 'object') ? Object.freeze(r.data as Attrs) : null;
      parsedEmpty.set(name, cached);
    }
    if (cached) return cached;
  }
  const def = getOp(name);
  const r = def.attrs.safeParse(attrs);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue.path.length ? `attribute '${issue.path.join('.')}'` : 'attributes';
    throw new OpError(name, `invalid ${where}: ${issue.message} (got ${JSON.stringify(attrs)})`);
  }
  return r.data as Attrs;
}

export function inferTypes(
  op: string, inputs: readonly (IRType | null)[], attrs: Attrs, ctx: BuiltinContext, regions: readonly Block[] = [],
): Inferred {
  const builtin = getBuiltin(op);
  if (builtin) return { attrs, types: builtin.infer(inputs, attrs, ctx, regions) };
  if (!hasOp(op)) throw new OpError(op, 'unknown op: not in the op registry and not a structural op');
  const def = getOp(op);
  const want = def.elementBody ? 1 : 0;
  if (regions.length !== want) throw new OpError(op, want ? `takes one region (its element body), got ${regions.length}` : 'tensor ops take no regions');
  const variadic = def.inputs.length === 1 && def.inputs[0].startsWith('...');
  // Plain loops: this runs once per node of every graph built or loaded.
  if (!variadic) {
    let required = 0;
    for (const n of def.inputs) if (!n.endsWith('?')) required++;
    if (inputs.length < required || inputs.length > def.inputs.length) {
      throw new OpError(op, `expects ${required === def.inputs.length ? required : `${required}..${def.inputs.length}`} inputs (${def.inputs.join(', ')}), got ${inputs.length}`);
    }
    for (let i = 0; i < inputs.length; i++) {
      if (!inputs[i] && !def.inputs[i].endsWith('?')) throw new OpError(op, `input '${def.inputs[i]}' is required`);
    }
  }
  const tensorInputs = new Array<TensorType | null>(inputs.length);
  for (let i = 0; i < inputs.length; i++) {
    const t = inputs[i];
    if (t && t.kind !== 'tensor') throw new OpError(op, `input ${i} must be a tensor, got ${typeToString(t)}`);
    tensorInputs[i] = t ? { dtype: t.dtype, shape: t.shape } : null;
  }
  const parsed = parseOpAttrs(op, attrs as Record<string, unknown>);
  const outs = def.infer(tensorInputs, parsed, def.elementBody ? regions : undefined);
  return { attrs: parsed, types: outs.map((t) => tensorType(t.dtype, t.shape)) };
}
