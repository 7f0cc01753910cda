// The execution plan: the graph walked once at model creation. Invariant: for every block,
// `releaseAfter[i]` lists exactly the values defined in that block (its args and its nodes'
// outputs) whose last use is node i, where a use inside a node's regions counts at that node
// (so a value read by a loop body lives through the whole loop) and a yielded value is never
// released by the schedule (the block's owner takes it). Values that are never used are
// released right after they are defined.

import { getOp, hasOp, isBuiltin, readMemoryPlan, valueIds, type Block, type Graph, type Node, type OpDef, type Value } from '@kiln/ir-spec';
import { hasSymbolicAttrs } from './dims.js';
import { describeNode, nameValues } from './describe.js';
import { RuntimeError } from './errors.js';

export interface NodePlan {
  readonly node: Node;
  /** The node in text form, for errors (printed on first read). */
  readonly text: string;
  /** The registry entry of a tensor op; undefined for structural ops. */
  readonly def: OpDef | undefined;
  /** Whether attrs hold symbolic dims that must be made concrete per run. */
  readonly symbolicAttrs: boolean;
  readonly regions: readonly BlockPlan[];
  /**
   * Inputs of a loop whose last use is handing their value to the loop (not read by its body):
   * the loop holds them as carried values, so the block's own binding is dropped before the
   * first trip rather than after the last.
   */
  readonly handedOver: readonly Value[];
  /** Values of the block released right after this node (its `releaseAfter` entry). */
  readonly releases: readonly Value[];
}

export interface BlockPlan {
  readonly block: Block;
  readonly nodes: readonly NodePlan[];
  /** Args never used: released as soon as they are bound. */
  readonly deadArgs: readonly Value[];
  readonly releaseAfter: readonly (readonly Value[])[];
}

export interface GraphPlan {
  readonly body: BlockPlan;
  /** Names of every value, as errors print them. */
  readonly names: ReadonlyMap<Value, string>;
  /** The graph's memory plan (compiler pass plan-memory) by value, when it carries one. */
  readonly memory?: SlotPlan;
}

export interface SlotPlan {
  /** The buffer slot of each planned value of the top-level body. */
  readonly slots: ReadonlyMap<Value, number>;
  /** Values planned to reuse the slot of an input that dies at their node. */
  readonly inPlace: ReadonlySet<Value>;
}

/** The graph's memory plan keyed by value (version 2 by SSA id, version 1 by printed name); keys it lacks are ignored. */
function planSlots(g: Graph, names: () => ReadonlyMap<Value, string>): SlotPlan | undefined {
  const plan = readMemoryPlan(g.metadata);
  if (!plan) return undefined;
  const keys = plan.version === 2 ? new Map([...valueIds(g)].map(([v, id]) => [v, String(id)])) : names();
  const inPlaceKeys = new Set<string>(plan.in_place.map(String));
  const slots = new Map<Value, number>(), inPlace = new Set<Value>();
  for (const [v, key] of keys) {
    if (!Object.hasOwn(plan.slots, key)) continue;
    slots.set(v, plan.slots[key]);
    if (inPlaceKeys.has(key)) inPlace.add(v);
  }
  return { slots, inPlace };
}

/** Values a block reads that it does not define (regions included). */
function freeValues(block: Block, memo: Map<Block, Set<Value>>): Set<Value> {
  const known = memo.get(block);
  if (known) return known;
  const defined = new Set<Value>(block.args);
  const free = new Set<Value>();
  const use = (v: Value | null) => { if (v && !defined.has(v)) free.add(v); };
  for (const n of block.nodes) {
    n.inputs.forEach(use);
    for (const r of n.regions) freeValues(r, memo).forEach(use);
    n.outputs.forEach((o) => defined.add(o));
  }
  block.yields.forEach(use);
  memo.set(block, free);
  return free;
}

/** The release list of a node that releases nothing, and its hand-over list (shared; never written). */
const NONE: readonly Value[] = Object.freeze([]);
/** The region plans of a node without regions (shared: a long graph keeps no empty array per node). */
const NO_REGIONS: readonly BlockPlan[] = Object.freeze([]);

function planBlock(block: Block, held: readonly Value[], names: () => ReadonlyMap<Value, string>, memo: Map<Block, Set<Value>>): BlockPlan {
  // The index of the node after which each value defined here is last needed: its defining node
  // (an arg: -1) until a later node reads it. Values not in the map are defined elsewhere.
  const last = new Map<Value, number>();
  for (const a of block.args) last.set(a, -1);
  const nodes = block.nodes;
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i];
    for (const v of n.inputs) if (v && last.has(v)) last.set(v, i);
    for (const r of n.regions) for (const v of freeValues(r, memo)) if (last.has(v)) last.set(v, i);
    for (const o of n.outputs) last.set(o, i);
  }
  const keep = new Set<Value>(held);
  // Most nodes release one value or none: lists are made only for the nodes that need one.
  const releaseAfter: (readonly Value[])[] = new Array<readonly Value[]>(nodes.length).fill(NONE);
  for (const [v, i] of last) {
    if (i < 0 || keep.has(v)) continue;
    const list = releaseAfter[i];
    if (list === NONE) releaseAfter[i] = [v];
    else (list as Value[]).push(v);
  }
  const deadArgs = block.args.filter((a) => !keep.has(a) && last.get(a) === -1);
  const handedOver = (node: Node, i: number): Value[] => {
    const inBody = new Set<Value>();
    for (const r of node.regions) freeValues(r, memo).forEach((v) => inBody.add(v));
    return [...new Set(node.inputs.slice(2))].filter((v): v is Value => !!v && releaseAfter[i].includes(v) && !inBody.has(v));
  };
  const planned = nodes.map((node, i): NodePlan => {
    if (!isBuiltin(node.op) && !hasOp(node.op)) {
      const text = describeNode(node, names());
      throw new RuntimeError('GRAPH', `unknown op '${node.op}' at ${text}: it is neither a structural op nor in this runtime's op registry; load the file with a runtime at least as new as the one that wrote it`, text);
    }
    return new PlannedNode(
      node, names,
      isBuiltin(node.op) ? undefined : getOp(node.op),
      hasSymbolicAttrs(node.attrs),
      node.regions.length ? node.regions.map((r) => planBlock(r, r.yields, names, memo)) : NO_REGIONS,
      node.op === 'loop' ? handedOver(node, i) : NONE,
      releaseAfter[i],
    );
  });
  return { block, nodes: planned, deadArgs, releaseAfter };
}

/**
 * One node's plan. The node's text is printed when an error first needs it: printing every
 * node up front would make planning cost far more than the graph's size.
 */
class PlannedNode implements NodePlan {
  private printed?: string;
  constructor(
    readonly node: Node,
    private readonly names: () => ReadonlyMap<Value, string>,
    readonly def: OpDef | undefined,
    readonly symbolicAttrs: boolean,
    readonly regions: readonly BlockPlan[],
    readonly handedOver: readonly Value[],
    readonly releases: readonly Value[],
  ) {}

  get text(): string { return (this.printed ??= describeNode(this.node, this.names())); }
}

/** Plans `g`: liveness of every value; names and node text are made when first read. */
export function planGraph(g: Graph): GraphPlan {
  let names: ReadonlyMap<Value, string> | undefined;
  const namesOf = () => (names ??= nameValues(g));
  // The body is planned like a block yielding the graph outputs. Graph inputs and params are
  // bound outside it and live for the whole run (they are not intermediates).
  const body = planBlock(g.body, g.outputs.map((o) => o.value), namesOf, new Map());
  return { body, get names() { return namesOf(); }, memory: planSlots(g, namesOf) };
}
