// Buffer updates: how a graph changes module state. A graph whose run changes a buffer in place
// (BatchNorm's running_mean / running_var / num_batches_tracked in training mode) returns the
// buffer's new value as an extra output, named `state.<param>` by convention, and lists the pairs
// in its metadata under `buffer_updates` as JSON `{ "<output>": "<param>" }`. Invariant: each
// listed output exists and has exactly the type of the `param` input it updates, so a runtime
// can write the output over the param after a run (runtime/src/model.ts keeps that state; kiln's
// ScriptModule and TracedModule also copy it back into the module's buffers).

import type { Graph } from './graph.js';
import { typeEquals, typeToString } from './types.js';

/** The metadata key holding a graph's buffer updates. */
export const BUFFER_UPDATES_KEY = 'buffer_updates';

/** One buffer update: graph output `output` is the new value of param `param`. */
export interface BufferUpdate { readonly output: string; readonly param: string }

/** The output name that carries param `param`'s new value. */
export function bufferUpdateOutput(param: string): string { return `state.${param}`; }

/** The metadata entry for `updates` (merge it into a graph's metadata). */
export function bufferUpdatesMetadata(updates: readonly BufferUpdate[]): Record<string, string> {
  if (!updates.length) return {};
  return { [BUFFER_UPDATES_KEY]: JSON.stringify(Object.fromEntries(updates.map((u) => [u.output, u.param]))) };
}

/**
 * The buffer updates `g` declares, checked against its outputs and params; throws an Error that
 * names the output and the param when the metadata is malformed or does not match the graph.
 *
 * @example
 * for (const { output, param } of bufferUpdates(graph)) console.log(`${output} → ${param}`);
 */
export function bufferUpdates(g: Graph): BufferUpdate[] {
  const raw = Object.hasOwn(g.metadata, BUFFER_UPDATES_KEY) ? g.metadata[BUFFER_UPDATES_KEY] : undefined;
  if (raw === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`metadata '${BUFFER_UPDATES_KEY}' must be a JSON object { "<output>": "<param>" }, got ${JSON.stringify(raw)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`metadata '${BUFFER_UPDATES_KEY}' must be a JSON object { "<output>": "<param>" }, got ${raw}`);
  }
  const out: BufferUpdate[] = [];
  const seen = new Set<string>();
  for (const [output, param] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof param !== 'string') throw new Error(`metadata '${BUFFER_UPDATES_KEY}': output '${output}' must map to a param name, got ${JSON.stringify(param)}`);
    const o = g.outputs.find((x) => x.name === output);
    if (!o) throw new Error(`metadata '${BUFFER_UPDATES_KEY}' names output '${output}', which the graph does not have`);
    const p = g.inputs.find((x) => x.kind === 'param' && x.name === param);
    if (!p) throw new Error(`metadata '${BUFFER_UPDATES_KEY}': output '${output}' updates param '${param}', which the graph does not have`);
    if (!typeEquals(o.value.type, p.value.type)) {
      throw new Error(`metadata '${BUFFER_UPDATES_KEY}': output '${output}' has type ${typeToString(o.value.type)} but the param '${param}' it updates has ${typeToString(p.value.type)}`);
    }
    if (seen.has(param)) throw new Error(`metadata '${BUFFER_UPDATES_KEY}': param '${param}' is updated by two outputs`);
    seen.add(param);
    out.push({ output, param });
  }
  return out;
}
