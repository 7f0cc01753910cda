// The memory plan of a `.tsgraph` (header field `plan`, SPEC.md §13): which buffer slot each
// intermediate value of the top-level body uses, written by the compiler's plan-memory pass and
// read by the runtime's memory accounting. In memory, a Graph carries it as the JSON string in
// metadata[MEMORY_PLAN_KEY]; the encoder moves it to the header's `plan` and the decoder back.
// Invariant: a plan only names values; a reader that finds a name it does not know ignores it,
// so a stale plan can cost memory but never change results.

import * as z from 'zod';

/** Metadata key under which a Graph carries its memory plan (as JSON text). */
export const MEMORY_PLAN_KEY = 'kiln.memory_plan';

export const memoryPlanSchema = z.object({
  version: z.literal(1),
  /** Value name (as the text form prints it, without `%`) → slot index. */
  slots: z.record(z.string(), z.number().int().min(0).max(1_000_000)),
  /** Values that reuse the slot of an input that dies at their node. */
  in_place: z.array(z.string()),
}).strict();

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
