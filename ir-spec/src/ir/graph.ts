// The IR: typed SSA values, nodes with optional regions (structured control flow), blocks and
// graphs (MLIR scf style: `if` and `loop` nodes own single-block regions with typed block
// arguments and a yield list; there are no gotos).
// Invariants: a Value is defined exactly once (by a node output, a block argument or a graph
// input) and is immutable; users and use counts are derived by walking, never stored; a node's
// `attrs` are the op's full, schema-parsed attributes (defaults filled in), so the text form and
// the file are deterministic.

import type { DType, TypedArray } from '../dtype.js';
import type { IRType } from './types.js';
import { printGraph } from './text/printer.js';
import { getOp, hasOp } from '../op-def.js';

export type AttrValue = number | string | boolean | null | readonly AttrValue[] | { readonly [k: string]: AttrValue };
export type Attrs = Readonly<Record<string, AttrValue>>;

export class Value {
  /** @param hint a readable name used by the printer when unique (`x`, `features.0.weight`). */
  constructor(readonly type: IRType, readonly hint?: string) {}
}

/** Where a node came from, for readable graphs and located errors. */
export interface NodeMeta {
  /** Module path, e.g. `features.0`. */
  readonly scope?: string;
  /** Source location `file:line:col`. */
  readonly loc?: string;
  /**
   * The other nodes a fold or fusion merged into this one (fold-conv-bn's batch_norm, an epilogue's
   * relu and pool), each with its op, scope and location: the provenance profilers report.
   */
  readonly fused?: readonly FusedOrigin[];
}

/** One node merged into another by a pass (see NodeMeta.fused). */
export interface FusedOrigin {
  readonly op: string;
  readonly scope?: string;
  readonly loc?: string;
}

/**
 * The meta of a node that replaces `root` and absorbs `others`: root's scope and location, and
 * every absorbed node (with what each had absorbed before) in `fused`.
 */
export function mergedMeta(root: Node, others: readonly Node[]): NodeMeta {
  const origin = (n: Node): FusedOrigin => ({ op: n.op, ...(n.meta.scope !== undefined ? { scope: n.meta.scope } : {}), ...(n.meta.loc !== undefined ? { loc: n.meta.loc } : {}) });
  const fused = [...(root.meta.fused ?? []), ...others.flatMap((n) => [origin(n), ...(n.meta.fused ?? [])])];
  return { ...root.meta, ...(fused.length ? { fused } : {}) };
}

export class Node {
  constructor(
    /** A registered op (see op-def.ts) or a structural op (see builtins.ts). */
    readonly op: string,
    /** `null` stands for an omitted optional input. */
    readonly inputs: readonly (Value | null)[],
    readonly attrs: Attrs,
    readonly outputs: readonly Value[],
    readonly regions: readonly Block[] = [],
    readonly meta: NodeMeta = {},
  ) {}
}

/** A straight-line list of nodes with typed arguments and the values it yields. */
export class Block {
  constructor(
    readonly args: readonly Value[],
    readonly nodes: Node[] = [],
    public yields: readonly Value[] = [],
  ) {}
}

export type InputKind = 'input' | 'param';

export interface GraphInput {
  readonly name: string;
  /** `input`: supplied by the caller of run(); `param`: bound from the tensor table by name. */
  readonly kind: InputKind;
  readonly value: Value;
}

export interface GraphOutput { readonly name: string; readonly value: Value }

/** A tensor stored with the graph (parameters, buffers, folded constants). */
export interface TensorData {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: TypedArray;
  /** A float32 tensor whose values float16/bfloat16 holds exactly, to be stored in 16 bits in a file. */
  readonly storage?: 'float16' | 'bfloat16';
}

/** A graph's body is a Block without args or yields: `inputs` and `outputs` name those values. */
export class Graph {
  constructor(
    readonly name: string,
    readonly inputs: readonly GraphInput[],
    readonly body: Block,
    readonly outputs: readonly GraphOutput[],
    /** Named tensors: values of `param` inputs and of `constant` nodes. */
    readonly tensors: ReadonlyMap<string, TensorData> = new Map(),
    /** Free-form string metadata carried into the file (producer details, source, ...). */
    readonly metadata: Readonly<Record<string, string>> = {},
  ) {}

  /** The graph in its text form (SPEC.md). */
  toString(): string { return printGraph(this); }
}

/**
 * Whether `n`'s region is an element body (OpDef.elementBody: fused_elementwise): per-element
 * code of `n`'s own kernel, not nodes that run on their own.
 */
export function hasElementBody(n: Node): boolean {
  return n.regions.length > 0 && hasOp(n.op) && getOp(n.op).elementBody === true;
}

/**
 * Visits every node that runs, regions included, in program order (a node before its regions'
 * nodes). The nodes of an element body (hasElementBody) are part of their owner's kernel and
 * are not visited; the verifier and the printer walk them on their own.
 */
export function* walkNodes(block: Block): Generator<Node> {
  for (const n of block.nodes) {
    yield n;
    if (hasElementBody(n)) continue;
    for (const r of n.regions) yield* walkNodes(r);
  }
}

/** Derived use counts of every value in the graph (region yields and graph outputs count). */
export function useCounts(g: Graph): Map<Value, number> {
  const uses = new Map<Value, number>();
  const use = (v: Value | null) => { if (v) uses.set(v, (uses.get(v) ?? 0) + 1); };
  const visit = (b: Block) => {
    for (const n of b.nodes) {
      n.inputs.forEach(use);
      n.regions.forEach(visit);
    }
    b.yields.forEach(use);
  };
  visit(g.body);
  g.outputs.forEach((o) => use(o.value));
  return uses;
}
