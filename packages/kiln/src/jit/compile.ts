// jit.compile: Kiln's torch.compile. The first call of a signature captures a graph
// (compile-capture.ts), optimizes it with the compiler's passes and runs it in the runtime; calls
// with the same input structure, dtypes and shapes whose guards hold reuse it. With gradients
// needed, the graph is split into a forward and a backward graph derived from the op entries'
// gradient rules (compile-autodiff.ts), hooked into eager autograd as one node.
// Invariant: a call returns what the eager module returns now (same values within float
// rounding, same buffer updates and random draws) or runs the module eagerly; parameters are
// read from the live module on every call, so optimizers and loadStateDict are seen.

import { autograd, defaultGenerator, isGradEnabled, nn, Tensor, trace as tracer, zeros } from '@kiln/core';
import { runPipeline } from '@kiln/compiler';
import { Graph, walkNodes } from '@kiln/ir-spec';
import { createModel, type InputValue, type Model, type Output } from '@kiln/runtime';
import { describeFailure, GuardedCache, GuardSet } from './guards.js';
import { captureWithScript, captureWithTrace, type Capture, type InputSource, type Target } from './compile-capture.js';
import { AutodiffUnsupported, differentiate, GRAD_PREFIX, SAVED_PREFIX } from './compile-autodiff.js';
import { scalarInput } from './specialization.js';
import { toTensor } from './tensors.js';

export interface CompileOptions {
  /** Only `'default'` today; `'reduce-overhead'` and `'max-autotune'` are refused with an error. */
  readonly mode?: 'default' | 'reduce-overhead' | 'max-autotune';
  /**
   * undefined: a dim seen with a second size becomes symbolic; true: every dim symbolic from the
   * start; false: never symbolic. Graphs compiled with gradients enabled always keep exact shapes.
   */
  readonly dynamic?: boolean;
  /** Throw (naming the reason) instead of running code the compiler cannot capture eagerly. */
  readonly fullgraph?: boolean;
  /** `'kiln'` (default): the runtime; `'eager'`: run the model as it is (to rule the compiler out when debugging). */
  readonly backend?: 'kiln' | 'eager';
  /** Recompilations before the model runs eagerly with one warning (default 8). */
  readonly recompileLimit?: number;
}

/** What compiled.explain() reports. */
export interface CompileExplanation {
  readonly graphs: readonly { readonly inputs: string; readonly via: 'script' | 'trace'; readonly training: boolean; readonly nodes: number; readonly guards: readonly string[] }[];
  /** Why each compilation after the first happened. */
  readonly recompiles: readonly string[];
  /** Code that runs eagerly instead of in a graph, and why. */
  readonly graphBreaks: readonly { readonly inputs: string; readonly reason: string; readonly where?: string }[];
  readonly compiles: number;
  /** Times an inference graph took new parameter values (written in place since it was bound): no recompilation. */
  readonly rebinds: number;
  /** True once the recompile limit was hit: misses run eagerly. */
  readonly eagerFallback: boolean;
}

const PASSES = ['remove-dropout', 'fold-constants', 'canonicalize', 'eliminate-common-subexpressions', 'eliminate-dead-code',
  'fuse-epilogue', 'eliminate-dead-code', 'plan-memory'];

interface Run { readonly model: Model }
/** An inference model with the parameters' values bound in (as the versions say). */
interface Bound extends Run { readonly watched: readonly Tensor[]; readonly versions: readonly number[] }
interface Training {
  readonly forward: Run;
  readonly backward: Run;
  readonly nodeInputs: readonly string[];
  readonly grads: ReadonlySet<string>;
  readonly saved: readonly string[];
  readonly userIndex: readonly number[];
}
type Entry =
  | { readonly kind: 'eager'; readonly guards: GuardSet; readonly inputs: string; readonly reason: string }
  | { readonly kind: 'graph'; readonly guards: GuardSet; readonly inputs: string; readonly capture: Capture; inference?: Bound; readonly training?: Training; readonly nodes: number };

/** The compile state of one model or function: its cache, symbolic dims and history. */
export class Compiler {
  private readonly cache = new GuardedCache<Entry>(64);
  private readonly byKey = new Map<string, Entry[]>();
  private readonly all: Entry[] = [];
  private readonly dynamic = new Set<string>();
  private readonly sizes = new Map<string, number>();
  private readonly recompiles: string[] = [];
  private compiles = 0;
  private rebinds = 0;
  private gaveUp = false;
  private scriptable = true;
  private lastKey: string | undefined;

  constructor(private readonly target: Target, private readonly opts: CompileOptions, private readonly eager: (args: unknown[]) => unknown) {
    if (opts.mode && opts.mode !== 'default') {
      throw new Error(`jit.compile: mode '${opts.mode}' is not available yet (buffer reuse / kernel autotuning are not implemented); use mode 'default'`);
    }
    if (opts.backend && opts.backend !== 'kiln' && opts.backend !== 'eager') throw new Error(`jit.compile: unknown backend '${String(opts.backend)}'; use 'kiln' or 'eager'`);
  }

  call(args: unknown[]): unknown {
    if (this.opts.backend === 'eager' || tracer.traceHooks.listener) return this.eager(args); // inside jit.trace: record the eager ops
    let key = this.keyOf(args);
    let e = this.cache.get(key);
    if (!e) {
      if (this.gaveUp) return this.eager(args);
      const reason = this.missReason(key, args);
      key = this.keyOf(args); // automatic dynamic may have made a dim symbolic
      e = this.cache.get(key);
      if (!e) {
        if (this.compiles > 0) {
          if (this.compiles > (this.opts.recompileLimit ?? 8)) {
            this.gaveUp = true;
            console.warn(`jit.compile(${this.name}): recompiled ${this.compiles - 1} times (limit ${this.opts.recompileLimit ?? 8}); the guard that kept failing: ${reason}. ` +
              'Running eagerly from now on; keep that value fixed, or raise recompileLimit.');
            return this.eager(args);
          }
          this.recompiles.push(reason);
        }
        e = this.compile(key, args);
      }
    }
    this.lastKey = key;
    if (e.kind === 'eager') return this.eager(args);
    if (e.training) return this.runTraining(e.capture, e.training, args);
    return this.runInference(e, args);
  }

  /** Whether a compiled graph's guards hold for `args` (the check every call makes first; nothing is compiled). */
  guardsHold(args: readonly unknown[]): boolean {
    const e = this.cache.get(this.keyOf(args));
    return !!e && e.kind === 'graph';
  }

  explain(): CompileExplanation {
    return {
      graphs: this.all.flatMap((e) => (e.kind === 'graph' ? [{
        inputs: e.inputs, via: e.capture.via, training: !!e.training, nodes: e.nodes,
        guards: [`inputs ${e.inputs}`, ...e.guards.guards.map((g) => g.attribute ?? 'a module attribute')],
      }] : [])),
      recompiles: [...this.recompiles],
      graphBreaks: this.all.flatMap((e) => (e.kind === 'eager' ? [{ inputs: e.inputs, reason: e.reason }] : hostCalls(e.capture.graph).map((b) => ({ inputs: e.inputs, ...b })))),
      compiles: this.compiles,
      rebinds: this.rebinds,
      eagerFallback: this.gaveUp,
    };
  }

  private get name(): string {
    return this.target.kind === 'module' ? this.target.module.constructor.name : this.target.fn.name || 'function';
  }

  /** Input structure, dtypes, shapes (symbolic dims as `?`), grad mode; numbers by kind (by value when traced). */
  private keyOf(args: readonly unknown[]): string {
    const grad = isGradEnabled();
    let k = grad ? 'g' : 'n';
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      if (a instanceof Tensor) {
        k += `|${a.dtype}${a.requiresGrad ? '*' : ''}[`;
        for (let d = 0; d < a.shape.length; d++) k += `${d ? ',' : ''}${!grad && (this.opts.dynamic === true || this.dynamic.has(`${i}:${d}`)) ? '?' : a.shape[d]}`;
        k += ']';
      } else if (typeof a === 'number' && this.scriptable) k += Number.isInteger(a) ? '|int' : '|float';
      else if (typeof a === 'boolean' && this.scriptable) k += '|bool';
      else k += `|${JSON.stringify(a) ?? typeof a}`;
    }
    return k;
  }

  /** Why `key` missed: a guard of an entry for it failed, or a dim changed (then maybe made symbolic), or first call. */
  private missReason(key: string, args: readonly unknown[]): string {
    const grad = isGradEnabled();
    for (const e of this.byKey.get(key) ?? []) {
      const f = e.guards.failure();
      if (f) return describeFailure(f);
    }
    if (!this.compiles) return 'first call';
    const changed: string[] = [];
    args.forEach((a, i) => {
      if (!(a instanceof Tensor)) return;
      a.shape.forEach((size, d) => {
        const k = `${i}:${d}`, was = this.sizes.get(k);
        if (was === undefined || was === size || (this.dynamic.has(k) && !grad)) return;
        const symbolic = this.opts.dynamic !== false && !grad;
        if (symbolic) this.dynamic.add(k);
        changed.push(`argument ${i} dim ${d} changed from ${was} to ${size}${symbolic ? ' (now symbolic)' : grad ? ' (graphs for training keep exact shapes)' : ''}`);
      });
    });
    if (changed.length) return changed.join('; ');
    if (this.lastKey && this.lastKey[0] !== key[0]) return `grad mode changed (${key[0] === 'g' ? 'gradients now enabled' : 'now under noGrad'})`;
    return `the inputs changed (${this.lastKey?.slice(2) ?? ''} → ${key.slice(2)})`;
  }

  private compile(key: string, args: unknown[]): Entry {
    this.compiles++;
    args.forEach((a, i) => { if (a instanceof Tensor) a.shape.forEach((s, d) => { if (!this.sizes.has(`${i}:${d}`)) this.sizes.set(`${i}:${d}`, s); }); });
    // Training graphs keep exact shapes: gradient rules compute counts (mean, batch norm) from sizes.
    const dynamic = isGradEnabled() ? new Set<string>()
      : this.opts.dynamic === true ? new Set(args.flatMap((a, i) => (a instanceof Tensor ? a.shape.map((_, d) => `${i}:${d}`) : []))) : this.dynamic;
    const inputs = key.split('|').slice(1).join(', ');
    let entry: Entry;
    let capture: Capture | undefined;
    const why: string[] = [];
    try {
      capture = captureWithScript(this.target, args, dynamic);
    } catch (e) {
      why.push(`the scripter: ${message(e)}`);
      this.scriptable = false;
      try {
        const restore = this.target.kind === 'module' ? tracer.snapshotState(this.target.module) : () => {};
        try { capture = captureWithTrace(this.target, args, dynamic); } finally { restore(); }
      } catch (e2) {
        why.push(`the tracer: ${message(e2)}`);
      }
    }
    if (!capture) entry = this.graphBreak(inputs, `cannot capture ${this.name}.forward: ${why.join('; ')}`);
    else {
      const calls = hostCalls(capture.graph);
      if (this.opts.fullgraph && calls.length) throw new Error(`jit.compile(${this.name}, { fullgraph: true }): ${calls[0].where ? `${calls[0].where}: ` : ''}${calls[0].reason}`);
      const wrt = new Set([...capture.sources].flatMap(([name, s]) => (sourceValue(s, args) instanceof Tensor && (sourceValue(s, args) as Tensor).requiresGrad ? [name] : [])));
      if (isGradEnabled() && wrt.size) {
        try {
          entry = { kind: 'graph', guards: capture.guards, inputs, capture, training: this.training(capture, wrt), nodes: capture.graph.body.nodes.length };
        } catch (e) {
          if (!(e instanceof AutodiffUnsupported)) throw e;
          entry = this.graphBreak(inputs, `training through ${this.name}: ${e.message}`, capture.guards);
        }
      } else {
        const inference = this.bind(capture);
        entry = { kind: 'graph', guards: capture.guards, inputs, capture, inference, nodes: inference.model.graph.body.nodes.length };
      }
    }
    key = this.keyOf(args); // numbers are keyed by value once the scripter failed (a trace bakes them in)
    this.cache.set(key, entry.guards, entry);
    this.byKey.set(key, [entry, ...(this.byKey.get(key) ?? [])]);
    this.all.push(entry);
    return entry;
  }

  private graphBreak(inputs: string, reason: string, guards = GuardSet.empty): Entry {
    if (this.opts.fullgraph) throw new Error(`jit.compile(${this.name}, { fullgraph: true }): ${reason}`);
    console.warn(`jit.compile(${this.name}): graph break, running eagerly: ${reason}`);
    return { kind: 'eager', guards, inputs, reason };
  }

  private training(c: Capture, wrt: ReadonlySet<string>): Training {
    const stateNames = new Set(c.state.map((s) => s.output));
    const userIndex = c.graph.outputs.flatMap((o, k) => (stateNames.has(o.name) ? [] : [k]));
    for (const k of userIndex) {
      if (c.graph.outputs[k].value.type.kind !== 'tensor') throw new AutodiffUnsupported(`output '${c.graph.outputs[k].name}' is not a tensor (a tuple or a number)`);
    }
    const j = differentiate(c.graph, wrt, userIndex);
    const fwd = runPipeline(j.forward, { passes: PASSES }).graph;
    const bwd = runPipeline(j.backward, { passes: PASSES }).graph;
    const nodeInputs = [...new Set([...j.gradInputs, ...j.savedInputs])];
    return { forward: run(fwd, c), backward: run(bwd, c), nodeInputs, grads: new Set(j.gradInputs), saved: j.savedValues, userIndex };
  }

  /**
   * The inference model: the parameters' current values bound into the graph as params (the
   * runtime keeps packed weights for those), frozen and fully optimized (-O2: BN folding,
   * fusion) when every module is in eval mode. Buffers the graph updates stay inputs.
   */
  private bind(c: Capture): Bound {
    const updated = new Set(c.state.map((s) => s.param));
    const tensors = new Map(c.graph.tensors);
    const watched: Tensor[] = [];
    const inputs = c.graph.inputs.map((i) => {
      const s = c.sources.get(i.name)!;
      if (s.kind !== 'tensor' || updated.has(i.name)) return i;
      tensors.set(i.name, { dtype: s.tensor.dtype, shape: [...s.tensor.shape], data: s.tensor.contiguous().data.slice(0, s.tensor.numel) });
      watched.push(s.tensor);
      return { ...i, kind: 'param' as const };
    });
    const g = new Graph(c.graph.name, inputs, c.graph.body, c.graph.outputs, tensors, c.graph.metadata);
    const evalMode = this.target.kind === 'module' && this.target.module.modules().every((m) => !m.training) && !c.state.length;
    const r = runPipeline(g, evalMode ? { level: 2 } : { passes: PASSES });
    return { model: run(r.graph, c).model, watched, versions: watched.map((t) => t._version) };
  }

  private runInference(e: Extract<Entry, { kind: 'graph' }>, args: readonly unknown[]): unknown {
    const c = e.capture;
    let r = e.inference!;
    // A parameter written in place since binding (an optimizer step, loadStateDict): bind the new values.
    for (let k = 0; k < r.watched.length; k++) {
      if (r.watched[k]._version !== r.versions[k]) { r = e.inference = this.bind(c); this.rebinds++; break; }
    }
    const outs = r.model.runSync(r.model.inputs.map((io) => sourceValue(c.sources.get(io.name)!, args)));
    return c.rebuild(this.split(c, r.model, outs).user);
  }

  /** The user outputs as tensors (buffer updates written back into the module's buffers), and the rest by name. */
  private split(c: Capture, model: Model, outs: Output[]): { user: Tensor[]; byName: Map<string, Tensor> } {
    const user: Tensor[] = [];
    const byName = new Map<string, Tensor>();
    const state = new Map(c.state.map((s) => [s.output, s.param]));
    model.outputs.forEach((io, k) => {
      const t = toTensor(outs[k]);
      const param = state.get(io.name);
      if (param !== undefined) {
        const s = c.sources.get(param);
        if (s?.kind === 'tensor') s.tensor._storage.data.set(outs[k].data);
      } else if (io.name.startsWith(SAVED_PREFIX)) byName.set(io.name, t);
      else user.push(t);
    });
    return { user, byName };
  }

  private runTraining(c: Capture, t: Training, args: readonly unknown[]): unknown {
    const fm = t.forward.model;
    const value = (name: string) => sourceValue(c.sources.get(name)!, args);
    const outs = fm.runSync(fm.inputs.map((io) => value(io.name)));
    const { user, byName } = this.split(c, fm, outs);
    const ins = t.nodeInputs.map((n) => asTensor(value(n)));
    const saved = t.saved.map((n) => byName.get(n)!);
    const all = [...ins, ...saved];
    const edges = all.map((x, i) => (i < ins.length && t.grads.has(t.nodeInputs[i]) && x.requiresGrad ? (x.gradFn ? { node: x.gradFn, index: x.outputIndex } : { leaf: x }) : null));
    if (!edges.some((e) => e)) return c.rebuild(user);
    const shapes = user.map((u) => u.shape);
    const bm = t.backward.model;
    const def = {
      name: `compiled_${c.graph.name}`,
      grad: { saveInputs: all.map((_, i) => i), rule: () => { throw new Error('jit.compile: this node runs its backward graph (backwardFn)'); } },
    };
    const outsOf = user.map((u) => u.detach());
    const node = new autograd.Node(def, {}, edges as never, all.map(typeOf), outsOf.map(typeOf), all, outsOf);
    node.backwardFn = (gradOutputs, kept) => {
      if (isGradEnabled()) {
        throw new Error(`jit.compile(${this.name}): higher-order gradients (createGraph) through a compiled graph are not supported; call the original model's forward for them`);
      }
      const inputs = bm.inputs.map((io): InputValue => {
        if (io.name.startsWith(GRAD_PREFIX)) {
          const j = t.userIndex.indexOf(Number(io.name.slice(GRAD_PREFIX.length)));
          return gradOutputs[j] ?? zeros(shapes[j]);
        }
        const s = t.saved.indexOf(io.name);
        return kept[s >= 0 ? ins.length + s : t.nodeInputs.indexOf(io.name)]!;
      });
      const res: (Tensor | null)[] = all.map(() => null);
      const got = bm.runSync(inputs);
      bm.outputs.forEach((io, k) => { res[t.nodeInputs.indexOf(io.name.slice(GRAD_PREFIX.length))] = toTensor(got[k]); });
      return res;
    };
    outsOf.forEach((o, i) => { if (o.dtype === 'float32') o._setGradFn(node, i); });
    return c.rebuild(outsOf);
  }
}

/** The graph's calls back into JavaScript (@jit.ignore methods): graph breaks inside a graph. */
function hostCalls(g: Graph): { reason: string; where?: string }[] {
  return [...walkNodes(g.body)].filter((n) => n.op === 'host_call').map((n) => ({
    reason: `the @jit.ignore method ${String(n.attrs.name)} runs eagerly between the compiled parts (a host call)`,
    ...(n.meta.loc ? { where: n.meta.loc } : {}),
  }));
}

function run(graph: Capture['graph'], c: Capture): Run {
  return { model: createModel(graph, { hostFunctions: c.hostFunctions, generator: defaultGenerator }) };
}

function sourceValue(s: InputSource, args: readonly unknown[]): InputValue {
  return s.kind === 'tensor' ? s.tensor : scalarInput(args[s.index]);
}

function asTensor(v: InputValue): Tensor {
  if (v instanceof Tensor) return v;
  if (typeof v === 'object' && v && 'data' in v) return toTensor({ name: '', data: v.data, shape: [...v.shape], dtype: v.dtype } as Output);
  throw new Error('jit.compile: a graph input is not a tensor');
}

function typeOf(t: Tensor): { dtype: Tensor['dtype']; shape: number[] } {
  return { dtype: t.dtype, shape: [...t.shape] };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A module compiled by jit.compile: forward runs the compiled graphs; the original is `_orig_mod` (its parameters are these). */
export class CompiledModel extends nn.Module {
  readonly #compiler: Compiler;
  constructor(readonly _orig_mod: nn.Module, opts: CompileOptions) {
    super();
    this.#compiler = new Compiler({ kind: 'module', module: _orig_mod }, opts, (args) => _orig_mod.forward(...args));
  }
  forward(...args: unknown[]): any { return this.#compiler.call(args); }
  /** The graphs, their guards, why each recompilation happened and the graph breaks. */
  explain(): CompileExplanation { return this.#compiler.explain(); }
  /** Whether a compiled graph's guards hold for these arguments: the check every call makes first (to measure its cost). */
  guardsHold(...args: unknown[]): boolean { return this.#compiler.guardsHold(args); }
}

/** A function compiled by jit.compile: same call signature, plus explain(). */
export type CompiledFunction<F extends (...args: any[]) => any> = F & { explain(): CompileExplanation };

/**
 * Compiles a module or a function of tensors (PyTorch's torch.compile): graphs are captured on
 * first use per input signature, optimized, and run in the runtime, for inference and training.
 * @example
 * const fast = jit.compile(model);
 * const loss = F.crossEntropy(fast.forward(x), y);
 * loss.backward(); opt.step();   // gradients reach model's own parameters
 */
export function compile<M extends nn.Module>(target: M, opts?: CompileOptions): CompiledModel;
export function compile<F extends (...args: any[]) => any>(target: F, opts?: CompileOptions): CompiledFunction<F>;
export function compile(target: nn.Module | ((...args: any[]) => any), opts: CompileOptions = {}): CompiledModel | CompiledFunction<(...args: any[]) => any> {
  if (target instanceof nn.Module) return new CompiledModel(target, opts);
  if (typeof target !== 'function') throw new Error(`jit.compile: expected an nn.Module instance or a function, got ${typeof target}`);
  const fn = target;
  const compiler = new Compiler({ kind: 'function', fn }, opts, (args) => fn(...args));
  return Object.assign((...args: unknown[]) => compiler.call(args), { explain: () => compiler.explain() });
}
