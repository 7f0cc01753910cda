// Recording one eager run: every dispatched op becomes a tape entry whose inputs refer to
// earlier values (example inputs, parameters, literals, baked constants or op results).
// Invariant: the tape holds concrete shapes and attributes exactly as the run saw them;
// generalization to symbolic dims happens later (generalize.ts), lowering to IR after that.

import type { Dim, DType, Graph, KernelContext, OpDef, TypedArray } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { withObserver, type DispatchObserver } from '../dispatch.js';
import { traceHooks, type GraphGuard, type HostFunctions, type TraceListener } from './hooks.js';
import { userLocation } from './location.js';
import { defaultGenerator } from '../random.js';

/** Where a tape value comes from. */
export type ValueSource =
  | { kind: 'input'; index: number }
  | { kind: 'param'; name: string }
  | { kind: 'literal'; value: number; dtype: DType }
  | { kind: 'const'; data: TypedArray; loc?: string }
  /** A literal found (generalize.ts) to equal `coeff` × the product of dynamic sizes. */
  | { kind: 'size'; coeff: number; symbols: string[]; dtype: DType }
  /** A constant filled with one value whose shape follows the dynamic sizes (`zeros([N, 4])`). */
  | { kind: 'fill'; value: number; shape: Dim[] }
  | { kind: 'op'; op: number; output: number };

export interface TapeValue {
  readonly source: ValueSource;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export interface TapeOp {
  /** A registry op, or `call @name` for a compiled graph (see `graph`). */
  readonly op: string;
  /** For a call of a compiled graph: the graph, inlined when lowering (regions included). */
  readonly graph?: Graph;
  /** For a call of a compiled graph: the functions of its host_call nodes. */
  readonly host?: HostFunctions;
  /** For a call of a compiled graph: what it assumed about its module's attributes. */
  readonly guards?: GraphGuard;
  readonly inputs: readonly (number | null)[];
  readonly attrs: Record<string, unknown>;
  readonly outputs: readonly number[];
  readonly scope?: string;
  readonly loc?: string;
}

export interface TraceWarning {
  readonly kind: 'value-read' | 'constant' | 'control-flow' | 'baked-attribute' | 'baked-literal' | 'random-generator' | 'input-mutated';
  readonly message: string;
  readonly loc?: string;
}

export interface Tape {
  values: TapeValue[];
  ops: TapeOp[];
  /** Value ids of the flattened outputs. */
  outputs: number[];
  warnings: TraceWarning[];
  /** Params/buffers the run changed in place (BatchNorm's running statistics): the value now bound to each. */
  updates: { name: string; value: number }[];
}

/** The parts of a module the tracer needs (nn.Module satisfies it). */
export interface TraceableModule {
  forward(...args: any[]): any;
  /** The module's training flag; recorded in the graph's metadata. */
  readonly training?: boolean;
  namedParameters?(): [string, Tensor][];
  namedBuffers?(): [string, Tensor][];
  namedModules?(): [string, TraceableModule][];
}

class Recorder implements DispatchObserver, TraceListener {
  readonly tape: Tape = { values: [], ops: [], outputs: [], warnings: [], updates: [] };
  private readonly ids = new Map<Tensor, number>();
  /** Latest value id per storage, so views made outside the dispatch (`detach()`) are found. */
  private readonly byStorage = new Map<object, number[]>();
  private readonly paramsByStorage = new Map<object, { name: string; tensor: Tensor }>();
  scope: string | undefined;
  /** While above 0, dispatched ops and value reads are not recorded (see suspend). */
  private suspended = 0;

  constructor(params: [string, Tensor][], private readonly strict: boolean, readonly recurrentLoops: boolean) {
    for (const [name, t] of params) this.paramsByStorage.set(t._storage, { name, tensor: t });
  }

  private readonly inputs: Tensor[] = [];

  addInput(t: Tensor, index: number): void {
    this.inputs[index] = t;
    this.bind(t, this.push({ kind: 'input', index }, t));
  }

  private bind(t: Tensor, id: number): void {
    this.ids.set(t, id);
    const list = this.byStorage.get(t._storage);
    if (list) list.push(id);
    else this.byStorage.set(t._storage, [id]);
  }

  private push(source: ValueSource, t: { dtype: DType; shape: readonly number[] }): number {
    this.tape.values.push({ source, dtype: t.dtype, shape: [...t.shape] });
    return this.tape.values.length - 1;
  }

  /** The tape value of a tensor seen as an op input; unknown tensors become params or constants. */
  valueOf(t: Tensor): number {
    const known = this.ids.get(t) ?? this.viewOf(t);
    if (known !== undefined) return known;
    const param = this.paramsByStorage.get(t._storage);
    let id: number;
    if (param && param.tensor.shape.length === t.shape.length && param.tensor.shape.every((d, i) => d === t.shape[i])) {
      id = this.push({ kind: 'param', name: param.name }, t);
    } else if (t.shape.length === 0) {
      id = this.push({ kind: 'literal', value: t.data[0], dtype: t.dtype }, t);
    } else {
      id = this.push({ kind: 'const', data: t.data.slice(0, t.numel()) as TypedArray, loc: userLocation() }, t);
    }
    this.bind(t, id);
    return id;
  }

  /** A same-shape view of a recorded value (made without the dispatch, e.g. by detach()). */
  private viewOf(t: Tensor): number | undefined {
    const ids = this.byStorage.get(t._storage) ?? [];
    for (let k = ids.length - 1; k >= 0; k--) {
      const v = this.tape.values[ids[k]];
      if (v.shape.length === t.shape.length && v.shape.every((d, i) => d === t.shape[i])) return ids[k];
    }
    return undefined;
  }

  onOp(def: OpDef, inputs: readonly (Tensor | null)[], attrs: Record<string, unknown>, outputs: readonly Tensor[], ctx?: KernelContext): void {
    if (this.suspended) return;
    if (def.random && ctx?.generator && ctx.generator !== defaultGenerator) {
      // The graph op draws from kiln's default generator (or a loaded model's), not this one.
      const loc = userLocation();
      const message = `${def.name}${loc ? ` at ${loc}` : ''} draws from a generator passed as { generator }, but the compiled graph draws from kiln's default generator ` +
        "(a loaded .tsgraph from its own), so its numbers would differ from this eager run; drop the generator option and seed with manualSeed(s) instead";
      if (this.strict) throw new TraceError(message, loc);
      this.tape.warnings.push({ kind: 'random-generator', message, loc });
    }
    const ins = inputs.map((t) => (t ? this.valueOf(t) : null));
    const opIndex = this.tape.ops.length;
    const outs = outputs.map((t, k) => {
      const id = this.push({ kind: 'op', op: opIndex, output: k }, t);
      this.bind(t, id);
      return id;
    });
    this.tape.ops.push({ op: def.name, inputs: ins, attrs: structuredClone(attrs), outputs: outs, scope: this.scope, loc: userLocation() });
  }

  onValueRead(what: string, t: Tensor): void {
    if (this.suspended || !this.ids.has(t)) return; // a value that does not depend on the trace (e.g. a constant)
    const loc = userLocation();
    const message = `${what} read a traced tensor's value (shape [${t.shape.join(',')}]) into JavaScript${loc ? ` at ${loc}` : ''}: ` +
      'whatever the code does with that number (a branch, a loop bound, arithmetic) is baked into the trace for this input only. ' +
      'Keep it in tensor ops, or compile this module with jit.script, which keeps data-dependent control flow.';
    if (this.strict) throw new TraceError(message, loc);
    this.tape.warnings.push({ kind: 'value-read', message, loc });
  }

  onBackward(): void {
    if (this.suspended) return;
    const loc = userLocation();
    throw new TraceError(`jit.trace: backward()${loc ? ` at ${loc}` : ''} inside the traced forward accumulates gradients into .grad, ` +
      'a side effect a graph cannot reproduce. Compute the gradients with autograd.grad(outputs, inputs, { createGraph: true }) and use its result, ' +
      'or call backward() outside the traced forward.', loc);
  }

  suspend<R>(fn: () => R): R {
    this.suspended++;
    try {
      return fn();
    } finally {
      this.suspended--;
    }
  }

  onGraphCall(graph: Graph, args: readonly unknown[], outputs: readonly Tensor[], host?: HostFunctions, guards?: GraphGuard): void {
    const declared = graph.inputs.filter((i) => i.kind === 'input');
    if (args.length !== declared.length) throw new TraceError(`trace: the compiled graph @${graph.name} takes ${declared.length} inputs but was called with ${args.length}`);
    const ins = args.map((a, i) => {
      if (a instanceof Tensor) return this.valueOf(a);
      const t = declared[i].value.type;
      const dtype: DType = t.kind === 'tensor' || t.kind === 'scalar' ? t.dtype : 'float32';
      if (typeof a !== 'number' && typeof a !== 'boolean') throw new TraceError(`trace: argument ${i} of the compiled graph @${graph.name} is ${typeof a}; it takes tensors, numbers and booleans`);
      return this.push({ kind: 'literal', value: Number(a), dtype }, { dtype, shape: [] });
    });
    const opIndex = this.tape.ops.length;
    const outs = outputs.map((t, k) => {
      const id = this.push({ kind: 'op', op: opIndex, output: k }, t);
      this.bind(t, id);
      return id;
    });
    this.tape.ops.push({ op: `call @${graph.name}`, graph, host, guards, inputs: ins, attrs: {}, outputs: outs, scope: this.scope, loc: userLocation() });
  }

  onInplace(t: Tensor, result: Tensor): void {
    const id = this.ids.get(result);
    if (id !== undefined) this.bind(t, id);
  }

  markOutputs(ts: Tensor[]): void { this.tape.outputs = ts.map((t) => this.valueOf(t)); }

  /**
   * Records which params/buffers an in-place op rebound to an op result during the run (buffer
   * updates), and warns about inputs changed in place, which a graph cannot do to its caller's tensors.
   */
  markUpdates(): void {
    this.inputs.forEach((t, index) => {
      const id = this.ids.get(t);
      if (id === undefined || this.tape.values[id].source.kind !== 'op') return;
      const op = this.tape.ops[(this.tape.values[id].source as { op: number }).op];
      const message = `input ${index} (shape [${t.shape.join(',')}]) is changed in place by ${op.op}${op.loc ? ` at ${op.loc}` : ''} ` +
        '(e.g. running statistics passed to F.batchNorm in training mode); a compiled graph never changes its inputs, so the caller\'s tensor would keep its old value. ' +
        'Keep state in module buffers changed by an nn layer (nn.BatchNorm* updates are recorded), or call model.eval()';
      if (this.strict) throw new TraceError(message, op.loc);
      this.tape.warnings.push({ kind: 'input-mutated', message, loc: op.loc });
    });
    for (const { name, tensor } of this.paramsByStorage.values()) {
      const id = this.ids.get(tensor);
      if (id !== undefined && this.tape.values[id].source.kind === 'op') this.tape.updates.push({ name, value: id });
    }
  }
}

/** A trace that cannot be trusted (strict mode), with the user's source location. */
export class TraceError extends Error {
  constructor(message: string, readonly loc?: string) {
    super(message);
    this.name = 'TraceError';
  }
}

/**
 * Runs `model.forward(...args)` once, recording every op. The tensor arguments are the graph's
 * inputs, in order; other arguments are constants of the trace. `flatten` turns the forward's
 * result into its list of output tensors; `recurrentLoops` records LSTM/GRU layers as loops (hooks.ts).
 */
export function recordTape(
  model: TraceableModule, inputs: readonly unknown[], flatten: (out: unknown) => Tensor[], opts: { strict?: boolean; recurrentLoops?: boolean } = {},
): { tape: Tape; result: unknown } {
  const params = [...(model.namedParameters?.() ?? []), ...(model.namedBuffers?.() ?? [])];
  const rec = new Recorder(params, opts.strict ?? false, opts.recurrentLoops ?? false);
  inputs.filter((a): a is Tensor => a instanceof Tensor).forEach((t, i) => rec.addInput(t, i));
  const restore = wrapScopes(model, rec);
  const prev = traceHooks.listener;
  traceHooks.listener = rec;
  try {
    const result = withObserver(rec, () => model.forward(...inputs));
    rec.markOutputs(flatten(result));
    rec.markUpdates();
    return { tape: rec.tape, result };
  } finally {
    traceHooks.listener = prev;
    restore();
  }
}

/** Makes each submodule's forward set the recorder's scope to its path while it runs. */
function wrapScopes(model: TraceableModule, rec: Recorder): () => void {
  const undo: (() => void)[] = [];
  for (const [path, m] of model.namedModules?.() ?? []) {
    if (!path) continue;
    const own = Object.prototype.hasOwnProperty.call(m, 'forward');
    const original = m.forward;
    m.forward = function (this: TraceableModule, ...args: unknown[]) {
      const outer = rec.scope;
      rec.scope = path;
      try {
        return original.apply(this, args);
      } finally {
        rec.scope = outer;
      }
    };
    undo.push(() => {
      if (own) m.forward = original;
      else delete (m as { forward?: unknown }).forward;
    });
  }
  return () => undo.forEach((u) => u());
}
