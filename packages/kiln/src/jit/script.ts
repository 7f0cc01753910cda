// jit.script: compile a module's TypeScript source (or a plain function's) into a graph with
// `if`/`loop` regions, run it on the runtime's CPU executor and save it as `.tsgraph`.
// Compilation needs the kinds of the arguments (tensor ranks and sizes, numbers, booleans); it
// happens on the first forward (or eagerly with `{ inputs }`), once per argument signature and
// per values of the module attributes the compilation read (guards.ts: numbers, strings,
// booleans, arrays, submodules swapped, training flags, library layers' settings).
// Weights are copied into the graph when compiling, as jit.trace does. Tensor dim 0 is a symbolic batch `N` unless `dynamicBatch: false`.
// With `dynamicAxes` exactly the dims it names are symbolic (script-axes.ts).
// Invariant: the compiled graph computes what eager computes, or jit.script throws a ScriptError.

import { defaultGenerator, nn, Tensor, trace as tracer } from '@kiln/core';
import { scriptFunction, scriptModule, type CallResult, type ScriptInput, type ScriptedGraph } from '@kiln/compiler';
import type { Dim, Graph } from '@kiln/ir-spec';
import { createModel, type HostFunction, type Model } from '@kiln/runtime';
import { hostFunctionsFor } from './host-functions.js';
import { GuardedCache, guardsForReads, type GuardSet } from './guards.js';
import { scalarInput, type Specialization } from './specialization.js';
import { Adapters, createScriptHost, moduleOfAdapter } from './script-host.js';
import { graphListing } from './listing.js';
import { graphBytes, type SaveOptions } from './producer.js';
import { toTensor } from './tensors.js';
import { axesInput, axesShapes, type DynamicAxes } from './script-axes.js';
import { buffersOf, updatesInTraceError, withCurrentBuffers, withModuleBuffers } from './module-state.js';

export { ScriptError } from '@kiln/compiler';

export interface ScriptOptions {
  /** The `.ts` file declaring the model's class or the function (enables the type checker). */
  sourceFile?: string;
  /** Example arguments: compile now instead of on the first forward. */
  inputs?: unknown[];
  /** Make dim 0 of every tensor argument a symbolic batch size (default true, unless `dynamicAxes` is given). */
  dynamicBatch?: boolean;
  /**
   * `{ argumentIndex: { dim: 'T' } }`, as jit.trace's option: exactly those dims are symbolic in
   * the graph (e.g. `{ 0: { 0: 'N', 1: 'T' } }`), every other dim is fixed; replaces dynamicBatch.
   */
  dynamicAxes?: DynamicAxes;
  /** Graph name (default: the class or function name). */
  name?: string;
}

interface Compiled { scripted: ScriptedGraph; model: Model; guards: GuardSet; spec: Specialization }

type Target = { kind: 'module'; module: nn.Module } | { kind: 'function'; fn: Function };

/**
 * A model or function compiled by jit.script. It follows the live module: the graph used for a
 * call is one compiled for the same argument kinds and the current values of every module
 * attribute the compilation read (a changed `this.mode`, a swapped submodule or `model.eval()`
 * compiles again; up to 8 versions per argument signature are kept). Weights are copied into
 * the graph when compiling: after training steps, script again.
 */
export class ScriptModule {
  private readonly cache = new GuardedCache<Compiled>();
  private last: Compiled | undefined;
  private readonly methods = new Map<string, ScriptModule>();

  /** @internal use jit.script */
  constructor(private readonly target: Target, private readonly opts: ScriptOptions = {}, readonly methodName = 'forward') {
    if (opts.inputs) this.compileFor(opts.inputs);
  }

  /** The graph compiled last (or for `{ inputs }`); throws before the first compilation. */
  get graph(): Graph {
    if (!this.last) throw new Error('jit.script: nothing is compiled yet; call forward(...) once, or pass { inputs: [example, ...] } to jit.script');
    return this.last.scripted.graph;
  }

  /** The graph as a readable TypeScript-like listing. */
  get code(): string { return graphListing(this.graph); }

  /** The compiled form of another method (one marked @jit.export, or any method by name). */
  method(name: string): ScriptModule {
    if (name === this.methodName) return this;
    if (this.target.kind !== 'module') throw new Error('jit.script: a scripted function has no methods');
    let m = this.methods.get(name);
    if (!m) {
      m = new ScriptModule(this.target, { ...this.opts, inputs: undefined }, name);
      this.methods.set(name, m);
    }
    return m;
  }

  /** Compiles (if needed) for these arguments and runs the graph on the CPU executor. */
  forward(...args: unknown[]): any {
    const run = () => {
      const c = this.compileFor(args);
      // Training-mode BatchNorm: the module's running statistics go in and the new ones come back.
      return { c, outs: withModuleBuffers(c.model, this.buffers, () => c.model.runSync(args.map(scalarInput))).map(toTensor) };
    };
    // Inside jit.trace (hybrid mode) the trace records this whole graph, if/loop regions included,
    // not the one path these inputs take; compiling and running it are not recorded.
    const listener = tracer.traceHooks.listener;
    if (listener?.onGraphCall && listener.suspend) {
      const refuse = updatesInTraceError(listener.suspend(() => this.compileFor(args)).scripted.graph);
      if (refuse) throw refuse;
      const { c, outs } = listener.suspend(run);
      listener.onGraphCall(c.scripted.graph, args, outs, this.hostFunctions(c.scripted.graph), c.guards);
      return rebuild(c.scripted.result, outs);
    }
    const { c, outs } = run();
    return rebuild(c.scripted.result, outs);
  }

  /** Compiles for arguments like `args` (cached per signature and module attribute values). */
  compileFor(args: readonly unknown[]): Compiled {
    const kinds = this.kindsOf(args);
    const key = JSON.stringify(kinds);
    let c = this.cache.get(key);
    if (!c) {
      const adapters = new Adapters(this.opts.sourceFile);
      const host = createScriptHost(adapters);
      const scripted = this.target.kind === 'module'
        ? scriptModule(host, adapters.of(this.target.module), symbolize(kinds), this.methodName, { name: this.opts.name })
        : scriptFunction(host, Function.prototype.toString.call(this.target.fn), this.target.fn.name, symbolize(kinds), this.opts.sourceFile, { name: this.opts.name });
      // Random ops draw from kiln's generator, as eager does: manualSeed(s) then forward gives eager's numbers.
      const guards = guardsForReads(scripted.reads, moduleOfAdapter);
      const spec: Specialization = {
        graph: scripted.graph,
        guards,
        inputs: (xs) => xs.map(scalarInput),
        rebuild: (outs) => rebuild(scripted.result, outs),
      };
      c = { scripted, guards, spec, model: createModel(scripted.graph, { hostFunctions: this.hostFunctions(scripted.graph), generator: defaultGenerator }) };
      this.cache.set(key, guards, c);
    }
    this.last = c;
    return c;
  }

  /** The kinds of `args`: with dynamicAxes, the named dims symbolic (sizes left out of the cache key). */
  private kindsOf(args: readonly unknown[]): Kind[] {
    const axes = this.opts.dynamicAxes;
    if (!axes) return args.map((a, i) => kindOf(a, i, this.opts.dynamicBatch ?? true));
    if (this.opts.dynamicBatch !== undefined) {
      throw new Error("jit.script: pass either dynamicAxes or dynamicBatch, not both; with dynamicAxes only the dims it names are symbolic (name dim 0 too for a dynamic batch, e.g. { 0: { 0: 'N', 1: 'T' } })");
    }
    const shapes = axesShapes(args, axes);
    return args.map((a, i) => (a instanceof Tensor ? axesInput(a, shapes[i]!) : kindOf(a, i, false)));
  }

  /**
   * The graph for these arguments under the module's current attributes (compiled if needed),
   * with its guards: what jit.optimizeForInference optimizes, once per specialization.
   */
  specialize(args: readonly unknown[]): Specialization { return this.compileFor(args).spec; }

  /** The specialization compiled last (or for `{ inputs }`); throws before the first compilation. */
  get current(): Specialization {
    if (!this.last) void this.graph;
    return this.last!.spec;
  }

  /**
   * The functions the graph's `host_call` nodes call: each @jit.ignore method of the instance it
   * was called on (`blocks.1:Block.debugHook` is that method of submodule `blocks.1`), with
   * runtime tensors converted to kiln Tensors and back. jit.optimizeForInference uses them too.
   */
  hostFunctions(graph: Graph): Record<string, HostFunction> {
    return this.target.kind === 'module' ? hostFunctionsFor(this.target.module, graph) : {};
  }

  /** The module's buffers by name (a scripted function has none). */
  private readonly buffers = () => (this.target.kind === 'module' ? buffersOf(this.target.module)() : new Map<string, Tensor>());

  /**
   * The `.tsgraph` bytes of the current graph, with the WGSL kernels of every node codegen covers.
   * A training-mode graph that updates buffers (BatchNorm statistics) stores their current values
   * and declares the updates: the loaded model keeps that state from run to run.
   */
  toBytes(opts: SaveOptions = {}): Uint8Array { return graphBytes(withCurrentBuffers(this.graph, this.buffers), opts); }

  /** Writes the current graph as a `.tsgraph` file (Node). */
  async save(path: string, opts: SaveOptions = {}): Promise<void> {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path, this.toBytes(opts));
  }
}

type Kind = ScriptInput | { kind: 'batched'; dtype: Tensor['dtype']; shape: number[] };

function kindOf(a: unknown, i: number, dynamicBatch: boolean): Kind {
  if (a instanceof Tensor) {
    if (dynamicBatch && a.ndim >= 1) return { kind: 'batched', dtype: a.dtype, shape: [...a.shape] };
    return { kind: 'tensor', dtype: a.dtype, shape: [...a.shape] };
  }
  if (typeof a === 'number') return { kind: 'number', dtype: Number.isInteger(a) ? 'int32' : 'float32' };
  if (typeof a === 'boolean') return { kind: 'boolean' };
  throw new Error(`jit.script: argument ${i} is ${a === null ? 'null' : typeof a}; compiled methods take tensors, numbers and booleans`);
}

/** Batched tensors get a symbolic dim 0: one symbol per distinct example size (N, N1, ...). */
function symbolize(kinds: readonly Kind[]): ScriptInput[] {
  const symbols = new Map<number, string>();
  const sym = (size: number) => {
    let s = symbols.get(size);
    if (!s) { s = symbols.size ? `N${symbols.size}` : 'N'; symbols.set(size, s); }
    return s;
  };
  return kinds.map((k) => (k.kind === 'batched' ? { kind: 'tensor', dtype: k.dtype, shape: k.shape.map((d, j): Dim => (j === 0 ? sym(d) : d)) } : k));
}

/** A host function's result for the runtime: tensors as dense `{ data, shape, dtype }`, arrays element-wise. */
function rebuild(r: CallResult, outs: readonly Tensor[]): unknown {
  if (r.kind === 'tensor') return outs[r.output];
  if (r.kind === 'list') return r.items.map((x) => rebuild(x, outs));
  if (r.kind === 'object') return Object.fromEntries(r.keys.map((k, i) => [k, rebuild(r.items[i], outs)]));
  return r.value;
}

/**
 * Compiles a module instance or a plain function of tensors from its source.
 * @example
 * const scripted = jit.script(model);          // compiles on the first forward
 * const y = scripted.forward(x);               // runs the graph (if/loop regions included)
 * await scripted.save('model.tsgraph');
 */
export function scriptTarget(target: nn.Module | Function, opts: ScriptOptions = {}): ScriptModule {
  if (target instanceof nn.Module) return new ScriptModule({ kind: 'module', module: target }, opts);
  if (typeof target === 'function') {
    if (/^class[\s{]/.test(Function.prototype.toString.call(target))) {
      throw new Error('jit.script: got a class; pass an instance (jit.script(new Model())) or use @jit.script on the class');
    }
    return new ScriptModule({ kind: 'function', fn: target }, opts);
  }
  throw new Error(`jit.script: expected an nn.Module instance or a function, got ${typeof target}`);
}
