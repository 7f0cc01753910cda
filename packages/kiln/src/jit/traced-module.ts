// jit.trace: record an eager run into a graph (core's tracer), check it against eager on the
// example and on `checkInputs` (on by default, as in PyTorch), and wrap it as a TracedModule
// that runs on the runtime's CPU executor and saves to `.tsgraph`.

import { defaultGenerator, noGrad, trace as tracer, type Tensor } from '@kiln/core';
import type { Graph } from '@kiln/ir-spec';
import { createModel, type HostFunction, type Model } from '@kiln/runtime';
import { toTensor } from './tensors.js';
import { graphListing } from './listing.js';
import { graphBytes, type SaveOptions } from './producer.js';
import { buffersOf, updatesInTraceError, withCurrentBuffers, withModuleBuffers, type BufferLookup } from './module-state.js';

export interface TraceOptions extends tracer.TraceOptions {
  /** Run the graph against eager on the example and `checkInputs` (default true). */
  checkTrace?: boolean;
  /** More input sets (e.g. other batch sizes) to check the graph on. */
  checkInputs?: Tensor[][];
  /** Relative tolerance of the check (default 1e-5) and absolute (default 1e-5). */
  rtol?: number;
  atol?: number;
  /** Print trace warnings with console.warn (default true); they are on `.warnings` either way. */
  warn?: boolean;
}

/** The graph disagrees with the eager model (checkTrace). */
export class TraceCheckError extends Error {
  constructor(message: string, readonly output: string, readonly maxAbsDiff: number) {
    super(message);
    this.name = 'TraceCheckError';
  }
}

/** A model captured by jit.trace: its graph, a runnable executor and what the trace baked in. */
export class TracedModule {
  private readonly model: Model;

  constructor(
    readonly graph: Graph,
    readonly warnings: readonly tracer.TraceWarning[],
    private readonly outputSpec: tracer.OutputSpec,
    private readonly host?: (graph: Graph) => Record<string, HostFunction>,
    /** The traced module's buffers: a training-mode graph updates them (BatchNorm statistics), as eager does. */
    private readonly buffers: BufferLookup = () => new Map(),
  ) {
    // Random ops draw from kiln's generator, as eager does: manualSeed(s) then forward gives eager's numbers.
    this.model = createModel(graph, { hostFunctions: this.hostFunctions(graph), generator: defaultGenerator });
  }

  /** The JavaScript functions `graph`'s host_call nodes (@jit.ignore methods of scripted submodules) call. */
  hostFunctions(graph: Graph): Record<string, HostFunction> { return this.host?.(graph) ?? {}; }

  /** Runs the graph on the CPU executor; returns the forward's structure (tensor, array, object). */
  forward(...inputs: Tensor[]): any {
    const run = () => withModuleBuffers(this.model, this.buffers, () => this.model.runSync(inputs)).map(toTensor);
    // Inside another jit.trace, that trace records this graph as it is (not a baked constant).
    const listener = tracer.traceHooks.listener;
    if (listener?.onGraphCall && listener.suspend) {
      const refuse = updatesInTraceError(this.graph);
      if (refuse) throw refuse;
      const outs = listener.suspend(run);
      listener.onGraphCall(this.graph, inputs, outs, this.hostFunctions(this.graph));
      return tracer.unflattenOutput(this.outputSpec, outs);
    }
    return tracer.unflattenOutput(this.outputSpec, run());
  }

  /** The graph as a readable TypeScript-like listing. */
  get code(): string { return graphListing(this.graph); }

  /**
   * The `.tsgraph` bytes of this graph, with the WGSL kernels of every node codegen covers. A
   * training-mode graph that updates buffers stores their current values and declares the updates.
   */
  toBytes(opts: SaveOptions = {}): Uint8Array { return graphBytes(withCurrentBuffers(this.graph, this.buffers), opts); }

  /** Writes the `.tsgraph` file (Node). */
  async save(path: string, opts: SaveOptions = {}): Promise<void> {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path, this.toBytes(opts));
  }
}

/**
 * Records `model.forward(...exampleInputs)` into a graph.
 * @example const traced = jit.trace(model, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } } });
 */
export function trace(model: tracer.TraceableModule, exampleInputs: Tensor | Tensor[], opts: TraceOptions = {}): TracedModule {
  const inputs = Array.isArray(exampleInputs) ? exampleInputs : [exampleInputs];
  const r = tracer.traceModule(model, inputs, opts);
  if (opts.warn ?? true) for (const w of r.warnings) console.warn(`TraceWarning: ${w.message}`);
  const traced = new TracedModule(r.graph, r.warnings, r.outputSpec, () => ({ ...r.hostFunctions }) as Record<string, HostFunction>, buffersOf(model));
  if (opts.checkTrace ?? true) {
    const sets = [inputs, ...(opts.checkInputs ?? [])];
    // Checking leaves the module as the trace left it: one step of the generator and of the
    // buffers a training-mode forward updates (BatchNorm statistics), as one eager call would.
    const rng = defaultGenerator.getState();
    const buffers = (model.namedBuffers?.() ?? []).map(([, t]) => [t, t.data.slice()] as const);
    try {
      sets.forEach((set, k) => checkAgainstEager(model, traced, set, k, r.outputNames, opts));
    } finally {
      defaultGenerator.setState(rng);
      for (const [t, data] of buffers) t._storage.data.set(data);
    }
  }
  return traced;
}

function checkAgainstEager(model: tracer.TraceableModule, traced: TracedModule, inputs: Tensor[], setIndex: number, names: string[], opts: TraceOptions): void {
  // The graph replays the generator state eager started from, so random ops (dropout in
  // training mode, rand) draw the same numbers in both runs.
  const rng = defaultGenerator.getState();
  const buffers = (model.namedBuffers?.() ?? []).map(([, t]) => [t, t.data.slice()] as const);
  const want = tracer.flattenOutput(noGrad(() => model.forward(...inputs))).tensors;
  // The graph replays from the same state: generator and buffers (training-mode BatchNorm).
  defaultGenerator.setState(rng);
  for (const [t, data] of buffers) t._storage.data.set(data);
  const where = setIndex === 0 ? 'the example inputs' : `checkInputs[${setIndex - 1}]`;
  let got: Tensor[];
  try {
    got = tracer.flattenOutput(traced.forward(...inputs)).tensors;
  } catch (e) {
    // Typically an input whose shape the trace fixed: say how to declare it dynamic.
    const fixed = opts.dynamicAxes ? '' : ' The graph has the example\'s fixed shapes; declare the dims that vary with dynamicAxes, e.g. { dynamicAxes: { 0: { 0: \'N\' } } }.';
    throw new TraceCheckError(`checkTrace: on ${where}, the traced graph fails: ${e instanceof Error ? e.message : String(e)}.${fixed}`, names[0] ?? 'output', Infinity);
  }
  const rtol = opts.rtol ?? 1e-5, atol = opts.atol ?? 1e-5;
  const hint = traced.warnings.length ? ` The trace warned: ${traced.warnings[0].message}` : ' If the model is random in training mode (dropout), call model.eval() before tracing.';
  want.forEach((w, i) => {
    const g = got[i];
    const name = names[i] ?? `output ${i}`;
    if (g.shape.length !== w.shape.length || g.shape.some((d, j) => d !== w.shape[j])) {
      throw new TraceCheckError(`checkTrace: on ${where}, output '${name}' has shape [${g.shape}] in the graph but [${w.shape}] in eager mode.${hint}`, name, Infinity);
    }
    const a = g.data, b = w.data;
    let worst = 0, at = -1;
    for (let j = 0; j < w.numel; j++) {
      const d = Math.abs(a[j] - b[j]);
      if (!(d <= atol + rtol * Math.abs(b[j])) && (d > worst || at < 0)) { worst = d; at = j; }
    }
    if (at >= 0) {
      throw new TraceCheckError(
        `checkTrace: on ${where}, output '${name}' differs from eager: largest absolute difference ${worst.toExponential(3)} ` +
        `(element ${at}: graph ${a[at]}, eager ${b[at]}).${hint}`, name, worst);
    }
  });
}
