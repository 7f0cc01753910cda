// jit.compile's mode 'max-autotune': each graph is optimized several ways (pass lists that pick
// different kernels: elementwise chains fused into one fused_elementwise kernel or run op by op,
// conv epilogues fused or not), every candidate is timed on this device at compile time, and the
// fastest is kept. Choices are cached per device and graph (its printed text, which holds every
// shape), so a second model or a recompilation with the same graph does not time again.
// On WebGPU a run's time is known only once the GPU has been awaited, which a call cannot do: the
// graph starts with the first candidate and every candidate is timed in the background (runs
// recorded back to back on copies of the first call's inputs, then awaited), after which the
// fastest takes its place for later calls (autotuneInBackground).
// Invariant: the candidates differ only in value-preserving passes, so the choice changes speed,
// never results; timing leaves kiln's random generator as it was.

import { trace as tracer } from '@kiln/core';
import { runPipeline } from '@kiln/compiler';
import type { Graph } from '@kiln/ir-spec';
import type { DeviceInput, DeviceTensor, InputValue, Model } from '@kiln/runtime';

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
  /** WebGPU: the candidates are still being timed in the background; `chosen` runs until then. */
  readonly pending?: boolean;
  /** WebGPU: why background timing stopped, when it failed (`chosen` stays). */
  readonly error?: string;
}

/** A graph's model and choice, which background tuning replaces when it is done. */
export interface TunedRun { model: Model; autotune: AutotuneChoice }

const choices = new Map<string, string>();

/** Times every candidate of `g` on `inputs(model)` (synthetic ones of the graph's input types when null) and returns the fastest's model. */
export function autotune(what: string, g: Graph, candidates: readonly Candidate[], inputs: ((m: Model) => InputValue[]) | null, make: (g: Graph) => Model, device = 'cpu'): { model: Model; choice: AutotuneChoice } {
  const key = keyOf(device, what, g, candidates);
  const known = choices.get(key);
  const optimize = optimizer(g);
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

/**
 * mode 'max-autotune' on WebGPU: every candidate's model is made now (its kernels compiled) and
 * the first one runs; the candidates are then timed in the background, twice each — run once,
 * then three times back to back on `inputs` (given by a function called only when timing is needed;
 * its tensors belong to the tuner and are freed after) between two awaits of `synchronize` — and
 * the fastest replaces `run.model` when all are timed. `done` resolves then.
 */
export function autotuneInBackground(what: string, g: Graph, candidates: readonly Candidate[], inputs: () => DeviceInput[], make: (g: Graph) => Model,
  synchronize: () => Promise<void>): { run: TunedRun; done: Promise<void> } {
  const key = keyOf('webgpu', what, g, candidates);
  const known = choices.get(key);
  const optimize = optimizer(g);
  if (known !== undefined) {
    return { run: { model: make(optimize(candidates.find((x) => x.name === known)!)), autotune: { graph: what, chosen: known, ms: {}, cached: true } }, done: Promise.resolve() };
  }
  const ins = inputs(); // now: the call's tensors may be gone by the time the candidates run
  const models = candidates.map((c) => make(optimize(c)));
  const run: TunedRun = { model: models[0], autotune: { graph: what, chosen: candidates[0].name, ms: {}, cached: false, pending: true } };
  const timeAll = async () => {
    const ms: Record<string, number> = {};
    // Two rounds in opposite orders, the faster of each candidate's two kept: no candidate is
    // always the one timed first (a cold driver) or last.
    const order = [...models.keys(), ...[...models.keys()].reverse()];
    for (const k of order) {
      const m = models[k];
      // The runs are recorded synchronously, so restoring the generator right after leaves no draw visible.
      const runs = (n: number) => {
        const restore = tracer.snapshotState(undefined);
        try { for (let i = 0; i < n; i++) for (const o of m.runDevice(ins)) m.device.free(o.buffer); } finally { restore(); }
      };
      runs(1);
      await synchronize();
      const t0 = performance.now();
      runs(3);
      await synchronize();
      const t = (performance.now() - t0) / 3;
      ms[candidates[k].name] = Math.min(t, ms[candidates[k].name] ?? Infinity);
    }
    const best = candidates.reduce((b, c) => (ms[c.name] < ms[b.name] ? c : b));
    choices.set(key, best.name);
    run.model = models[candidates.indexOf(best)];
    run.autotune = { graph: what, chosen: best.name, ms, cached: false };
  };
  const done = timeAll().catch((e: unknown) => {
    run.autotune = { ...run.autotune, pending: false, error: e instanceof Error ? e.message : String(e) };
  }).finally(() => { for (const v of ins) if (typeof v === 'object') models[0].device.free((v as DeviceTensor).buffer); });
  return { run, done };
}

function keyOf(device: string, what: string, g: Graph, candidates: readonly Candidate[]): string {
  return `${device}|${what}|${candidates.map((c) => c.name).join(',')}|${g.toString()}`;
}

function optimizer(g: Graph): (c: Candidate) => Graph {
  return (c) => runPipeline(g, c.passes ? { passes: [...c.passes] } : { level: c.level ?? 2 }).graph;
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
