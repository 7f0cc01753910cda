// jit.freeze and jit.optimizeForInference: a compiled module's graph through the compiler's
// pipeline, wrapped again as a module that forwards, saves to `.tsgraph` and runs in the
// runtime alone. Invariant: the result computes what the source module computes now: it runs
// only graphs optimized from the source's specialization for the call (guards.ts), never one
// compiled for other attribute values, and never calls user code to learn output structure.

import { defaultGenerator, trace as tracer, type Tensor } from '@kiln/core';
import { runPipeline, type PassRecord, type PipelineOptions } from '@kiln/compiler';
import { bufferUpdates, convertArray, Graph, type TensorData } from '@kiln/ir-spec';
import { createModel, type HostFunction, type Model } from '@kiln/runtime';
import { GuardSet } from './guards.js';
import { graphListing } from './listing.js';
import { graphBytes, type SaveOptions } from './producer.js';
import { scalarInput, type Specialization } from './specialization.js';
import { toTensor } from './tensors.js';

export interface OptimizeOptions {
  /** -O level (default 2): 0 none, 1 freeze and cleanups, 2 everything (BN folding, fusion, memory plan). */
  readonly level?: 0 | 1 | 2;
  /** Run exactly these passes (compiler PASSES names) instead of the level's list. */
  readonly passes?: readonly string[];
  /** Pipeline debugging: IR text after the named passes (printed with console.log). */
  readonly printAfter?: readonly string[];
  /** Run the IR verifier after every pass. */
  readonly verifyEach?: boolean;
  /** Run after every pass on these inputs against the source graph; names the first pass that diverges. */
  readonly checkEach?: { readonly inputs: readonly Tensor[]; readonly rtol?: number; readonly atol?: number };
  /**
   * Storage buffers one WebGPU kernel may bind (default 8, WebGPU's default
   * `maxStorageBuffersPerShaderStage`): fusion keeps every kernel within it, and save() generates
   * kernels for it. Raise it only for adapters known to allow more.
   */
  readonly maxStorageBuffers?: number;
  /**
   * How float32 weights are stored (default 'float32'). 'float16' / 'bfloat16' round every float32
   * constant of the optimized graph to that type (nearest even) and store it in 2 bytes in the
   * `.tsgraph` (the file is about half the size); the graph still computes in float32 with the
   * rounded weights, here and in every runtime, which widen them at load.
   */
  readonly weights?: 'float32' | 'float16' | 'bfloat16';
}

/** What can be optimized: a module with a graph (jit.trace's TracedModule, jit.script's ScriptModule once compiled). */
export interface CompiledModule {
  readonly graph: Graph;
  forward(...args: any[]): unknown;
  readonly warnings?: readonly tracer.TraceWarning[];
  /** The JavaScript functions the graph's host_call nodes (@jit.ignore methods) call. */
  hostFunctions?(graph: Graph): Record<string, HostFunction>;
  /**
   * The graph for these arguments under the module's current attributes, with its guards and
   * output structure (ScriptModule compiles again when needed; TracedModule checks and throws).
   */
  specialize?(args: readonly unknown[]): Specialization;
  /** The specialization `graph` belongs to. */
  readonly current?: Specialization;
}

interface Entry { readonly spec: Specialization; readonly model: Model; readonly timings: readonly PassRecord[] }

/**
 * A module whose graph the compiler optimized; `timings` says what each pass took.
 *
 * It follows its source module the way the source does. Made from a ScriptModule, a call whose
 * argument kinds differ (an int or a float `temperature`, another rank), or that comes after a
 * module attribute the compiled graph read changed (`this.mode`, a submodule's `training`, a
 * swapped layer, a list's length), uses the graph jit.script compiles for the current
 * attributes, optimized again with the same options (once per specialization; `timings` and
 * `graph` describe the latest). Made from a TracedModule it is a snapshot like the trace: a
 * call with other constant arguments throws a TraceArgumentError, one after a guarded attribute
 * changed a GuardError (trace again). Weights are copied when compiling, in both cases.
 *
 * @example
 * ```ts
 * const fast = jit.optimizeForInference(jit.script(model, { inputs: [x, 2] })); // forward(x, temperature)
 * fast.forward(x, 0.5);   // numbers stay run-time arguments
 * model.mode = 'seg';
 * fast.forward(x, 2);     // the 'seg' head: compiled and optimized again for the current attributes
 * ```
 */
export class OptimizedModule {
  private readonly entries = new WeakMap<Specialization, Entry>();
  private entry: Entry;
  readonly warnings: readonly tracer.TraceWarning[];

  /** @internal use jit.freeze or jit.optimizeForInference */
  constructor(private readonly source: CompiledModule, private readonly pipeline: PipelineOptions, private readonly weights: 'float32' | 'float16' | 'bfloat16' = 'float32') {
    this.warnings = source.warnings ?? [];
    this.entry = this.optimized(source.current ?? fixedSpecialization(source), pipeline);
  }

  /** The optimized graph used last (at first: the source's current graph, optimized). */
  get graph(): Graph { return this.entry.spec.graph; }

  /** What each pass took when the current graph was optimized. */
  get timings(): readonly PassRecord[] { return this.entry.timings; }

  /** The functions the graph's host_call nodes call (the source module's @jit.ignore methods). */
  hostFunctions(graph: Graph): Record<string, HostFunction> { return this.source.hostFunctions?.(graph) ?? {}; }

  /** The optimized graph for these arguments (optimizing the source's specialization on first use). */
  specialize(args: readonly unknown[]): Specialization {
    const spec = this.source.specialize ? this.source.specialize(args) : fixedSpecialization(this.source);
    const again = { ...this.pipeline, checkEach: undefined, printAfter: undefined };
    this.entry = this.optimized(spec, again);
    return this.entry.spec;
  }

  get current(): Specialization { return this.entry.spec; }

  /** Runs the optimized graph on the CPU executor; returns the forward's structure. */
  forward(...args: unknown[]): any {
    const listener = tracer.traceHooks.listener;
    const prepare = () => {
      const spec = this.specialize(args);
      return { spec, inputs: spec.inputs(args) };
    };
    // Inside jit.trace, compiling and running are not recorded; the trace records this graph.
    if (listener?.onGraphCall && listener.suspend) {
      const { spec, inputs, outs } = listener.suspend(() => {
        const p = prepare();
        return { ...p, outs: this.entry.model.runSync(p.inputs).map(toTensor) };
      });
      listener.onGraphCall(spec.graph, inputs, outs, this.hostFunctions(spec.graph), spec.guards);
      return spec.rebuild(outs);
    }
    const { spec, inputs } = prepare();
    return spec.rebuild(this.entry.model.runSync(inputs).map(toTensor));
  }

  private optimized(source: Specialization, opts: PipelineOptions): Entry {
    let e = this.entries.get(source);
    if (!e) {
      // A training-mode graph updates buffers (BatchNorm statistics): it is state, not an inference graph.
      const updates = bufferUpdates(source.graph);
      if (updates.length) {
        throw new Error(`jit.freeze/optimizeForInference: graph @${source.graph.name} updates buffers (${updates.map((u) => `'${u.param}'`).join(', ')}: running statistics of a layer in training mode); ` +
          'call model.eval() before tracing or scripting, then optimize');
      }
      const r = runPipeline(source.graph, opts);
      const graph = this.weights === 'float32' ? r.graph : withReducedWeights(r.graph, this.weights);
      const spec: Specialization = { graph, guards: source.guards, inputs: source.inputs, rebuild: source.rebuild };
      e = { spec, model: createModel(graph, { hostFunctions: this.hostFunctions(graph), generator: defaultGenerator }), timings: r.timings };
      this.entries.set(source, e);
    }
    return e;
  }

  /** The graph as a readable TypeScript-like listing. */
  get code(): string { return graphListing(this.graph); }

  /** The `.tsgraph` bytes of the current graph, with the WGSL kernels of every node codegen covers. */
  toBytes(opts: SaveOptions = {}): Uint8Array {
    return graphBytes(this.graph, { maxStorageBuffers: this.pipeline.maxStorageBuffers, ...opts });
  }

  /** Writes the `.tsgraph` file (Node). */
  async save(path: string, opts: SaveOptions = {}): Promise<void> {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path, this.toBytes(opts));
  }
}

/**
 * A source without specializations (a module exposing only `graph`): its one graph, inputs as
 * given (numbers and booleans as 0-d tensors), one output as a tensor, several as an array.
 */
function fixedSpecialization(m: CompiledModule): Specialization {
  return {
    graph: m.graph,
    guards: GuardSet.empty,
    inputs: (args) => args.map(scalarInput),
    rebuild: (outs) => (outs.length === 1 ? outs[0] : [...outs]),
  };
}

function optimize(m: CompiledModule, opts: PipelineOptions, weights?: 'float32' | 'float16' | 'bfloat16'): OptimizedModule {
  if (weights !== undefined && weights !== 'float32' && weights !== 'float16' && weights !== 'bfloat16') {
    throw new Error(`jit.optimizeForInference: weights must be 'float32', 'float16' or 'bfloat16', got ${JSON.stringify(weights)}`);
  }
  return new OptimizedModule(m, opts, weights);
}

/** `g` with every float32 tensor rounded to `dtype` and marked to be stored in 16 bits (TensorData.storage). */
function withReducedWeights(g: Graph, dtype: 'float16' | 'bfloat16'): Graph {
  const tensors = new Map<string, TensorData>();
  for (const [name, t] of g.tensors) {
    tensors.set(name, t.dtype === 'float32' ? { dtype: 'float32', shape: t.shape, data: convertArray(t.data, dtype), storage: dtype } : t);
  }
  return new Graph(g.name, g.inputs, g.body, g.outputs, tensors, g.metadata);
}

/**
 * Freezes a traced module: parameters become constants, `training` is folded to false and the
 * -O1 cleanups run (dropout removal, constant folding, canonicalization, CSE, DCE).
 *
 * @example
 * ```ts
 * const frozen = jit.freeze(jit.trace(model.eval(), [x]));
 * frozen.forward(x); // same values, no params left in frozen.graph.inputs
 * ```
 */
export function freeze(m: CompiledModule): OptimizedModule {
  return optimize(m, { level: 1 });
}

/**
 * Optimizes a traced or scripted module for inference (default -O2: freeze, cleanups, conv/linear-BN
 * folding, per-channel affine folding, epilogue and elementwise fusion, memory planning).
 *
 * @example
 * ```ts
 * const fast = jit.optimizeForInference(jit.trace(model.eval(), [x], { dynamicAxes: { 0: { 0: 'N' } } }));
 * fast.forward(x);            // matches model.forward(x)
 * await fast.save('model.tsgraph'); // runs in @kiln/runtime alone
 * ```
 */
export function optimizeForInference(m: CompiledModule, opts: OptimizeOptions = {}): OptimizedModule {
  const check = opts.checkEach;
  return optimize(m, {
    level: opts.level ?? 2,
    passes: opts.passes,
    printAfter: opts.printAfter,
    print: (t) => console.log(t),
    verifyEach: opts.verifyEach,
    checkEach: check ? { inputs: check.inputs, rtol: check.rtol, atol: check.atol } : undefined,
    maxStorageBuffers: opts.maxStorageBuffers,
  }, opts.weights);
}
