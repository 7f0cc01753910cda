// The eager side of jit.script: adapts an nn.Module to the compiler's ScriptableModule and
// implements ScriptHost.traceCall by tracing one eager call (a tensor method, a library
// function, a built-in layer) on example tensors whose symbolic dims are varied by the tracer.
// Invariant: compiling never touches the global random generator (example data comes from a
// private one, and a call that draws — rand, dropout — runs between a save and a restore of its
// state) nor a module's state (buffers a call updates in place, e.g. BatchNorm's running
// statistics in training mode, are restored), and a call whose trace is not shape-generic is
// reported through `warnings`, never silently baked in.

import { nn, noGrad, Tensor, trace as tracer } from '@kiln/core';
import * as core from '@kiln/core';
import type { CallResult, MethodMark, MethodOwner, ProbeResult, ScriptField, ScriptHost, ScriptableModule, TraceArg, TraceInput, TraceTarget, TracedCall } from '@kiln/compiler';
import { evalDim, type Graph, type TypedArray } from '@kiln/ir-spec';
import { GuardError, TracedModule } from './traced-module.js';
import { OptimizedModule } from './optimize.js';

/** Methods marked by @jit.ignore / @jit.unused / @jit.export (the original functions). */
export const methodMarks = new WeakMap<Function, Exclude<MethodMark, undefined>>();
/** Wrappers the decorators installed, mapped to the functions they replaced. */
export const wrapped = new WeakMap<Function, Function>();
/** The `.ts` file of each decorated class (found from the decorator call's stack). */
export const classFiles = new WeakMap<Function, string>();

const LIBRARY = new Set<unknown>([...Object.values(nn as Record<string, unknown>), ...Object.values(core.quantization as Record<string, unknown>)]
  .filter((v) => typeof v === 'function'));

/** The library class (nn.Module, a built-in layer) whose prototype defines method `name` of `obj`, if any. */
export function libraryOwner(obj: object, name: string): string | undefined {
  for (let p: object | null = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    if (!Object.prototype.hasOwnProperty.call(p, name)) continue;
    const owner = (p as { constructor?: unknown }).constructor;
    return LIBRARY.has(owner) ? (owner as Function).name : undefined;
  }
  return undefined;
}

/** The function `name` resolves to on `obj`'s prototype chain, skipping decorator wrappers. */
export function originalMethod(obj: object, name: string): Function | undefined {
  for (let p: object | null = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const d = Object.getOwnPropertyDescriptor(p, name);
    if (d && typeof d.value === 'function') return wrapped.get(d.value) ?? d.value;
  }
  return undefined;
}

function sourceFileOf(m: object): string | undefined {
  for (let c: Function | null = m.constructor; c && c !== Object; c = Object.getPrototypeOf(c) as Function | null) {
    const f = classFiles.get(c);
    if (f) return f;
  }
  return undefined;
}

class ModuleAdapter implements ScriptableModule {
  constructor(readonly module: nn.Module, private readonly adapters: Adapters, readonly sourceFile: string | undefined) {}

  get className(): string { return this.module.constructor.name; }
  get training(): boolean { return this.module.training; }
  get kind(): ScriptableModule['kind'] {
    if (this.module instanceof nn.Sequential) return 'sequential';
    if (this.module instanceof nn.ModuleList) return 'list';
    if (this.module instanceof nn.ModuleDict) return 'dict';
    return LIBRARY.has(this.module.constructor) ? 'library' : 'user';
  }

  field(name: string): ScriptField | undefined {
    if (!Object.prototype.hasOwnProperty.call(this.module, name)) return undefined;
    return this.convert(Reflect.get(this.module, name));
  }

  private convert(v: unknown): ScriptField | undefined {
    if (v instanceof Tensor) return { kind: 'tensor', tensor: { dtype: v.dtype, shape: [...v.shape], data: v.data.slice(0, v.numel()) as TypedArray } };
    if (v instanceof TracedModule || v instanceof OptimizedModule) return { kind: 'module', module: this.adapters.ofTraced(v) };
    if (v instanceof nn.Module) return { kind: 'module', module: this.adapters.of(v) };
    if (Array.isArray(v)) {
      const items = v.map((x) => this.convert(x));
      return items.every((x): x is ScriptField => !!x) ? { kind: 'list', items } : undefined;
    }
    if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return { kind: 'static', value: v };
    return undefined;
  }

  items(): readonly ScriptableModule[] { return this.module.children().map((m) => this.adapters.of(m)); }
  itemKeys(): readonly string[] { return this.module.namedChildren().map(([k]) => k); }

  namedChildren(): readonly (readonly [string, ScriptableModule])[] {
    return this.module.namedChildren().map(([k, m]) => [k, this.adapters.of(m)] as const);
  }

  keys(): readonly string[] | undefined { return this.module instanceof nn.ModuleDict ? this.module.keys() : undefined; }

  methodOwner(name: string, below?: string): MethodOwner | undefined {
    let p: object | null = Object.getPrototypeOf(this.module);
    if (below !== undefined) {
      while (p && p !== Object.prototype && p.constructor.name !== below) p = Object.getPrototypeOf(p);
      if (!p || p === Object.prototype) return undefined;
      p = Object.getPrototypeOf(p);
    }
    for (; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      const d = Object.getOwnPropertyDescriptor(p, name);
      if (!d || typeof d.value !== 'function') continue;
      const fn: Function = wrapped.get(d.value) ?? d.value;
      return { className: p.constructor.name, source: Function.prototype.toString.call(fn), library: p.constructor === nn.Module || LIBRARY.has(p.constructor) };
    }
    return undefined;
  }

  methodSource(name: string): string | undefined {
    const fn = originalMethod(this.module, name);
    return fn ? Function.prototype.toString.call(fn) : undefined;
  }

  methodMark(name: string): MethodMark {
    const fn = originalMethod(this.module, name);
    return fn ? methodMarks.get(fn) : undefined;
  }

  libraryOwner(name: string): string | undefined { return libraryOwner(this.module, name); }
}

/** A jit.trace result used as a submodule: its graph is inlined (the hybrid mode). */
class TracedAdapter implements ScriptableModule {
  readonly kind = 'graph' as const;
  readonly training = false;
  constructor(private readonly traced: TracedModule | OptimizedModule) {}
  get className(): string { return `TracedModule(${this.traced.graph.name})`; }
  /** The graph to inline; a GuardError when an attribute it was specialized on changed since. */
  graph(): Graph {
    const failure = this.traced.current.guards.failure();
    if (failure) {
      throw new GuardError(`the compiled submodule @${this.traced.graph.name} was recorded when ${failure.attribute} was ${failure.was}; it is now ${failure.now}, ` +
        'and its graph does not follow it. Trace (and optimize) it again after changing it.', failure.attribute);
    }
    return this.traced.graph;
  }
  field(): undefined { return undefined; }
  items(): readonly ScriptableModule[] { return []; }
  itemKeys(): readonly string[] { return []; }
  methodSource(): undefined { return undefined; }
  methodMark(): MethodMark { return undefined; }
}

/** The nn.Module behind a scripter's view of it (undefined for a traced submodule, whose graph is fixed). */
export function moduleOfAdapter(m: ScriptableModule): nn.Module | undefined {
  return m instanceof ModuleAdapter ? m.module : undefined;
}

/** One adapter per module instance, so the compiler can compare modules by identity. */
export class Adapters {
  private readonly map = new Map<nn.Module, ModuleAdapter>();
  private readonly traced = new Map<TracedModule | OptimizedModule, TracedAdapter>();
  constructor(private readonly sourceFile?: string) {}

  ofTraced(t: TracedModule | OptimizedModule): TracedAdapter {
    let a = this.traced.get(t);
    if (!a) { a = new TracedAdapter(t); this.traced.set(t, a); }
    return a;
  }

  of(m: nn.Module): ModuleAdapter {
    let a = this.map.get(m);
    if (!a) {
      a = new ModuleAdapter(m, this, this.map.size === 0 && this.sourceFile ? this.sourceFile : sourceFileOf(m));
      this.map.set(m, a);
    }
    return a;
  }
}

/** Method `name` as class `className` on `m`'s prototype chain defines it (what `super.name` calls). */
function methodOfClass(m: nn.Module, className: string, name: string): unknown {
  for (let p: object | null = Object.getPrototypeOf(m); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    if (p.constructor.name === className) return Object.getOwnPropertyDescriptor(p, name)?.value;
  }
  return undefined;
}

/** Period of the example data: values repeat after this many elements (a prime, so no tensor axis lines up with it). */
const EXAMPLE_PERIOD = 65_537;

/** Deterministic example data (a private generator: the global one must not move). */
function exampleTensor(inp: TraceInput, salt: number): Tensor {
  const n = inp.shape.reduce((a, d) => a * d, 1);
  let data: TypedArray;
  if (inp.dtype === 'float32') {
    // Pseudo-random values in [-1, 1) for the first period, then copies of it: scripting a
    // ResNet-18 fills 46M example elements, and drawing each one (the generator's state as a
    // captured variable, through TypedArray.from) was a third of its time.
    const f = new Float32Array(n);
    let s = (0x9e3779b9 ^ (salt * 7919)) >>> 0;
    const p = Math.min(n, EXAMPLE_PERIOD);
    for (let i = 0; i < p; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      f[i] = s / 2 ** 31 - 1;
    }
    for (let k = p; k < n; k *= 2) f.copyWithin(k, 0, Math.min(k, n - k));
    data = f;
  } else if (inp.dtype === 'int32') {
    data = new Int32Array(n);
  } else {
    const b = new Uint8Array(n);
    for (let i = 1; i < n; i += 2) b[i] = 1;
    data = b;
  }
  return new Tensor({ data, version: 0 }, [...inp.shape], inp.dtype);
}

function resolve(name: string): unknown {
  let v: unknown = core;
  for (const part of name.split('.')) {
    if (!v || (typeof v !== 'object' && typeof v !== 'function') || !Object.prototype.hasOwnProperty.call(v, part)) return undefined;
    v = Reflect.get(v, part);
  }
  return v;
}

function resolveFunction(name: string): Function | undefined {
  const v = resolve(name);
  if (typeof v !== 'function' || /^class[\s{]/.test(Function.prototype.toString.call(v))) return undefined;
  return v;
}

/**
 * Runs `fn` (an eager call on example data) leaving kiln's global generator and the buffers of
 * `module` and its submodules as they were: compiling must not draw random numbers a user's
 * next eager call would have drawn, nor move BatchNorm running statistics with example data.
 */
function untouched<R>(module: nn.Module | undefined, fn: () => R): R {
  const restore = tracer.snapshotState(module);
  try {
    return fn();
  } finally {
    restore();
  }
}

/** The host jit.script compiles against: the eager library, reached by tracing single calls. */
export function createScriptHost(adapters: Adapters): ScriptHost {
  const moduleOf = (m: ScriptableModule): nn.Module => {
    if (!(m instanceof ModuleAdapter)) throw new Error('a module from another scripting run');
    return m.module;
  };
  const invoke = (target: TraceTarget, inputs: readonly TraceInput[], ts: Tensor[], args: readonly TraceArg[]): unknown => {
    const sizes = new Map<string, number>();
    inputs.forEach((inp, i) => { for (const [k, sym] of Object.entries(inp.axes)) sizes.set(sym, ts[i].shape[Number(k)]); });
    const build = (a: TraceArg): unknown => {
      if (a.kind === 'tensor') return ts[a.index];
      if (a.kind === 'static') return a.value;
      if (a.kind === 'size') {
        const n = evalDim(a.dim, sizes);
        if (n === undefined) throw new Error(`the size '${a.dim}' is not a dim of the call's tensor inputs`);
        return n;
      }
      if (a.kind === 'list') return a.items.map(build);
      return Object.fromEntries(Object.entries(a.entries).map(([k, v]) => [k, build(v)]));
    };
    const vals = args.map(build);
    if (target.kind === 'method') {
      const [self, ...rest] = vals;
      const fn = self instanceof Tensor ? Reflect.get(self, target.name) : undefined;
      if (typeof fn !== 'function' || target.name.startsWith('_') || target.name === 'constructor') throw new Error(`Tensor has no method '${target.name}'`);
      return (fn as Function).apply(self, rest);
    }
    if (target.kind === 'function') {
      const fn = resolveFunction(target.name);
      if (!fn) throw new Error(`'${target.name}' is not a Kiln function`);
      return fn(...vals);
    }
    const m = moduleOf(target.module);
    const fn = target.base === undefined ? Reflect.get(m, target.method) : methodOfClass(m, target.base, target.method);
    if (typeof fn !== 'function') throw new Error(`${m.constructor.name} has no method '${target.method}'`);
    return (fn as Function).apply(m, vals);
  };
  return {
    hasFunction: (name) => !!resolveFunction(name) || name === 'F',
    probeMethod(module, method, inputs, args): ProbeResult {
      const target: TraceTarget = { kind: 'module', module, method };
      const run = (bump: number) => {
        const ts = inputs.map((inp, i) => exampleTensor({ ...inp, shape: inp.shape.map((d, k) => (k in inp.axes ? d + bump : d)) }, i));
        return untouched(moduleOf(module), () => noGrad(() => invoke(target, inputs, ts, args)));
      };
      const dynamic = inputs.some((inp) => Object.keys(inp.axes).length);
      const base = run(0);
      return probed(base, dynamic ? run(1) : base, '');
    },
    traceCall(target, inputs, args): TracedCall {
      const examples = inputs.map((inp, i) => exampleTensor(inp, i));
      let result: unknown;
      const flat: Tensor[] = [];
      const structure = (v: unknown): CallResult => {
        if (v instanceof Tensor) { flat.push(v); return { kind: 'tensor', output: flat.length - 1 }; }
        if (Array.isArray(v)) return { kind: 'list', items: v.map(structure) };
        if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return { kind: 'static', value: v };
        throw new Error(`it returned ${typeof v === 'object' ? 'an object' : typeof v}; jit.script handles tensors, arrays of them, numbers, booleans and strings`);
      };
      let spec: CallResult | undefined;
      const model: tracer.TraceableModule = {
        forward: (...ts: Tensor[]) => {
          flat.length = 0;
          result = invoke(target, inputs, ts, args);
          spec = structure(result);
          return [...flat];
        },
        ...(target.kind === 'module' ? {
          namedParameters: () => moduleOf(target.module).namedParameters(),
          namedBuffers: () => moduleOf(target.module).namedBuffers(),
        } : {}),
      };
      const dynamicAxes: Record<number, Record<number, string>> = {};
      inputs.forEach((inp, i) => { if (Object.keys(inp.axes).length) dynamicAxes[i] = { ...inp.axes }; });
      const owner = target.kind === 'module' ? moduleOf(target.module) : undefined;
      const r = untouched(owner, () => noGrad(() => tracer.traceModule(model, examples, { dynamicAxes, inputNames: inputs.map((_, i) => `in${i}`), name: 'call' })));
      const first = spec!;
      // Numbers a call returns must not depend on the dynamic sizes (they are folded).
      const warnings = r.warnings.map((w) => withoutScriptAdvice(w.message));
      if (hasStatic(first) && Object.keys(dynamicAxes).length) {
        const bumped = inputs.map((inp, i) => exampleTensor({ ...inp, shape: inp.shape.map((d, k) => (k in inp.axes ? d + 1 : d)) }, i));
        const again = untouched(owner, () => noGrad(() => { flat.length = 0; return structure(invoke(target, inputs, bumped, args)); }));
        if (JSON.stringify(again) !== JSON.stringify(first)) warnings.push('it returns a number that depends on a dynamic size, which would be fixed at compile time.');
      }
      return { graph: r.graph, result: first, warnings };
    },
  };
}

/**
 * A trace warning as jit.script reports it: the tracer's advice to use jit.script is dropped
 * (this is jit.script; the scripter adds what to do instead).
 */
export function withoutScriptAdvice(message: string): string {
  return message
    .replace(' Use jit.script for this module, or do not declare this axis dynamic.', '')
    .replace(' Use jit.script for this module.', '')
    .replace(', or use jit.script.', '.')
    .replace(', or compile this module with jit.script, which keeps data-dependent control flow.', '.');
}

/** The types of a probed method's results (`a` at the example sizes, `b` with the sizes bumped). */
function probed(a: unknown, b: unknown, where: string): ProbeResult {
  const at = where ? ` at ${where}` : '';
  if (a === undefined || a === null) return { kind: 'none' };
  if (a instanceof Tensor) {
    if (!(b instanceof Tensor) || b.ndim !== a.ndim || b.dtype !== a.dtype) throw new Error(`it returns a tensor${at} whose rank or dtype changes with the input sizes`);
    return { kind: 'tensor', dtype: a.dtype, shape: [...a.shape], bumped: [...b.shape] };
  }
  if (typeof a === 'number') return { kind: 'number' };
  if (typeof a === 'boolean') return { kind: 'boolean' };
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || b.length !== a.length) throw new Error(`it returns an array${at} whose length changes with the input sizes`);
    return { kind: 'list', items: a.map((x, i) => probed(x, b[i], `${where}[${i}]`)) };
  }
  throw new Error(`it returns ${typeof a === 'object' ? 'an object' : typeof a}${at}; a method called from compiled code may return tensors, numbers, booleans, arrays of them or nothing`);
}

function hasStatic(r: CallResult): boolean {
  return r.kind === 'static' ? typeof r.value === 'number' : r.kind === 'list' && r.items.some(hasStatic);
}
