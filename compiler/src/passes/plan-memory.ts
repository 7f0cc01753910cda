// Pass `plan-memory`: assigns every intermediate tensor of the top-level body a buffer slot by
// liveness, so slots are reused once their value is dead, and lets an elementwise node write
// into the slot of an input that dies at it (in place) when the two have the same dims and
// element width (a broadcast input would be overwritten before it is read). The plan goes into
// the graph's metadata (MEMORY_PLAN_KEY), from where the `.tsgraph` encoder stores it in the
// header's `plan` and the runtime's CPU arena serves each planned value from its slot. Values
// are named by their SSA id (`valueIds`, the numbering of the file), not by printed name.
// Invariants: two values that are alive at the same time never share a slot, except a view
// (reshape, identity dropout) and the value it views, which share one buffer anyway; the
// graph's nodes are untouched, so results cannot change.

import {
  getOp, Graph, hasOp, isBuiltin, isViewOp, MEMORY_PLAN_KEY, valueIds, walkNodes,
  type MemoryPlan, type Node, type Value,
} from '@kiln/ir-spec';


/** Elements of a value with symbolic dims taken as 1 (sizes only rank slots; the runtime measures). */
function size(v: Value): number {
  const t = v.type;
  return t.kind === 'tensor' ? t.shape.reduce<number>((a, d) => a * (typeof d === 'number' ? d : 1), 1) : 0;
}

/** Whether `o` can be written over `v` element for element: the same dims (symbols by name) and element width. */
function sameLayout(v: Value, o: Value): boolean {
  const a = v.type, b = o.type;
  if (a.kind !== 'tensor' || b.kind !== 'tensor' || a.shape.length !== b.shape.length) return false;
  const width = (d: string) => (d === 'bool' ? 1 : 4);
  return width(a.dtype) === width(b.dtype) && a.shape.every((d, k) => d === b.shape[k]);
}

const inPlaceOk = (n: Node) => n.op === 'fused_elementwise' || (hasOp(n.op) && !!getOp(n.op).elementwise);

/**
 * Computes the memory plan of `g`'s top-level body and stores it in the metadata.
 *
 * @example
 * const planned = planMemory(g);
 * planned.metadata['kiln.memory_plan']; // '{"version":2,"slots":{"3":0,...},"in_place":[5,...]}'
 */
export function planMemory(g: Graph): Graph {
  const nodes = g.body.nodes;
  const constants = new Set<Value>();
  for (const n of walkNodes(g.body)) if (n.op === 'constant') n.outputs.forEach((o) => constants.add(o));
  // Last use of each value in the body (a use inside a node's regions counts at the node;
  // graph outputs live to the end).
  const last = new Map<Value, number>();
  const touchAll = (n: Node, i: number) => {
    n.inputs.forEach((v) => { if (v) last.set(v, i); });
    for (const r of n.regions) for (const m of walkNodes(r)) touchAll(m, i);
    for (const r of n.regions) r.yields.forEach((v) => last.set(v, i));
  };
  nodes.forEach(touchAll);
  g.outputs.forEach((o) => last.set(o.value, Infinity));
  // A view extends the life of the buffer it views.
  const root = new Map<Value, Value>();
  const rootOf = (v: Value) => root.get(v) ?? v;
  for (let i = nodes.length - 1; i >= 0; i--) {
    const n = nodes[i];
    if (isViewOp(n.op) && n.inputs[0]) {
      const end = last.get(n.outputs[0]) ?? i;
      last.set(n.inputs[0], Math.max(last.get(n.inputs[0]) ?? i, end));
    }
  }
  const slotOf = new Map<Value, number>();
  const slotSize: number[] = [];
  const free = new Set<number>();
  const inPlace: Value[] = [];
  const release = (i: number) => {
    for (const [v, s] of slotOf) if ((last.get(v) ?? -1) === i && rootOf(v) === v && ![...slotOf].some(([w, t]) => t === s && w !== v && (last.get(w) ?? -1) > i)) free.add(s);
  };
  nodes.forEach((n, i) => {
    for (const o of n.outputs) {
      if (o.type.kind !== 'tensor' || constants.has(o) || isBuiltin(n.op)) continue;
      if (isViewOp(n.op) && n.inputs[0] && slotOf.has(n.inputs[0])) {
        root.set(o, rootOf(n.inputs[0]));
        slotOf.set(o, slotOf.get(n.inputs[0])!);
        continue;
      }
      const need = size(o);
      const dying = inPlaceOk(n) ? n.inputs.find((v) => v && slotOf.has(v) && last.get(v) === i && rootOf(v) === v && sameLayout(v, o)
        && ![...slotOf].some(([w, s]) => s === slotOf.get(v) && w !== v && (last.get(w) ?? -1) > i)) : undefined;
      if (dying) {
        slotOf.set(o, slotOf.get(dying)!);
        inPlace.push(o);
        continue;
      }
      // Best fit: the smallest free slot that holds it, else the largest free one (it grows).
      let pick = -1;
      for (const s of free) {
        if (slotSize[s] >= need ? pick < 0 || slotSize[pick] < need || slotSize[s] < slotSize[pick] : pick < 0 || (slotSize[pick] < need && slotSize[s] > slotSize[pick])) pick = s;
      }
      if (pick < 0) { pick = slotSize.length; slotSize.push(0); } else free.delete(pick);
      slotSize[pick] = Math.max(slotSize[pick], need);
      slotOf.set(o, pick);
      // A result nobody reads dies at once.
      if (!last.has(o)) last.set(o, i);
    }
    release(i);
  });
  const ids = valueIds(g);
  const plan: MemoryPlan = {
    version: 2,
    slots: Object.fromEntries([...slotOf].map(([v, s]) => [String(ids.get(v)), s])),
    in_place: inPlace.map((v) => ids.get(v)!),
  };
  const text = JSON.stringify(plan);
  if (g.metadata[MEMORY_PLAN_KEY] === text) return g;
  return new Graph(g.name, g.inputs, g.body, g.outputs, g.tensors, { ...g.metadata, [MEMORY_PLAN_KEY]: text });
}
