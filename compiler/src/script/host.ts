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
   * `graph`: already compiled (a jit.trace result), its graph is inlined.
   */
  readonly kind: 'library' | 'sequential' | 'list' | 'user' | 'graph';
  /** For kind `graph` (a traced submodule): its graph, inlined when forward is called. */
  graph?(): Graph;
  /** The module's own field `name`, or undefined when there is none. */
  field(name: string): ScriptField | undefined;
  /** Children in order (for `sequential` and `list`). */
  items(): readonly ScriptableModule[];
  /** The keys of items() (their state dict prefixes: '0', '1', … or, for a slice of a Sequential,
   * the original keys such as '1', '2'). */
  itemKeys(): readonly string[];
  /** `Function.prototype.toString` of method `name`, or undefined when the class has none. */
  methodSource(name: string): string | undefined;
  /** How method `name` is marked by the decorators. */
  methodMark(name: string): MethodMark;
  /** The `.ts` file that declares the class, when known. */
  readonly sourceFile?: string;
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
  | { readonly kind: 'module'; readonly module: ScriptableModule; readonly method: string };

/** The structure of a call's result: graph outputs by index, lists, or static values. */
export type CallResult =
  | { readonly kind: 'tensor'; readonly output: number }
  | { readonly kind: 'list'; readonly items: readonly CallResult[] }
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
}
