// Buffers shared between a module and its compiled graph. A graph compiled from a module in
// training mode may update buffers (BatchNorm's running statistics, ir-spec buffer-updates.ts);
// the module stays the owner of that state, as in PyTorch, where a ScriptModule shares its
// buffers. Invariant: before each run the model reads the module's current buffers, after it the
// module holds the new values — so eager and compiled calls can alternate, and a module whose
// statistics were reset or loaded is seen as it is now; a saved graph stores the current values.

import type { Tensor } from '@kiln/core';
import { bufferUpdates, Graph } from '@kiln/ir-spec';
import type { Model } from '@kiln/runtime';

/** The module's buffers by dotted name (`bn.running_mean`). */
export type BufferLookup = () => ReadonlyMap<string, Tensor>;

export function buffersOf(m: { namedBuffers?(): [string, Tensor][] }): BufferLookup {
  return () => new Map(m.namedBuffers?.() ?? []);
}

/** Runs `run` with the module's buffers pushed into `model` first and its updates pulled back after. */
export function withModuleBuffers<R>(model: Model, lookup: BufferLookup, run: () => R): R {
  if (!model.buffers.size) return run();
  const live = lookup();
  for (const name of model.buffers.keys()) {
    const t = live.get(name);
    if (t) model.setBuffer(name, t.data.subarray(0, t.numel()));
  }
  const r = run();
  for (const [name, v] of model.buffers) {
    const t = live.get(name);
    if (t) t._storage.data.set(v.data);
  }
  return r;
}

/** `graph` with the params it updates holding the module's current buffer values (for saving). */
export function withCurrentBuffers(graph: Graph, lookup: BufferLookup): Graph {
  const updates = bufferUpdates(graph);
  if (!updates.length) return graph;
  const live = lookup();
  const tensors = new Map(graph.tensors);
  for (const { param } of updates) {
    const t = live.get(param), old = tensors.get(param);
    if (t && old) tensors.set(param, { ...old, data: t.data.slice(0, t.numel()) });
  }
  return new Graph(graph.name, graph.inputs, graph.body, graph.outputs, tensors, graph.metadata);
}

/** The error for a compiled graph with buffer updates called inside jit.trace (hybrid mode). */
export function updatesInTraceError(graph: Graph): Error | undefined {
  const updates = bufferUpdates(graph);
  if (!updates.length) return undefined;
  return new Error(`jit.trace: the compiled submodule @${graph.name} updates buffers (${updates.map((u) => `'${u.param}'`).join(', ')}: running statistics of a layer in training mode), ` +
    'which a trace cannot record from inside a compiled call; call model.eval() before tracing, or jit.script the whole model');
}
