// jit.compile: Kiln's torch.compile. The first call of a signature captures a graph
// (compile-capture.ts), optimizes it with the compiler's passes and runs it in the runtime; calls
// with the same input structure, dtypes and shapes whose guards hold reuse it. With gradients
// needed, the graph is split into a forward and a backward graph derived from the op entries'
// gradient rules (compile-autodiff.ts), hooked into eager autograd as one node.
// Invariant: a call returns what the eager module returns now (same values within float
// rounding, same buffer updates and random draws) or runs the module eagerly; parameters are
// read from the live module on every call, so optimizers and loadStateDict are seen.

import { amp, isGradEnabled, nn, Tensor, trace as tracer } from '@kiln/core';
import { ScriptError } from '@kiln/compiler';
import { describeFailure, GuardedCache, GuardSet } from './guards.js';
import { captureWithScript, captureWithTrace, type Capture, type Target } from './compile-capture.js';
import { AutodiffUnsupported } from './compile-autodiff.js';
import type { AutotuneChoice } from './compile-autotune.js';
import { bindInference, GpuUnsupported, hostCalls, prepareTraining, runInference, runTraining, stale, type Bound, type Placement, type Training } from './compile-run.js';
import { onCpuPlaceholders } from './gpu-capture.js';
import { numbersAsScalars } from './gpu-scalars.js';

export interface CompileOptions {
  /**
   * `'default'`; `'reduce-overhead'`: a call with the last call's signature reuses its graph after
   * checking only its guards (no cache key is built or looked up), and on WebGPU each graph's first
   * run is recorded (pipelines, bind groups, workgroup counts, with its intermediate buffers kept)
   * and replayed by later calls of the same shapes, skipping the executor; `'max-autotune'`: each
   * graph is optimized several ways and the candidate fastest on this device (timed at compile
   * time, cached per device and graph) is kept, as explain() shows (on WebGPU, where timing must
   * await the GPU, the first candidate runs while the candidates are timed in the background,
   * and the fastest takes over once they are: explain() shows `pending` until then).
   */
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
  /**
   * Training graphs: the cheap deterministic values the backward reads (elementwise results,
   * views, batch-norm outputs, computed from values it keeps anyway) are computed again there
   * instead of being held from the forward to the backward, which only ever shrinks what a step
   * holds; results are bit-identical. explain() shows the bytes held and the nodes recomputed.
   * Default false (every value the backward reads is held). On the digits CNN at batch 32: 992 KB
   * → 598 KB held per step, for a step about 3.5 % slower (the batch norms and relus run again).
   */
  readonly recompute?: boolean;
}

/** What compiled.explain() reports. */
export interface CompileExplanation {
  /** `module`: the submodule (dotted path) a graph belongs to, when the parent's forward had a graph break and runs eagerly around it. */
  readonly graphs: readonly {
    readonly module?: string; readonly inputs: string; readonly via: 'script' | 'trace'; readonly training: boolean; readonly nodes: number; readonly guards: readonly string[];
    /** mode 'max-autotune': the candidate kept for each graph run (inference, or forward and backward) and the times measured. */
    readonly autotune?: readonly AutotuneChoice[];
    /** Training graphs: the values a step holds from its forward to its backward (count, bytes) and the forward nodes its backward runs again (`recompute`). */
    readonly saved?: { readonly values: number; readonly bytes?: number; readonly recomputed: number };
  }[];
  /** Why each compilation after the first happened. */
  readonly recompiles: readonly string[];
  /** Code that runs eagerly instead of in a graph, and why. */
  readonly graphBreaks: readonly { readonly module?: string; readonly inputs: string; readonly reason: string; readonly where?: string }[];
  readonly compiles: number;
  readonly mode: 'default' | 'reduce-overhead' | 'max-autotune';
  /** mode 'reduce-overhead': calls that reused the last call's graph on its guards alone. */
  readonly fastCalls: number;
  /** Times an inference graph took new parameter values (written in place since it was bound): no recompilation. */
  readonly rebinds: number;
  /** mode 'reduce-overhead' on WebGPU: graph runs that replayed the graph's recorded dispatches. */
  readonly replays: number;
  /** True once the recompile limit was hit: misses run eagerly. */
  readonly eagerFallback: boolean;
}

type Entry =
  /** `whole`: the forward runs eagerly as it is, its submodules too (tensors on two devices, or a graph WebGPU cannot run). */
  | { readonly kind: 'eager'; readonly guards: GuardSet; readonly inputs: string; readonly reason: string; readonly where?: string; readonly whole?: boolean }
  | { readonly kind: 'graph'; readonly guards: GuardSet; readonly inputs: string; readonly capture: Capture; inference?: Bound; readonly training?: Training; readonly nodes: number; readonly on: Placement };

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
  /** mode 'reduce-overhead': the last call's graph and signature. */
  private last: { readonly entry: Entry; readonly signature: CallSignature; readonly autocast: string } | undefined;
  private fastCalls = 0;
  /** Compilers of the direct submodules, used while forward runs eagerly around a graph break. */
  private readonly parts = new Map<nn.Module, { readonly name: string; readonly compiler: Compiler }>();

  constructor(private readonly target: Target, private readonly opts: CompileOptions, private readonly eager: (args: unknown[]) => unknown) {
    if (opts.mode && !['default', 'reduce-overhead', 'max-autotune'].includes(opts.mode)) {
      throw new Error(`jit.compile: unknown mode '${String(opts.mode)}'; use 'default', 'reduce-overhead' or 'max-autotune'`);
    }
    if (opts.backend && opts.backend !== 'kiln' && opts.backend !== 'eager') throw new Error(`jit.compile: unknown backend '${String(opts.backend)}'; use 'kiln' or 'eager'`);
  }

  call(args: unknown[]): unknown {
    if (this.opts.backend === 'eager' || tracer.traceHooks.listener) return this.eager(args); // inside jit.trace: record the eager ops
    if (this.last && this.last.autocast === autocastKey() && this.last.signature.matches(args) && this.last.entry.guards.holds()) {
      this.fastCalls++;
      return this.runEntry(this.last.entry, args);
    }
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
    if (this.opts.mode === 'reduce-overhead' && e.kind === 'graph') this.last = { entry: e, signature: new CallSignature(args, this.scriptable), autocast: autocastKey() };
    return this.runEntry(e, args);
  }

  private runEntry(e: Entry, args: unknown[]): unknown {
    if (e.kind === 'eager') return e.whole ? this.eager(args) : this.aroundBreak(args);
    if (e.training) {
      const eager = { run: () => this.eager(args), ...(this.target.kind === 'module' ? { module: this.target.module } : {}) };
      return runTraining(e.capture, e.training, args, this.name, this.opts.mode === 'reduce-overhead', eager);
    }
    return this.runInference(e, args);
  }

  /** Whether a compiled graph's guards hold for `args` (the check every call makes first; nothing is compiled). */
  guardsHold(args: readonly unknown[]): boolean {
    const e = this.cache.get(this.keyOf(args));
    return !!e && e.kind === 'graph';
  }

  explain(): CompileExplanation {
    const parts = [...this.parts.values()].map(({ name, compiler }) => ({ name, e: compiler.explain() }));
    const inPart = <T extends { module?: string }>(name: string, x: T): T => ({ ...x, module: x.module ? `${name}.${x.module}` : name });
    return {
      graphs: [...this.all.flatMap((e) => (e.kind === 'graph' ? [{
        inputs: e.inputs, via: e.capture.via, training: !!e.training, nodes: e.nodes,
        guards: [`inputs ${e.inputs}`, ...e.guards.guards.map((g) => g.attribute ?? 'a module attribute')],
        ...(e.training ? { saved: { values: e.training.saved.length, ...(e.training.savedBytes === undefined ? {} : { bytes: e.training.savedBytes }), recomputed: e.training.recomputed } } : {}),
        ...(this.opts.mode === 'max-autotune' ? { autotune: (e.training ? [e.training.forward.autotune, e.training.backward.autotune] : [e.inference?.autotune]).filter((x): x is AutotuneChoice => !!x) } : {}),
      }] : [])), ...parts.flatMap((p) => p.e.graphs.map((g) => inPart(p.name, g)))],
      recompiles: [...this.recompiles],
      graphBreaks: [...this.all.flatMap((e) => (e.kind === 'eager' ? [{ inputs: e.inputs, reason: e.reason, ...(e.where ? { where: e.where } : {}) }] : hostCalls(e.capture.graph).map((b) => ({ inputs: e.inputs, ...b })))),
        ...parts.flatMap((p) => p.e.graphBreaks.map((b) => inPart(p.name, b)))],
      compiles: this.compiles,
      mode: this.opts.mode ?? 'default',
      fastCalls: this.fastCalls,
      rebinds: this.rebinds,
      replays: this.all.reduce((n, e) => n + (e.kind !== 'graph' ? 0 : e.training ? e.training.forward.model.deviceReplays + e.training.backward.model.deviceReplays : e.inference?.model.deviceReplays ?? 0), 0)
        + parts.reduce((n, p) => n + p.e.replays, 0),
      eagerFallback: this.gaveUp,
    };
  }

  private get name(): string {
    return this.target.kind === 'module' ? this.target.module.constructor.name : this.target.fn.name || 'function';
  }

  /** Input structure, dtypes, shapes (symbolic dims as `?`), grad mode, autocast state; numbers by kind (by value when traced). */
  private keyOf(args: readonly unknown[]): string {
    const grad = isGradEnabled();
    let k = grad ? 'g' : 'n';
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      if (a instanceof Tensor) {
        k += `|${a.dtype}${a.requiresGrad ? '*' : ''}${a.device === 'cpu' ? '' : `@${a.device}`}[`;
        for (let d = 0; d < a.shape.length; d++) k += `${d ? ',' : ''}${!grad && (this.opts.dynamic === true || this.dynamic.has(`${i}:${d}`)) ? '?' : a.shape[d]}`;
        k += ']';
      } else if (typeof a === 'number' && this.scriptable) k += Number.isInteger(a) ? '|int' : '|float';
      else if (typeof a === 'boolean' && this.scriptable) k += '|bool';
      else k += `|${JSON.stringify(a) ?? typeof a}`;
    }
    return k + autocastKey();
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
    const was = this.lastKey?.match(AUTOCAST_KEY)?.[1], now = key.match(AUTOCAST_KEY)?.[1];
    if (this.lastKey && was !== now) return `autocast changed (${now ? `now autocast ${now}` : 'now outside autocast'})`;
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
    let where: string | undefined;
    const on = this.placement(args);
    if (typeof on !== 'string') return this.remember(key, this.graphBreak(inputs, `${on.mixed}: a graph runs on one device, so ${this.name}.forward runs eagerly (move the model and its inputs to one device with .to())`, GuardSet.empty, undefined, true));
    // On WebGPU the capture runs on CPU stand-ins of the tensors (it reads only their types; eager values would have to be waited for).
    capture = onCpuPlaceholders(on === 'webgpu' ? this.target : undefined, args, (xs) => {
      try {
        return captureWithScript(this.target, xs, dynamic);
      } catch (e) {
        why.push(`the scripter: ${message(e)}`);
        if (e instanceof ScriptError) where = `${e.file}:${e.line}:${e.col}`;
        this.scriptable = false;
        try {
          const restore = this.target.kind === 'module' ? tracer.snapshotState(this.target.module) : () => {};
          try { return captureWithTrace(this.target, xs, dynamic); } finally { restore(); }
        } catch (e2) {
          why.push(`the tracer: ${message(e2)}`);
          return undefined;
        }
      }
    });
    if (!capture) entry = this.graphBreak(inputs, `cannot capture ${this.name}.forward: ${why.join('; ')}`, GuardSet.empty, where);
    else {
      if (on === 'webgpu') {
        const numbers = new Set([...capture.sources].flatMap(([name, s]) => (s.kind === 'arg' && (typeof args[s.index] === 'number' || typeof args[s.index] === 'boolean') ? [name] : [])));
        capture = { ...capture, graph: numbersAsScalars(capture.graph, numbers) };
      }
      const calls = hostCalls(capture.graph);
      if (this.opts.fullgraph && calls.length) throw new Error(`jit.compile(${this.name}, { fullgraph: true }): ${calls[0].where ? `${calls[0].where}: ` : ''}${calls[0].reason}`);
      const wrt = new Set([...capture.sources].flatMap(([name, s]) => {
        const t = s.kind === 'tensor' ? s.tensor : args[s.index];
        return t instanceof Tensor && t.requiresGrad ? [name] : [];
      }));
      try {
        if (isGradEnabled() && wrt.size) {
          entry = { kind: 'graph', guards: capture.guards, inputs, capture, training: prepareTraining(capture, wrt, this.tuning, args, this.opts.recompute ?? false, on), nodes: capture.graph.body.nodes.length, on };
        } else {
          const inference = this.bind(capture, args, on);
          entry = { kind: 'graph', guards: capture.guards, inputs, capture, inference, nodes: inference.model.graph.body.nodes.length, on };
        }
      } catch (e) {
        if (e instanceof AutodiffUnsupported) entry = this.graphBreak(inputs, `training through ${this.name}: ${e.message}`, capture.guards, e.where);
        else if (e instanceof GpuUnsupported) entry = this.graphBreak(inputs, `on WebGPU: ${e.message}; ${this.name}.forward runs eagerly on the GPU`, capture.guards, e.where, true);
        else throw e;
      }
    }
    return this.remember(this.keyOf(args), entry); // numbers are keyed by value once the scripter failed (a trace bakes them in)
  }

  /** Caches `entry` under `key` (with its guards) and lists it. */
  private remember(key: string, entry: Entry): Entry {
    this.cache.set(key, entry.guards, entry);
    this.byKey.set(key, [entry, ...(this.byKey.get(key) ?? [])]);
    this.all.push(entry);
    return entry;
  }

  private graphBreak(inputs: string, reason: string, guards = GuardSet.empty, where?: string, whole = false): Entry {
    if (this.opts.fullgraph) throw new Error(`jit.compile(${this.name}, { fullgraph: true }): ${where ? `${where}: ` : ''}${reason}`);
    const parts = !whole && this.target.kind === 'module' && this.target.module.namedChildren().length ? '; its submodules run compiled' : '';
    console.warn(`jit.compile(${this.name}): graph break, running forward eagerly${parts}: ${reason}`);
    return { kind: 'eager', guards, inputs, reason, ...(where ? { where } : {}), ...(whole ? { whole } : {}) };
  }

  /**
   * The device the call's tensors (arguments, parameters, buffers) live on, or, when they are on
   * two, the first pair described (0-d CPU tensors go along with GPU ones, as in eager ops).
   */
  private placement(args: readonly unknown[]): Placement | { mixed: string } {
    const named: [string, Tensor][] = args.flatMap((a, i): [string, Tensor][] => (a instanceof Tensor ? [[`argument ${i}`, a]] : []));
    if (this.target.kind === 'module') named.push(...this.target.module.namedParameters(), ...this.target.module.namedBuffers());
    const gpu = named.find(([, t]) => t.device === 'webgpu');
    if (!gpu) return 'cpu';
    const cpu = named.find(([, t]) => t.device === 'cpu' && (t.ndim > 0 || t.requiresGrad));
    return cpu ? { mixed: `${gpu[0]} lives on 'webgpu' but ${cpu[0]} on 'cpu'` } : 'webgpu';
  }

  /**
   * Runs forward eagerly around a graph break, with each direct submodule's forward going
   * through a compiler of its own for the duration of the call (captured, guarded and cached
   * like this one; a submodule that breaks too is split further the same way).
   */
  private aroundBreak(args: unknown[]): unknown {
    if (this.target.kind !== 'module') return this.eager(args);
    const patched: nn.Module[] = [];
    try {
      for (const [name, child] of this.target.module.namedChildren()) {
        if (Object.prototype.hasOwnProperty.call(child, 'forward')) continue; // patched already, or the user's own
        let part = this.parts.get(child);
        if (!part) {
          const forward = child.forward;
          part = { name, compiler: new Compiler({ kind: 'module', module: child }, { ...this.opts, fullgraph: false }, (a) => forward.apply(child, a)) };
          this.parts.set(child, part);
        }
        const compiler = part.compiler;
        Object.defineProperty(child, 'forward', { value: (...a: unknown[]) => compiler.call(a), configurable: true, writable: true, enumerable: false });
        patched.push(child);
      }
      return this.eager(args);
    } finally {
      for (const child of patched) delete (child as { forward?: unknown }).forward;
    }
  }

  /** Binds the parameters' current values again when one was written in place since (an optimizer step, loadStateDict). */
  private runInference(e: Extract<Entry, { kind: 'graph' }>, args: readonly unknown[]): unknown {
    if (stale(e.inference!)) { e.inference = this.bind(e.capture, args, e.on); this.rebinds++; }
    return runInference(e.capture, e.inference!, args, this.opts.mode === 'reduce-overhead');
  }

  private bind(c: Capture, args: readonly unknown[], on: Placement): Bound {
    return bindInference(c, this.target.kind === 'module' && this.target.module.modules().every((m) => !m.training), this.tuning, args, on);
  }

  private get tuning(): 'default' | 'max-autotune' { return this.opts.mode === 'max-autotune' ? 'max-autotune' : 'default'; }
}

/**
 * What keyOf reads of a call, kept to compare the next call with cheaply (mode 'reduce-overhead'):
 * grad mode, tensors' dtype, requiresGrad and exact shape; numbers by kind (by value once traced).
 */
class CallSignature {
  private readonly grad = isGradEnabled();
  private readonly items: readonly unknown[];
  constructor(args: readonly unknown[], private readonly numbersByKind: boolean) {
    this.items = args.map((a) => (a instanceof Tensor ? [a.dtype, a.requiresGrad, ...a.shape] : a));
  }

  matches(args: readonly unknown[]): boolean {
    if (args.length !== this.items.length || isGradEnabled() !== this.grad) return false;
    for (let i = 0; i < args.length; i++) {
      const a = args[i], was = this.items[i];
      if (a instanceof Tensor) {
        if (!Array.isArray(was) || was.length !== a.shape.length + 2 || was[0] !== a.dtype || was[1] !== a.requiresGrad) return false;
        for (let d = 0; d < a.shape.length; d++) if (was[d + 2] !== a.shape[d]) return false;
      } else if (typeof a === 'number' && typeof was === 'number' && this.numbersByKind) {
        if (Number.isInteger(a) !== Number.isInteger(was)) return false;
      } else if (typeof a === 'object' || !Object.is(a, was)) return false;
    }
    return true;
  }
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

const AUTOCAST_KEY = /\|autocast (\w+)$/;
/**
 * The autocast state as the last part of a cache key: a graph captured inside amp.autocast holds
 * its casts, so calls inside and outside autocast (or with another dtype) get their own graphs.
 */
function autocastKey(): string {
  return amp.isAutocastEnabled() ? `|autocast ${amp.getAutocastDType()}` : '';
}
