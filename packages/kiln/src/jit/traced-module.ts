// jit.trace: record an eager run into a graph (core's tracer), check it against eager on the
// example and on `checkInputs` (on by default, as in PyTorch), and wrap it as a TracedModule
// that runs on the runtime's CPU executor and saves to `.tsgraph`. Non-tensor arguments are
// constants of the trace and scripted submodules' attributes are guarded: a call that differs
// from what was traced throws a TraceArgumentError / GuardError instead of running a wrong graph.

import { defaultGenerator, isGradEnabled, nn, noGrad, Tensor, trace as tracer } from '@kiln/core';
import { debugCapturedIr, type Graph } from '@kiln/ir-spec';
import { createModel, type HostFunction, type Model } from '@kiln/runtime';
import { toTensor } from './tensors.js';
import { graphListing } from './listing.js';
import { graphBytes, type SaveOptions } from './producer.js';
import { GuardSet, type Guard } from './guards.js';
import type { Specialization } from './specialization.js';
import { finish, type Capture, type InputSource } from './compile-sources.js';
import { AutodiffUnsupported } from './compile-autodiff.js';
import { prepareTraining, runTraining, type Training } from './compile-run.js';
import { buffersOf, updatesInTraceError, withCurrentBuffers, withModuleBuffers, type BufferLookup } from './module-state.js';

export interface TraceOptions extends tracer.TraceOptions {
  /** Run the graph against eager on the example and `checkInputs` (default true). */
  checkTrace?: boolean;
  /** More input sets (e.g. other batch sizes) to check the graph on. */
  checkInputs?: unknown[][];
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

/** A call of a traced module whose non-tensor arguments differ from the traced ones. */
export class TraceArgumentError extends Error {
  constructor(message: string, readonly argument: number) {
    super(message);
    this.name = 'TraceArgumentError';
  }
}

/** A compiled graph was called after a module attribute it was specialized on changed. */
export class GuardError extends Error {
  constructor(message: string, readonly attribute: string) {
    super(message);
    this.name = 'GuardError';
  }
}

/** What a traced graph was made for, besides its input types. */
export interface TraceAssumptions {
  /** Non-tensor arguments baked in (their positions among forward's arguments). */
  readonly constantArgs?: readonly tracer.ConstantArg[];
  /** Attributes the scripted graphs inlined by the trace were specialized on. */
  readonly guards?: GuardSet;
  /** The traced module's buffers: a training-mode graph updates them (BatchNorm statistics), as eager does. */
  readonly buffers?: BufferLookup;
  /**
   * The traced nn.Module. Its submodules, parameters and buffers become this module's own (the
   * same tensors: optimizers, stateDict and parents see them), and with gradients enabled forward
   * reads them live and records one autograd node running a backward graph.
   */
  readonly source?: nn.Module;
}

/**
 * A model captured by jit.trace: its graph, a runnable executor and what the trace baked in.
 * Like PyTorch's traced modules it is a snapshot: non-tensor arguments are constants (a call
 * must pass the traced values, else TraceArgumentError), and when a scripted submodule's
 * attribute that the graph was specialized on changes, forward throws a GuardError: trace again.
 */
export class TracedModule extends nn.Module {
  private readonly model: Model;
  /** The non-tensor arguments baked into the graph (a call must pass the same values). */
  readonly constantArgs: readonly tracer.ConstantArg[];
  /** What the graph assumed about module attributes (from the scripted graphs it inlines). */
  readonly guards: GuardSet;
  private readonly bufferLookup: BufferLookup;
  readonly #source: nn.Module | undefined;
  /** The trainable form of the graph (params as live inputs), made on the first call that needs gradients. */
  #capture: Capture | undefined;
  readonly #training = new Map<string, Training | AutodiffUnsupported>();

  constructor(
    readonly graph: Graph,
    readonly warnings: readonly tracer.TraceWarning[],
    readonly outputSpec: tracer.OutputSpec,
    private readonly host?: (graph: Graph) => Record<string, HostFunction>,
    assumptions: TraceAssumptions = {},
  ) {
    super();
    this.constantArgs = assumptions.constantArgs ?? [];
    this.guards = assumptions.guards ?? GuardSet.empty;
    this.bufferLookup = assumptions.buffers ?? (() => new Map());
    this.#source = assumptions.source;
    if (this.#source) {
      this.training = this.#source.training;
      // The traced module's own members (submodules, parameters, buffers) by the same names and
      // tensors, so parameters()/stateDict() read as the source's; names this class uses are kept.
      for (const [name, v] of Object.entries(this.#source)) {
        if ((v instanceof nn.Module || v instanceof Tensor) && !(name in this)) Object.defineProperty(this, name, { value: v, writable: true, enumerable: true, configurable: true });
      }
    }
    // Random ops draw from kiln's generator, as eager does: manualSeed(s) then forward gives eager's numbers.
    this.model = createModel(graph, { hostFunctions: this.hostFunctions(graph), generator: defaultGenerator });
  }

  /** The JavaScript functions `graph`'s host_call nodes (@jit.ignore methods of scripted submodules) call. */
  hostFunctions(graph: Graph): Record<string, HostFunction> { return this.host?.(graph) ?? {}; }

  /**
   * The graph's tensor inputs from forward's arguments, after checking the constant arguments
   * and the guards (throws TraceArgumentError / GuardError, naming what differs and what to do).
   */
  tensorInputs(args: readonly unknown[]): Tensor[] {
    const what = `the traced ${this.graph.name}`;
    const expected = this.graph.inputs.filter((i) => i.kind === 'input').length + this.constantArgs.length;
    if (args.length !== expected) {
      throw new TraceArgumentError(`${what} was traced with ${expected} argument(s) but is called with ${args.length}; call it with arguments like the example inputs, or trace again`, Math.min(args.length, expected));
    }
    for (const c of this.constantArgs) {
      const a = args[c.index];
      if (a instanceof Tensor || !tracer.sameConstant(c.value, a)) {
        throw new TraceArgumentError(`${what}: argument ${c.index} ('${c.name}') was traced as the constant ${tracer.showConstant(c.value)}, ` +
          `which is baked into the graph, but this call passes ${a instanceof Tensor ? 'a tensor' : tracer.showConstant(a)}. ` +
          `Pass ${tracer.showConstant(c.value)}, trace again with the new value, or compile with jit.script, whose graphs take numbers and booleans as run-time arguments.`, c.index);
      }
    }
    const failure = this.guards.failure();
    if (failure) {
      throw new GuardError(`${what} was recorded when ${failure.attribute} was ${failure.was}; it is now ${failure.now}, and the graph does not follow it. ` +
        'Trace again (and optimize again) after changing it, or call the scripted module directly.', failure.attribute);
    }
    const constant = new Set(this.constantArgs.map((c) => c.index));
    return args.filter((a, i): a is Tensor => !constant.has(i)) as Tensor[];
  }

  /** The one specialization a trace has (after the checks of `tensorInputs`): what jit.optimizeForInference optimizes. */
  specialize(args: readonly unknown[]): Specialization {
    this.tensorInputs(args);
    return this.current;
  }

  /** The graph with its guards, inputs and output structure. */
  get current(): Specialization {
    this.fixed ??= {
      graph: this.graph,
      guards: this.guards,
      inputs: (args) => this.tensorInputs(args),
      rebuild: (outs) => tracer.unflattenOutput(this.outputSpec, outs),
    };
    return this.fixed;
  }
  private fixed: Specialization | undefined;

  /**
   * Runs the graph on the CPU executor; returns the forward's structure (tensor, array, object).
   * With gradients enabled and a tensor that needs one (an argument or a parameter of the traced
   * module), the outputs are connected to autograd: backward reaches the arguments and the
   * module's parameters through a backward graph derived from the op entries' gradient rules.
   */
  forward(...args: unknown[]): any {
    const inputs = this.tensorInputs(args);
    if (isGradEnabled() && !tracer.traceHooks.listener && this.#source) {
      const out = this.trainingForward(args, inputs);
      if (out !== undefined) return out;
    }
    const run = () => withModuleBuffers(this.model, this.bufferLookup, () => this.model.runSync(inputs)).map(toTensor);
    // Inside another jit.trace, that trace records this graph as it is (not a baked constant).
    const listener = tracer.traceHooks.listener;
    if (listener?.onGraphCall && listener.suspend) {
      const refuse = updatesInTraceError(this.graph);
      if (refuse) throw refuse;
      const outs = listener.suspend(run);
      listener.onGraphCall(this.graph, inputs, outs, this.hostFunctions(this.graph), this.guards);
      return tracer.unflattenOutput(this.outputSpec, outs);
    }
    return tracer.unflattenOutput(this.outputSpec, run());
  }

  /** The forward of the trainable graph when a tensor needs a gradient; undefined when none does or the graph has no gradient (warned once). */
  private trainingForward(args: readonly unknown[], inputs: readonly Tensor[]): unknown {
    const source = this.#source!;
    const params = this.graph.inputs.filter((i) => i.kind === 'param').map((i) => i.name);
    const live = new Map([...source.namedParameters(), ...source.namedBuffers()]);
    const wrt = [
      ...this.graph.inputs.filter((i) => i.kind === 'input').flatMap((i, k) => (inputs[k]?.requiresGrad ? [i.name] : [])),
      ...params.filter((n) => live.get(n)?.requiresGrad),
    ];
    if (!wrt.length) return undefined;
    const key = wrt.join('\u0000');
    // A parameter tensor replaced since (loadStateDict writes in place; assigning a new one does not): read the new ones.
    if (this.#capture?.guards.failure()) { this.#capture = undefined; this.#training.clear(); }
    let t = this.#training.get(key);
    if (!t) {
      try {
        this.#capture ??= this.trainableCapture(source);
        t = prepareTraining(this.#capture, new Set(wrt));
      } catch (e) {
        // No gradient rule for an op, a region, or a param that is no tensor field of an nn.Module (a scripted block's).
        t = e instanceof AutodiffUnsupported ? e : new AutodiffUnsupported(e instanceof Error ? e.message : String(e));
        console.warn(`jit.trace(${this.graph.name}): gradients do not flow through this traced module (its outputs are constants for autograd): ${t.message}`);
      }
      this.#training.set(key, t);
    }
    if (t instanceof AutodiffUnsupported) return undefined;
    return runTraining(this.#capture!, t, args, `the traced ${this.graph.name}`);
  }

  private trainableCapture(source: nn.Module): Capture {
    const constant = new Set(this.constantArgs.map((c) => c.index));
    const argSources: InputSource[] = [];
    for (let index = 0, k = 0; k < this.graph.inputs.filter((i) => i.kind === 'input').length; index++) {
      if (!constant.has(index)) { argSources.push({ kind: 'arg', index }); k++; }
    }
    return finish('trace', this.graph, { kind: 'module', module: source }, argSources, this.guards, this.hostFunctions(this.graph),
      (outs) => tracer.unflattenOutput(this.outputSpec, [...outs]));
  }

  /** The graph as a readable TypeScript-like listing. */
  get code(): string { return graphListing(this.graph); }

  /**
   * The `.tsgraph` bytes of this graph, with the WGSL kernels of every node codegen covers. A
   * training-mode graph that updates buffers stores their current values and declares the updates.
   */
  toBytes(opts: SaveOptions = {}): Uint8Array { return graphBytes(withCurrentBuffers(this.graph, this.bufferLookup), opts); }

  /** Writes the `.tsgraph` file (Node). */
  async save(path: string, opts: SaveOptions = {}): Promise<void> {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path, this.toBytes(opts));
  }
}

/**
 * Records `model.forward(...exampleInputs)` into a graph. Tensor arguments become the graph's
 * inputs; any other argument (a number, flag, string or options object) is baked in as a
 * constant (a note says so), and the traced module must be called with the same value.
 * @example const traced = jit.trace(model, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } } });
 */
export function trace(model: tracer.TraceableModule, exampleInputs: Tensor | unknown[], opts: TraceOptions = {}): TracedModule {
  const inputs = Array.isArray(exampleInputs) ? exampleInputs : [exampleInputs];
  const r = tracer.traceModule(model, inputs, opts);
  debugCapturedIr('jit.trace', r.graph); // KILN_DEBUG=ir
  if (opts.warn ?? true) {
    for (const w of r.warnings) console.warn(`TraceWarning: ${w.message}`);
    for (const c of r.constantArgs) {
      console.warn(`TraceNote: argument ${c.index} ('${c.name}') is not a tensor; its value ${tracer.showConstant(c.value)} is baked into the graph, ` +
        'and the traced module must be called with the same value (it throws otherwise). Use jit.script to keep numbers and booleans as run-time arguments.');
    }
  }
  // The guards come from kiln's own graph calls (ScriptModule, TracedModule): GuardSets, whose
  // attributes (`this.mode`) are named from the called module; prefix the call's scope.
  const guards = new GuardSet(r.guards.flatMap(({ scope, guards: g }) => (g instanceof GuardSet ? g.guards : [{
    check: () => { const now = g.describeFailure(); return now ? { attribute: 'an attribute of a compiled submodule', was: 'as traced', now } : undefined; },
  }]).map((one) => (scope ? scoped(one, scope) : one))));
  const traced = new TracedModule(r.graph, r.warnings, r.outputSpec, () => ({ ...r.hostFunctions }) as Record<string, HostFunction>, { constantArgs: r.constantArgs, guards, buffers: buffersOf(model), ...(model instanceof nn.Module ? { source: model } : {}) });
  if (opts.checkTrace ?? true) {
    const sets = [inputs, ...(opts.checkInputs ?? [])];
    // Checking leaves the module as the trace left it: one step of the generator and of the
    // buffers a training-mode forward updates (BatchNorm statistics), as one eager call would.
    const restore = tracer.snapshotState(model);
    try {
      sets.forEach((set, k) => checkAgainstEager(model, traced, set, k, r.outputNames, opts));
    } finally {
      restore();
    }
  }
  return traced;
}

/** `guard` with its attribute named from the traced root: `this.mode` of the call at `head` is `this.head.mode`. */
function scoped(guard: Guard, scope: string): Guard {
  return {
    check() {
      const f = guard.check();
      return f && { ...f, attribute: f.attribute.replace(/\bthis\b/, `this.${scope}`) };
    },
  };
}

function checkAgainstEager(model: tracer.TraceableModule, traced: TracedModule, inputs: unknown[], setIndex: number, names: string[], opts: TraceOptions): void {
  // The graph replays the generator state eager started from, so random ops (dropout in
  // training mode, rand) draw the same numbers in both runs; buffers too (training-mode BatchNorm).
  const restore = tracer.snapshotState(model);
  // Eager runs as the user's call did (grad mode included: a forward may call autograd.grad).
  const want = tracer.flattenOutput(model.forward(...inputs)).tensors;
  restore();
  const where = setIndex === 0 ? 'the example inputs' : `checkInputs[${setIndex - 1}]`;
  let got: Tensor[];
  try {
    got = tracer.flattenOutput(noGrad(() => traced.forward(...inputs))).tensors; // values only: no trainable graph for the check
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
    for (let j = 0; j < w.numel(); j++) {
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
