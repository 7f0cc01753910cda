// jit.script: compile a module's TypeScript source (or a plain function's) into a graph with
// `if`/`loop` regions, run it on the runtime's CPU executor and save it as `.tsgraph`.
// Compilation needs the kinds of the arguments (tensor ranks and sizes, numbers, booleans); it
// happens on the first forward (or eagerly with `{ inputs }`), once per argument signature, and
// again when an attribute the graph folded (training flag, a number, a list length) changed.
// Weights are copied into the graph when compiling, as jit.trace does. Tensor dim 0 is a symbolic batch `N` unless `dynamicBatch: false`.
// Invariant: the compiled graph computes what eager computes, or jit.script throws a ScriptError.

import { defaultGenerator, nn, Tensor, trace as tracer } from '@kiln/core';
import { scriptFunction, scriptModule, type CallResult, type ScriptInput, type ScriptedGraph } from '@kiln/compiler';
import type { Dim, Graph } from '@kiln/ir-spec';
import { createModel, type HostFunction, type InputValue, type Model } from '@kiln/runtime';
import { hostFunctionsFor } from './host-functions.js';
import { Adapters, createScriptHost } from './script-host.js';
import { graphListing } from './listing.js';
import { graphBytes, type SaveOptions } from './producer.js';
import { toTensor } from './tensors.js';
import { buffersOf, updatesInTraceError, withCurrentBuffers, withModuleBuffers } from './module-state.js';

export { ScriptError } from '@kiln/compiler';

export interface ScriptOptions {
  /** The `.ts` file declaring the model's class or the function (enables the type checker). */
  sourceFile?: string;
  /** Example arguments: compile now instead of on the first forward. */
  inputs?: unknown[];
  /** Make dim 0 of every tensor argument a symbolic batch size (default true). */
  dynamicBatch?: boolean;
  /** Graph name (default: the class or function name). */
  name?: string;
}

interface Compiled { scripted: ScriptedGraph; model: Model }

type Target = { kind: 'module'; module: nn.Module } | { kind: 'function'; fn: Function };

/** A model or function compiled by jit.script. */
export class ScriptModule {
  private readonly cache = new Map<string, Compiled>();
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
      return { c, outs: withModuleBuffers(c.model, this.buffers, () => c.model.runSync(args.map(toInput))).map(toTensor) };
    };
    // Inside jit.trace (hybrid mode) the trace records this whole graph, if/loop regions included,
    // not the one path these inputs take; compiling and running it are not recorded.
    const listener = tracer.traceHooks.listener;
    if (listener?.onGraphCall && listener.suspend) {
      const refuse = updatesInTraceError(listener.suspend(() => this.compileFor(args)).scripted.graph);
      if (refuse) throw refuse;
      const { c, outs } = listener.suspend(run);
      listener.onGraphCall(c.scripted.graph, args, outs, this.hostFunctions(c.scripted.graph));
      return rebuild(c.scripted.result, outs);
    }
    const { c, outs } = run();
    return rebuild(c.scripted.result, outs);
  }

  /** Compiles for arguments like `args` (cached per signature and training mode). */
  compileFor(args: readonly unknown[]): Compiled {
    const kinds = args.map((a, i) => kindOf(a, i, this.opts.dynamicBatch ?? true));
    const key = JSON.stringify(kinds);
    let c = this.cache.get(key);
    // Attributes folded into the graph (this.training, numbers, list lengths) may have changed.
    if (!c || !c.scripted.isCurrent()) {
      const adapters = new Adapters(this.opts.sourceFile);
      const host = createScriptHost(adapters);
      const scripted = this.target.kind === 'module'
        ? scriptModule(host, adapters.of(this.target.module), symbolize(kinds), this.methodName, { name: this.opts.name })
        : scriptFunction(host, Function.prototype.toString.call(this.target.fn), this.target.fn.name, symbolize(kinds), this.opts.sourceFile, { name: this.opts.name });
      // Random ops draw from kiln's generator, as eager does: manualSeed(s) then forward gives eager's numbers.
      c = { scripted, model: createModel(scripted.graph, { hostFunctions: this.hostFunctions(scripted.graph), generator: defaultGenerator }) };
      this.cache.set(key, c);
    }
    this.last = c;
    return c;
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

function toInput(a: unknown): InputValue {
  if (a instanceof Tensor) return a;
  if (typeof a === 'boolean') return { data: Uint8Array.of(a ? 1 : 0), shape: [], dtype: 'bool' };
  const n = a as number;
  return Number.isInteger(n) ? { data: Int32Array.of(n), shape: [], dtype: 'int32' } : { data: Float32Array.of(n), shape: [], dtype: 'float32' };
}

/** A host function's result for the runtime: tensors as dense `{ data, shape, dtype }`, arrays element-wise. */
function rebuild(r: CallResult, outs: readonly Tensor[]): unknown {
  if (r.kind === 'tensor') return outs[r.output];
  if (r.kind === 'list') return r.items.map((x) => rebuild(x, outs));
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
