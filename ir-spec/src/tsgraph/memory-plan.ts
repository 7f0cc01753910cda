// The memory plan of a `.tsgraph` (header field `plan`, SPEC.md §13): which buffer slot each
// intermediate value of the top-level body uses, written by the compiler's plan-memory pass and
// read by the runtime, whose CPU arena serves each planned value from its slot. In memory, a
// Graph carries it as the JSON string in metadata[MEMORY_PLAN_KEY]; the encoder moves it to the
// header's `plan` and the decoder back.
// Version 2 names values by their SSA id — the number the encoder gives them, program order,
// `valueIds` below — which does not change when hints or printed names do. Version 1 (older
// files) named them by printed name. Invariant: a plan only names values; a reader that finds an
// id or name it does not know ignores it, and the runtime checks every slot is free before it
// hands it out, so a stale plan can cost memory but never change results.

import * as z from 'zod';
import type { Block, Graph, Value } from '../ir/graph.js';

/** Metadata key under which a Graph carries its memory plan (as JSON text). */
export const MEMORY_PLAN_KEY = 'kiln.memory_plan';

const slot = z.number().int().min(0).max(1_000_000);

export const memoryPlanSchema = z.union([
  z.object({
    version: z.literal(2),
    /** Value id (`valueIds`, in decimal) → slot index. */
    slots: z.record(z.string().regex(/^(0|[1-9]\d{0,8})$/), slot),
    /** Ids of values that reuse the slot of an input that dies at their node. */
    in_place: z.array(z.number().int().min(0)),
  }).strict(),
  z.object({
    version: z.literal(1),
    /** Value name (as the text form prints it, without `%`) → slot index. */
    slots: z.record(z.string(), slot),
    /** Values that reuse the slot of an input that dies at their node. */
    in_place: z.array(z.string()),
  }).strict(),
]);

export type MemoryPlan = z.output<typeof memoryPlanSchema>;

/** The plan carried by `metadata`, or undefined when it has none or it does not parse. */
export function readMemoryPlan(metadata: Readonly<Record<string, string>>): MemoryPlan | undefined {
  const text = metadata[MEMORY_PLAN_KEY];
  if (text === undefined) return undefined;
  try {
    const r = memoryPlanSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The SSA id of every value of `g`, as the `.tsgraph` encoder numbers them: graph inputs in
 * order, then per node its outputs followed by its regions' arguments and nodes, depth first.
 *
 * @example
 * valueIds(g).get(g.outputs[0].value); // e.g. 2
 */
export function valueIds(g: Graph): Map<Value, number> {
  const ids = new Map<Value, number>();
  let next = 0;
  const block = (b: Block) => {
    b.args.forEach((v) => ids.set(v, next++));
    for (const n of b.nodes) {
      n.outputs.forEach((v) => ids.set(v, next++));
      n.regions.forEach(block);
    }
  };
  g.inputs.forEach((i) => ids.set(i.value, next++));
  block(g.body);
  return ids;
}
