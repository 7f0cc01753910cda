// What the scripter sees of a model and of the eager library. The compiler never imports the
// eager library (DESIGN.md layers): `packages/kiln/src/jit/script.ts` adapts an nn.Module to
// `ScriptableModule` and implements `ScriptHost.traceCall`, which records one eager call (a
// tensor method, a library function or a built-in layer) into a small graph that the scripter
// inlines. Invariant: everything here is plain data or a callback; no Tensor type appears.

import type { DType, Graph, TypedArray } from '@kiln/ir-spec';

/** A tensor held by a module field (parameter or buffer). */
export interface ScriptTensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: TypedArray;
}

/** What a module field holds, as the scripter needs it. */
export type ScriptField =
  | { readonly kind: 'tensor'; readonly tensor: ScriptTensor }
  | { readonly kind: 'module'; readonly module: ScriptableModule }
  | { readonly kind: 'list'; readonly items: readonly ScriptField[] }
  | { readonly kind: 'static'; readonly value: number | boolean | string | null | undefined };

/**
 * A module attribute the scripter read while compiling, so the graph is valid only while it
 * keeps the value it had then: `name` is a field (`mode`, `inner`, `weight`: numbers, strings,
 * booleans and arrays by value, modules and tensors by identity), or `#training` (the training
 * flag), `#items` (the children of a Sequential/ModuleList), `#children` (named children, a
 * ModuleDict's keys, that code was unrolled over), `#state` (a library layer recorded
 * as one call: its training flag and settings, and those of its own children). `path` is the
 * module's path from the compiled root ('' for the root itself).
 */
export interface ModuleRead {
  readonly mod: ScriptableModule;
  readonly path: string;
  readonly name: string;
}

/** How a method is marked by the jit decorators. */
export type MethodMark = 'ignore' | 'unused' | 'export' | undefined;

/** A module as the scripter sees it (nn.Module satisfies it through the kiln adapter). */
export interface ScriptableModule {
  /** The class name (used to find the class in its source file). */
  readonly className: string;
  readonly training: boolean;
  /**
   * `library`: a built-in layer, recorded as one traced call; `sequential`: run its children in
   * order; `list`: a ModuleList (iteration and `get(i)` only); `user`: scripted from its source;
   * `dict`: a ModuleDict (static keys: `get`, `[key]`, `keys()`, `values()`, `entries()` only);
   * `graph`: already compiled (a jit.trace result), its graph is inlined.
   */
  readonly kind: 'library' | 'sequential' | 'list' | 'dict' | 'user' | 'graph';
  /** For kind `graph` (a traced submodule): its graph, inlined when forward is called. */
  graph?(): Graph;
  /** The module's own field `name`, or undefined when there is none. */
  field(name: string): ScriptField | undefined;
  /** Children in order (for `sequential` and `list`). */
  items(): readonly ScriptableModule[];
  /** Direct children with their field names, in order, each module once (`namedChildren()`). */
  namedChildren?(): readonly (readonly [string, ScriptableModule])[];
  /** For kind `dict`: its keys in insertion order (`keys()`). */
  keys?(): readonly string[] | undefined;
  /**
   * The class on the prototype chain that defines method `name` — the first one below the class
   * named `below` when given (what `super.name` reaches from a method of `below`).
   */
  methodOwner?(name: string, below?: string): MethodOwner | undefined;
  /** The keys of items() (their state dict prefixes: '0', '1', … or, for a slice of a Sequential,
   * the original keys such as '1', '2'). */
  itemKeys(): readonly string[];
  /** `Function.prototype.toString` of method `name`, or undefined when the class has none. */
  methodSource(name: string): string | undefined;
  /** How method `name` is marked by the decorators. */
  methodMark(name: string): MethodMark;
  /**
   * The Kiln library class (e.g. `Module`) that defines method `name` when the user's class
   * inherits it from the library rather than declaring it; undefined for the user's own methods.
   * Errors inside such code are reported at the user's call site, not in library text.
   */
  libraryOwner?(name: string): string | undefined;
  /** The `.ts` file that declares the class, when known. */
  readonly sourceFile?: string;
}

/** Where a method is defined: its class, its runtime text, and whether that class is library code. */
export interface MethodOwner {
  readonly className: string;
  readonly source: string;
  /** nn.Module itself or a built-in layer/container (its code is not scripted). */
  readonly library: boolean;
}

/** A tensor input of a traced call: its dtype, example sizes and which dims are symbolic. */
export interface TraceInput {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** dim index → symbol name (the symbol's example size is `shape[dim]`). */
  readonly axes: Readonly<Record<number, string>>;
}

/** An argument of a traced call: one of the call's tensor inputs, a static value or a list. */
export type TraceArg =
  | { readonly kind: 'tensor'; readonly index: number }
  | { readonly kind: 'static'; readonly value: unknown }
  /** A symbolic size (`N`, `N*3`): evaluated from the sizes of the call's tensor inputs. */
  | { readonly kind: 'size'; readonly dim: string }
  | { readonly kind: 'list'; readonly items: readonly TraceArg[] }
  | { readonly kind: 'object'; readonly entries: Readonly<Record<string, TraceArg>> };

/** What is called: a tensor method on `args[0]`, a library function, or a module's method. */
export type TraceTarget =
  | { readonly kind: 'method'; readonly name: string }
  | { readonly kind: 'function'; readonly name: string }
  /** `base`: the method as class `base` defines it (a `super.method()` call into a built-in layer). */
  | { readonly kind: 'module'; readonly module: ScriptableModule; readonly method: string; readonly base?: string };

/** The structure of a call's result: graph outputs by index, lists, objects, or static values. */
export type CallResult =
  | { readonly kind: 'tensor'; readonly output: number }
  | { readonly kind: 'list'; readonly items: readonly CallResult[] }
  /** A plain object (a compiled method's `return { logits, probs }`): keys in order. */
  | { readonly kind: 'object'; readonly keys: readonly string[]; readonly items: readonly CallResult[] }
  | { readonly kind: 'static'; readonly value: number | boolean | string | null | undefined };

/** One eager call recorded as a graph whose inputs are the call's tensor inputs, in order. */
export interface TracedCall {
  readonly graph: Graph;
  readonly result: CallResult;
  /** What the trace could not keep (values read into JS, baked sizes): each is a ScriptError. */
  readonly warnings: readonly string[];
}

/**
 * What a method returned when run eagerly on example inputs (`ScriptHost.probeMethod`): each
 * tensor with its shape at the example sizes and at every symbolic size plus one.
 */
export type ProbeResult =
  | { readonly kind: 'tensor'; readonly dtype: DType; readonly shape: readonly number[]; readonly bumped: readonly number[] }
  | { readonly kind: 'number' }
  | { readonly kind: 'boolean' }
  | { readonly kind: 'list'; readonly items: readonly ProbeResult[] }
  | { readonly kind: 'none' };

/** The eager library as the scripter reaches it. */
export interface ScriptHost {
  /** Records one call; throws an Error whose message says what is wrong (unknown method, bad args). */
  traceCall(target: TraceTarget, inputs: readonly TraceInput[], args: readonly TraceArg[]): TracedCall;
  /** Whether `name` (e.g. `F.relu`, `cat`) is a library function `traceCall` can record. */
  hasFunction(name: string): boolean;
  /**
   * Runs `module.method(args)` eagerly (without recording it) at the example sizes and again
   * with every symbolic size plus one, to learn the types of what it returns: how a call of a
   * @jit.ignore or @jit.unused method is typed. Throws an Error saying why it failed.
   */
  probeMethod(module: ScriptableModule, method: string, inputs: readonly TraceInput[], args: readonly TraceArg[]): ProbeResult;
  /**
   * The value of a global the code reads (a property of `globalThis` that is a number, string or
   * boolean), baked into the graph; undefined when `name` is no such global. A host that answers
   * guards the value itself (jit.compile recompiles when it changes). Absent: globals are refused.
   */
  readGlobal?(name: string): number | string | boolean | undefined;
}
