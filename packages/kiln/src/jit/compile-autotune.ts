// jit.compile's mode 'max-autotune': each graph is optimized several ways (pass lists that pick
// different kernels: elementwise chains fused into one fused_elementwise kernel or run op by op,
// conv epilogues fused or not), every candidate is timed on this device at compile time, and the
// fastest is kept. Choices are cached per device and graph (its printed text, which holds every
// shape), so a second model or a recompilation with the same graph does not time again.
// Invariant: the candidates differ only in value-preserving passes, so the choice changes speed,
// never results; timing leaves kiln's random generator as it was.

import { trace as tracer } from '@kiln/core';
import { runPipeline } from '@kiln/compiler';
import type { Graph } from '@kiln/ir-spec';
import type { InputValue, Model } from '@kiln/runtime';

/** One way to optimize a graph: a named pass list, or the -O2 level. */
export interface Candidate { readonly name: string; readonly passes?: readonly string[]; readonly level?: 2 }

/** What explain() shows for an autotuned graph. */
export interface AutotuneChoice {
  /** The graph it is for: `forward`, `backward` or `inference`. */
  readonly graph: string;
  readonly chosen: string;
  /** Median milliseconds per run of each candidate (empty when the choice came from the cache). */
  readonly ms: Readonly<Record<string, number>>;
  readonly cached: boolean;
}

const choices = new Map<string, string>();

/** Times every candidate of `g` on `inputs(model)` (synthetic ones of the graph's input types when null) and returns the fastest's model. */
export function autotune(what: string, g: Graph, candidates: readonly Candidate[], inputs: ((m: Model) => InputValue[]) | null, make: (g: Graph) => Model, device = 'cpu'): { model: Model; choice: AutotuneChoice } {
  const key = `${device}|${what}|${candidates.map((c) => c.name).join(',')}|${g.toString()}`;
  const known = choices.get(key);
  const optimize = (c: Candidate) => runPipeline(g, c.passes ? { passes: [...c.passes] } : { level: c.level ?? 2 }).graph;
  if (known !== undefined) {
    const c = candidates.find((x) => x.name === known)!;
    return { model: make(optimize(c)), choice: { graph: what, chosen: known, ms: {}, cached: true } };
  }
  const restore = tracer.snapshotState(undefined);
  const ms: Record<string, number> = {};
  let best: { name: string; model: Model; ms: number } | undefined;
  try {
    for (const c of candidates) {
      const model = make(optimize(c));
      const ins = inputs ? inputs(model) : syntheticInputs(g, model);
      model.runSync(ins); // warm-up: packs weights, sizes the arena
      const times: number[] = [];
      for (let k = 0; k < 3; k++) {
        const t0 = performance.now();
        model.runSync(ins);
        times.push(performance.now() - t0);
      }
      const median = times.sort((a, b) => a - b)[1];
      ms[c.name] = median;
      if (!best || median < best.ms) best = { name: c.name, model, ms: median };
    }
  } finally {
    restore();
  }
  choices.set(key, best!.name);
  return { model: best!.model, choice: { graph: what, chosen: best!.name, ms, cached: false } };
}

/** Inputs of `g`'s declared types (shapes must be concrete: graphs for training keep exact shapes), filled with 0.5. */
function syntheticInputs(g: Graph, model: Model): InputValue[] {
  return model.inputs.map((io) => {
    const i = g.inputs.find((x) => x.name === io.name)!;
    const t = i.value.type;
    if (t.kind === 'scalar') return t.dtype === 'bool' ? false : 1;
    if (t.kind !== 'tensor') throw new Error(`max-autotune: input '${i.name}' is a ${t.kind}; no value to time it with`);
    const shape = t.shape.map((d) => {
      if (typeof d !== 'number') throw new Error(`max-autotune: input '${i.name}' has a symbolic dim '${String(d)}'; no sizes to time it with`);
      return d;
    });
    const n = shape.reduce((a, b) => a * b, 1);
    const data = t.dtype === 'float32' ? new Float32Array(n).fill(0.5) : t.dtype === 'int32' ? new Int32Array(n) : new Uint8Array(n);
    return { data, shape, dtype: t.dtype };
  });
}
