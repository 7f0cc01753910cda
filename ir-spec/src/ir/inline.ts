// Inlining one graph into another under construction: the scripter inlines traced submodules,
// the tracer inlines scripted (and traced) submodules called during a trace (hybrid mode).
// Invariant: the copy computes what `g` computes on the given inputs — every node (regions,
// `if`/`loop`, effect ops included) is rebuilt through the builder, so its types are inferred
// again from the caller's values; the callee's symbolic dims are replaced by the caller's dims
// wherever they appear (attributes, `host_call`/`raise` result types).

import type { Dim } from '../shape.js';
import { parseTypeString } from '../tsgraph/type-string.js';
import type { GraphBuilder } from './builder.js';
import { parseDim } from './dims.js';
import { hasElementBody, type AttrValue, type Attrs, type Block, type Graph, type NodeMeta, type TensorData, type Value } from './graph.js';
import { typeToString, type IRType } from './types.js';

export interface InlineOptions {
  /** The values of `g`'s inputs of kind `input`, in order. */
  readonly inputs: readonly Value[];
  /** The value standing for `g`'s param `name` (its tensor is `data`). */
  param(name: string, data: TensorData): Value;
  /** The value standing for `g`'s `constant {name}` node (its tensor is `data`). */
  constant(name: string, data: TensorData): Value;
  /** `g`'s symbols → the caller's dims. */
  readonly dims?: ReadonlyMap<string, Dim>;
  /** The meta of each copied node from the callee's (default: kept as it is). */
  meta?(m: NodeMeta): NodeMeta;
  /** The name a copied `host_call` calls (default: the callee's name). */
  hostName?(name: string): string;
}

/**
 * Copies `g`'s body into `b`'s current block; returns the values of `g`'s outputs.
 *
 * @example
 * const [y] = inlineGraph(b, sub, { inputs: [x], param: (n, t) => b.param(`sub.${n}`, t), constant: (n, t) => b.constant(`sub.${n}`, t) });
 */
export function inlineGraph(b: GraphBuilder, g: Graph, opts: InlineOptions): Value[] {
  const map = new Map<Value, Value>();
  let k = 0;
  for (const inp of g.inputs) {
    if (inp.kind === 'input') {
      const v = opts.inputs[k++];
      if (!v) throw new Error(`inlineGraph: @${g.name} takes more inputs than the ${opts.inputs.length} given`);
      map.set(inp.value, v);
    } else {
      map.set(inp.value, opts.param(inp.name, g.tensors.get(inp.name)!));
    }
  }
  const dims = opts.dims ?? new Map<string, Dim>();
  const get = (v: Value): Value => {
    const m = map.get(v);
    if (!m) throw new Error(`inlineGraph: a value of @${g.name} is used outside the region that defines it (verify the graph)`);
    return m;
  };
  const copy = (block: Block): Value[] => {
    const saved = b.meta;
    for (const n of block.nodes) {
      b.meta = opts.meta ? opts.meta(n.meta) : n.meta;
      let outs: Value[];
      if (n.op === 'constant' && typeof n.attrs.name === 'string') {
        outs = [opts.constant(n.attrs.name, g.tensors.get(n.attrs.name)!)];
      } else if (n.op === 'if') {
        outs = b.if(get(n.inputs[0]!), () => copy(n.regions[0]), () => copy(n.regions[1]));
      } else if (n.op === 'loop') {
        const [trips, cond, ...init] = n.inputs;
        const body = n.regions[0];
        outs = b.loop(trips ? get(trips) : null, cond ? get(cond) : null, init.map((v) => get(v!)), (i, carried) => {
          map.set(body.args[0], i);
          carried.forEach((c, j) => map.set(body.args[j + 1], c));
          const [go, ...next] = copy(body);
          return { next, continue: go };
        });
      } else if (hasElementBody(n)) {
        const body = n.regions[0];
        outs = [b.fusedElementwise(n.inputs.map((v) => get(v!)), (elements) => {
          body.args.forEach((a, j) => map.set(a, elements[j]));
          return copy(body)[0];
        })];
      } else {
        const attrs = substituteAttrs(n.op, n.attrs, dims);
        const named = n.op === 'host_call' && opts.hostName ? { ...attrs, name: opts.hostName(String(attrs.name)) } : attrs;
        outs = b.op(n.op, n.inputs.map((v) => (v ? get(v) : null)), named as Record<string, unknown>);
      }
      n.outputs.forEach((o, j) => map.set(o, outs[j]));
    }
    b.meta = saved;
    return block.yields.map(get);
  };
  copy(g.body);
  return g.outputs.map((o) => get(o.value));
}

/** `d` with the symbols of `dims` replaced (a canonical dim again). */
export function substituteDim(d: Dim, dims: ReadonlyMap<string, Dim>): Dim {
  if (typeof d === 'number' || !dims.size) return d;
  let s = d;
  for (const [sym, to] of dims) s = s.replace(new RegExp(`\\b${sym}\\b`, 'g'), `(${String(to)})`);
  return s === d ? d : parseDim(s);
}

function substituteType(t: IRType, dims: ReadonlyMap<string, Dim>): IRType {
  switch (t.kind) {
    case 'tensor': return { ...t, shape: t.shape.map((d) => substituteDim(d, dims)) };
    case 'tuple': return { ...t, elements: t.elements.map((e) => substituteType(e, dims)) };
    case 'list': return { ...t, element: substituteType(t.element, dims) };
    default: return t;
  }
}

/** Attributes with symbolic dims substituted: dim strings, and the type strings of `types`. */
function substituteAttrs(op: string, attrs: Attrs, dims: ReadonlyMap<string, Dim>): Attrs {
  if (!dims.size) return attrs;
  const walk = (a: AttrValue): AttrValue => {
    if (typeof a === 'string') {
      let d: Dim;
      try { d = parseDim(a); } catch { return a; }
      const r = substituteDim(d, dims);
      return r === d ? a : r;
    }
    if (Array.isArray(a)) return a.map(walk);
    if (a && typeof a === 'object') return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, walk(v)]));
    return a;
  };
  return Object.fromEntries(Object.entries(attrs).map(([k, v]) => {
    if ((op === 'host_call' || op === 'raise') && k === 'types' && Array.isArray(v)) {
      return [k, v.map((t) => typeToString(substituteType(parseTypeString(String(t)), dims)))];
    }
    if ((op === 'host_call' && k === 'name') || (op === 'raise' && k === 'message')) return [k, v];
    return [k, walk(v)];
  }));
}
