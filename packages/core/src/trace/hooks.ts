// The tracer's listening points inside eager code that do not go through the dispatch: a
// tensor's value reaching JavaScript, and in-place writes. Invariant: `listener` is null except
// while a trace is recording, so eager code pays one null check.

import type { Graph } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';

/** The JavaScript functions a compiled graph's `host_call` nodes call (@jit.ignore methods), by name. */
export type HostFunctions = Readonly<Record<string, (...args: any[]) => unknown>>;

/** What a compiled graph assumed about its module's attributes (kiln's GuardSet): the first change, described. */
export interface GraphGuard {
  describeFailure(): string | undefined;
}

export interface TraceListener {
  /** A tensor's value was read into JavaScript (`item()`, `toArray()`, a `>` comparison...). */
  onValueRead(what: string, t: Tensor): void;
  /** `t` was overwritten in place with the value of `result`. */
  onInplace(t: Tensor, result: Tensor): void;
  /**
   * A compiled graph (a jit.script or jit.trace module called inside the traced forward) ran
   * on `args` (tensors, numbers, booleans for its inputs in order) and gave `outputs` (its
   * outputs in order): the trace records the whole graph, regions included (hybrid mode), and
   * keeps `host` for its host_call nodes and `guards` (what the graph assumed about its module's
   * attributes, checked again whenever the trace's graph runs).
   */
  onGraphCall?(graph: Graph, args: readonly unknown[], outputs: readonly Tensor[], host?: HostFunctions, guards?: GraphGuard): void;
  /** backward() is about to accumulate gradients into `.grad` (a side effect a graph cannot keep). */
  onBackward?(): void;
  /** Runs `fn` without recording what it dispatches (compiling and running a graph eagerly). */
  suspend?<R>(fn: () => R): R;
  /**
   * Record each LSTM/GRU layer as one graph call whose steps are a `loop` over the sequence
   * length (nn/rnn-graph.ts) instead of the unrolled steps: set when the trace's sequence length
   * is dynamic, since the number of unrolled steps would be fixed at the example's.
   */
  readonly recurrentLoops?: boolean;
}

export const traceHooks: { listener: TraceListener | null } = { listener: null };
