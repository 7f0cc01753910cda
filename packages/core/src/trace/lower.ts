// Tape → IR graph. Inputs get the declared (possibly symbolic) types, parameters become named
// `param` inputs, literals become 0-d constants, tensors made inside forward become named
// constants in the tensor table, sizes and fills found by the generalizer are computed from the
// symbols with `expand` (and `sum`); every node keeps its module scope and source location; a
// compiled graph called during the trace (a scripted submodule: hybrid mode) is inlined whole,
// `if`/`loop` regions included, its params named under the submodule's scope, its host functions
// (@jit.ignore callbacks) kept under names prefixed with that scope.
// An op whose types no longer check with symbolic dims is a TraceError naming the op and place.

import { bufferUpdateOutput, bufferUpdatesMetadata, GraphBuilder, inlineGraph, tensorType, type Dim, type Graph, type TensorData, type TypedArray, type Value } from '@kiln/ir-spec';
import { TraceError, type Tape } from './tape.js';
import type { HostFunctions } from './hooks.js';
import type { Tensor } from '../tensor.js';

export interface LowerOptions {
  name: string;
  inputNames: string[];
  /** Declared input shapes (symbols for dynamic dims). */
  inputShapes: Dim[][];
  outputNames: string[];
  /** Parameter and buffer values from before the run: private snapshots the graph takes over (not copied again). */
  params: ReadonlyMap<string, Tensor>;
  metadata?: Record<string, string>;
}

/** A lowered trace: the graph, and the functions its host_call nodes call, by name. */
export interface Lowered { readonly graph: Graph; readonly hostFunctions: HostFunctions }

export function lowerTape(tape: Tape, opts: LowerOptions): Lowered {
  const b = new GraphBuilder(opts.name, opts.metadata ?? {});
  const values = new Map<number, Value>();
  const params = new Map<string, Value>();
  let constants = 0;
  const calls: CallState = { params, data: new Map(), live: opts.params, constants: 0, host: {} };

  tape.values.forEach((v, id) => {
    if (v.source.kind === 'input') {
      const i = v.source.index;
      values.set(id, b.input(opts.inputNames[i], tensorType(v.dtype, opts.inputShapes[i])));
    }
  });
  const valueOf = (id: number): Value => {
    const known = values.get(id);
    if (known) return known;
    const v = tape.values[id];
    const s = v.source;
    let out: Value;
    if (s.kind === 'param') {
      out = params.get(s.name) ?? b.param(s.name, tableDataOf(opts.params.get(s.name)!));
      params.set(s.name, out);
    } else if (s.kind === 'literal') {
      out = b.literal(s.value, v.dtype);
    } else if (s.kind === 'const') {
      out = b.constant(`const_${constants++}`, { dtype: v.dtype, shape: v.shape, data: s.data });
    } else if (s.kind === 'size') {
      // coeff·N·M as a 0-d tensor: the element count of ones expanded to [N*M], times coeff.
      const count = b.op('sum', [b.op('expand', [b.literal(1, s.dtype)], { shape: [s.symbols.join('*')] })[0]], { dim: null, keepdim: false })[0];
      out = s.coeff === 1 ? count : b.op('mul', [count, b.literal(s.coeff, s.dtype)])[0];
    } else if (s.kind === 'fill') {
      out = b.op('expand', [b.literal(s.value, v.dtype)], { shape: s.shape })[0];
    } else {
      throw new Error(`trace: value ${id} is used before the op that makes it (internal error)`);
    }
    values.set(id, out);
    return out;
  };
  for (const op of tape.ops) {
    b.meta = { ...(op.scope ? { scope: op.scope } : {}), ...(op.loc ? { loc: op.loc } : {}) };
    let outs: Value[];
    try {
      const ins = op.inputs.map((i) => (i === null ? null : valueOf(i)));
      outs = op.graph ? inlineCall(b, op.graph, op.host ?? {}, ins as Value[], op.scope, calls) : b.op(op.op, ins, op.attrs);
    } catch (e) {
      // Shapes that held at the example sizes no longer fit once dims are symbolic: something
      // was baked in (the caller appends the trace's warnings, which say what).
      const where = `${op.op}${op.scope ? ` in ${op.scope}` : ''}${op.loc ? ` at ${op.loc}` : ''}`;
      throw new TraceError(`jit.trace: the traced graph cannot be built: ${where}: ${e instanceof Error ? e.message : String(e)}`, op.loc);
    }
    op.outputs.forEach((id, k) => values.set(id, outs[k]));
  }
  b.meta = {};
  tape.outputs.forEach((id, k) => b.output(opts.outputNames[k], valueOf(id)));
  // Buffers changed in place (training-mode BatchNorm): their new values are extra outputs
  // marked as buffer updates, which the runtime writes back over the params after each run.
  const updates = tape.updates.map((u) => {
    if (!params.has(u.name)) params.set(u.name, b.param(u.name, tableDataOf(opts.params.get(u.name)!)));
    const output = bufferUpdateOutput(u.name);
    b.output(output, valueOf(u.value));
    return { output, param: u.name };
  });
  Object.assign(b.metadata, bufferUpdatesMetadata(updates));
  return { graph: b.build(), hostFunctions: calls.host };
}

/**
 * What the inlined calls of one lowering share: params by name with their data, a counter for
 * constants, and the host functions by their names in the trace.
 */
interface CallState { params: Map<string, Value>; data: Map<string, TensorData>; live: ReadonlyMap<string, Tensor>; constants: number; host: Record<string, HostFunctions[string]> }

/**
 * The name in the trace of host function `name` of a graph called at `scope` (`Class.m` →
 * `scope:Class.m`, `path:Class.m` → `scope.path:Class.m`); a name already bound to another
 * function (two instances at one scope) gets a suffix `#2`, `#3`, ...
 */
function traceHostName(st: CallState, scope: string | undefined, name: string, fn: HostFunctions[string] | undefined): string {
  const base = !scope ? name : name.includes(':') ? `${scope}.${name}` : `${scope}:${name}`;
  for (let k = 1; ; k++) {
    const full = k === 1 ? base : `${base}#${k}`;
    if (!st.host[full] || st.host[full] === fn || !fn) {
      if (fn) st.host[full] = fn;
      return full;
    }
  }
}

/**
 * A compiled graph inlined at its call: its symbols become the dims of the values it was called
 * with, its params join the trace's (named `scope.name`; a name already taken by other data gets
 * a suffix), its nodes keep their own scopes under the call's.
 */
function inlineCall(b: GraphBuilder, g: Graph, host: HostFunctions, inputs: Value[], scope: string | undefined, st: CallState): Value[] {
  const dims = new Map<string, Dim>();
  g.inputs.filter((i) => i.kind === 'input').forEach((inp, k) => {
    const want = inp.value.type, got = inputs[k]?.type;
    if (want.kind !== 'tensor' || got?.kind !== 'tensor') return;
    want.shape.forEach((d, j) => { if (typeof d === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(d) && !dims.has(d)) dims.set(d, got.shape[j]); });
  });
  const under = (name: string) => (scope ? `${scope}.${name}` : name);
  const meta = b.meta;
  return inlineGraph(b, g, {
    inputs,
    dims,
    param: (name, data) => {
      for (let k = 0; ; k++) {
        const full = k ? `${under(name)}_${k}` : under(name);
        const live = st.live.get(full);
        const have = st.data.get(full) ?? (live && tableDataOf(live));
        if (have && !sameData(have, data)) continue;
        let v = st.params.get(full);
        if (!v) {
          v = b.param(full, have ?? data);
          st.params.set(full, v);
        }
        st.data.set(full, have ?? data);
        return v;
      }
    },
    constant: (_, data) => b.constant(`call_const_${st.constants++}`, data),
    meta: (m) => ({ ...meta, ...(m.loc ? { loc: m.loc } : {}), ...(m.scope || scope ? { scope: [scope, m.scope].filter(Boolean).join('.') } : {}) }),
    hostName: (name) => traceHostName(st, scope, name, host[name]),
  });
}

function sameData(a: TensorData, b: TensorData): boolean {
  if (a.dtype !== b.dtype || a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i]) || a.data.length !== b.data.length) return false;
  for (let i = 0; i < a.data.length; i++) if (!Object.is(a.data[i], b.data[i])) return false;
  return true;
}

/** A snapshot's data as tensor table data (shared, not copied: the snapshot belongs to the trace). */
function tableDataOf(t: Tensor): { dtype: Tensor['dtype']; shape: number[]; data: TypedArray } {
  return { dtype: t.dtype, shape: [...t.shape], data: (t.data.length === t.numel() ? t.data : t.data.subarray(0, t.numel())) as TypedArray };
}
