// The state of one scripting run: the graph builder, the model's parameters as graph inputs,
// the example sizes of symbolic dims (for recording eager calls), and the inlining of recorded
// calls into the graph. Invariant: every node the scripter emits goes through `this.b`, with
// `b.meta` set to the module scope and source location of the construct being lowered.

import { bufferUpdateOutput, bufferUpdates, bufferUpdatesMetadata, evalDim, GraphBuilder, inlineGraph, parseDim, typeToString, type Dim, type DType, type Graph, type Value, type TensorIRType } from '@kiln/ir-spec';
import type { Node as TsNode } from 'ts-morph';
import type { CallResult, ModuleRead, ScriptField, ScriptableModule, ScriptHost, ScriptTensor, TraceArg, TraceInput, TraceTarget } from './host.js';
import type { SourceInfo } from './source.js';
import { staticDType, type SValue } from './values.js';

/** Thrown to redo a region with different scalar dtypes (see control.ts). */
export class RetryWithDTypes extends Error {
  constructor(readonly hints: ReadonlyMap<string, DType>) { super('retry'); }
}

/** Where the lowering is: the module, its scope path and the source being read. */
export interface Frame {
  readonly mod: ScriptableModule | undefined;
  readonly path: string;
  readonly src: SourceInfo;
  /** Method names being inlined (recursion guard). */
  readonly stack: readonly string[];
  /** Inside a run-time loop region (return and break there are limited). */
  readonly inLoop: boolean;
}

const EXAMPLE_SIZES = [5, 7, 11, 13, 17, 19, 23, 29];

export class ScriptContext {
  readonly b: GraphBuilder;
  private readonly params = new Map<string, Value>();
  private readonly symbolSizes = new Map<string, number>();
  private constants = 0;
  private fresh = 0;
  /** Every module attribute the lowering read, in order (see ModuleRead); guards are built from them. */
  readonly reads: ModuleRead[] = [];
  /**
   * Buffers a recorded call changed in place (training-mode BatchNorm running statistics): the
   * value each holds now. Later reads of the buffer see it; the graph returns it as a buffer update.
   */
  private readonly updates = new Map<string, Value>();

  constructor(readonly host: ScriptHost, name: string, metadata: Record<string, string>) {
    this.b = new GraphBuilder(name, metadata);
  }

  /**
   * Records that the graph depends on `mod`'s attribute `name` (a field, or `#training`,
   * `#items`, `#children`, `#state`: see ModuleRead) as it is now; `path` is the module's path
   * from the root.
   */
  assume(mod: ScriptableModule, name: string, path: string): void {
    if (this.reads.some((r) => r.mod === mod && r.name === name)) return;
    this.reads.push({ mod, path, name });
  }

  /** The graph input for parameter/buffer `name` (created on first use), or its updated value. */
  param(name: string, t: ScriptTensor): Value {
    const updated = this.updates.get(name);
    if (updated) return updated;
    let v = this.params.get(name);
    if (!v) {
      v = this.b.param(name, { dtype: t.dtype, shape: [...t.shape], data: t.data.slice() });
      this.params.set(name, v);
    }
    return v;
  }

  /** Registers the symbols of an input's dims with distinct example sizes. */
  noteSymbols(shape: readonly Dim[]): void {
    for (const d of shape) {
      if (typeof d !== 'string') continue;
      for (const atom of d.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) {
        if (!this.symbolSizes.has(atom)) this.symbolSizes.set(atom, EXAMPLE_SIZES[this.symbolSizes.size % EXAMPLE_SIZES.length] + 30 * Math.floor(this.symbolSizes.size / EXAMPLE_SIZES.length));
      }
    }
  }

  /** The example size of a dim (symbols at their example sizes). */
  exampleSize(d: Dim): number {
    if (typeof d === 'number') return d;
    const n = evalDim(d, this.symbolSizes);
    if (n === undefined) throw new Error(`no example size for dim '${d}'`);
    return n;
  }

  /** A run-time scalar for a static number or boolean. */
  scalar(value: number | boolean, dtype: DType = staticDType(value) ?? 'float32'): Value {
    return this.b.op('scalar', [], { value, dtype })[0];
  }

  /**
   * Records `target(args)` through the host and inlines it. `tensors` are the call's tensor
   * inputs (args refer to them by index). Returns the call's result as scripter values.
   */
  inlineCall(target: TraceTarget, tensors: readonly Value[], args: readonly TraceArg[], prefix: string, at: TsNode, src: SourceInfo, hint = ''): SValue {
    const { inputs, renames } = this.traceInputs(tensors);
    let call;
    try {
      call = this.host.traceCall(target, inputs, args);
    } catch (e) {
      const types = tensors.map((v) => typeToString(v.type)).join(', ');
      throw src.error(at, `${describeTarget(target)} failed while recording it on tensors of type ${types || '(none)'} ` +
        `(symbolic sizes taken as ${[...this.symbolSizes].map(([k, n]) => `${k}=${n}`).join(', ') || 'none'}): ${(e as Error).message}${hint}`);
    }
    if (call.warnings.length) {
      // A library layer's code cannot be rewritten by the user: say how to avoid compiling it.
      const layer = target.kind === 'module'
        ? `Call the layer from a method marked @jit.ignore (it then runs eagerly)${target.module.training ? ', or call model.eval() before scripting if you compile for inference' : ''}.`
        : 'Move this computation into a method marked @jit.ignore, or rewrite it with ops whose sizes do not depend on data.';
      throw src.error(at, `${describeTarget(target)} cannot be compiled faithfully: ${call.warnings[0]} ${layer}`);
    }
    const outs = this.inlineGraph(call.graph, tensors, prefix, renames);
    for (const u of bufferUpdates(call.graph)) {
      const name = prefix ? `${prefix}.${u.param}` : u.param;
      if (this.b.inRegion) {
        throw src.error(at, `${describeTarget(target)} updates the buffer '${name}' (running statistics of a layer in training mode) inside an if/loop, ` +
          'and jit.script cannot carry a buffer update out of a branch or loop; call the layer outside the if/loop, or call model.eval() before scripting (eval mode updates nothing)');
      }
      this.updates.set(name, outs[call.graph.outputs.findIndex((o) => o.name === u.output)]);
    }
    const build = (r: CallResult): SValue => {
      if (r.kind === 'tensor') return { k: 'tensor', v: outs[r.output] };
      if (r.kind === 'list') return { k: 'list', items: r.items.map(build) };
      if (r.kind === 'object') return { k: 'object', entries: Object.fromEntries(r.keys.map((key, i) => [key, build(r.items[i])])) };
      return { k: 'static', value: r.value };
    };
    return build(call.result);
  }

  /**
   * The example inputs for a host call on `tensors`: example sizes, symbolic dims named by an
   * identifier (a compound dim like `N*2` gets a fresh symbol, mapped back by `renames`).
   */
  traceInputs(tensors: readonly Value[]): { inputs: TraceInput[]; renames: Map<string, string> } {
    const renames = new Map<string, string>();
    const inputs: TraceInput[] = tensors.map((v) => {
      const t = v.type as TensorIRType;
      const axes: Record<number, string> = {};
      const shape = t.shape.map((d, i) => {
        if (typeof d === 'number') return d;
        let sym = d;
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(d)) {
          sym = [...renames].find(([, full]) => full === d)?.[0] ?? `kiln_s${this.fresh++}`;
          renames.set(sym, d);
        }
        axes[i] = sym;
        return this.exampleSize(d);
      });
      return { dtype: t.dtype, shape, axes };
    });
    return { inputs, renames };
  }

  /** Copies `g`'s nodes (regions included) into the current block; returns the values of g's outputs. */
  inlineGraph(g: Graph, tensors: readonly Value[], prefix: string, renames: ReadonlyMap<string, string>): Value[] {
    const dims = new Map<string, Dim>([...renames].map(([sym, full]) => [sym, parseDim(full)]));
    return inlineGraph(this.b, g, {
      inputs: tensors,
      param: (name, t) => this.param(prefix ? `${prefix}.${name}` : name, t),
      constant: (_, t) => this.b.constant(`const_${this.constants++}`, t),
      dims,
      meta: () => this.b.meta,
    });
  }

  /**
   * Adds the buffer updates recorded calls made as graph outputs (`state.<param>`) and lists them
   * in the metadata; call once, after the method's own outputs.
   */
  emitBufferUpdates(): void {
    const list = [...this.updates].map(([param, v]) => {
      if (!this.params.has(param)) throw new Error(`jit.script: the buffer '${param}' is updated but never read (internal error)`);
      const output = bufferUpdateOutput(param);
      this.b.output(output, v);
      return { output, param };
    });
    Object.assign(this.b.metadata, bufferUpdatesMetadata(list));
  }

  /** Makes a scalar SValue a run-time Value (static numbers become `scalar` nodes). */
  scalarValue(v: SValue, dtype?: DType): Value | undefined {
    if (v.k === 'scalar') return v.v;
    if (v.k === 'static' && (typeof v.value === 'number' || typeof v.value === 'boolean')) return this.scalar(v.value, dtype);
    return undefined;
  }
}

/** A module attribute as compared for staleness: numbers, strings, booleans, list lengths. */
function describeTarget(t: TraceTarget): string {
  if (t.kind === 'method') return `the tensor method .${t.name}()`;
  if (t.kind === 'function') return `${t.name}()`;
  if (t.base !== undefined) return `super.${t.method}() (${t.base}.${t.method} of the ${t.module.className} module)`;
  return `the ${t.module.className} module's ${t.method}()`;
}
