// Printed names of values. Invariant: the names depend only on the graph's structure, inputs'
// names and block arguments' hints, never on object identity or creation order, so the same
// graph always prints the same text, and names are unique in the whole graph: graph inputs keep
// their names, block arguments keep their hints when unique (`i`, else `i_1`, `i_2`, ...), every
// other value is numbered `0, 1, 2, ...` in text order (a node's results before its regions).

import type { Block, Graph, Node, Value } from '../graph.js';
import { INT_RE } from './format.js';

/** Assigns names; `get` names a value it has never seen (a use without a definition). */
export class ValueNamer {
  private readonly names = new Map<Value, string>();
  private readonly taken = new Set<string>();
  private counter = 0;
  private undefinedCount = 0;

  /** Names of `base`, as a set, made only when a new name must avoid them. */
  private baseTaken: Set<string> | undefined;

  /**
   * @param undefinedPrefix the name stem of values used but never defined; `null` numbers them.
   * @param base names fixed in advance (a whole graph's, to print one node of it): read in
   * place, never copied, so naming a node costs its own size, not the graph's.
   */
  constructor(private readonly undefinedPrefix: string | null = '<undefined ', private readonly base?: ReadonlyMap<Value, string>) {}

  private known(v: Value): string | undefined {
    return this.names.get(v) ?? this.base?.get(v);
  }

  private isTaken(name: string): boolean {
    if (this.taken.has(name)) return true;
    if (!this.base) return false;
    this.baseTaken ??= new Set(this.base.values());
    return this.baseTaken.has(name);
  }

  /**
   * Names a definition: `preferred` if free (else with a suffix `_1`, `_2`, ...), or the next
   * free number. A hint that is empty or all digits is ignored unless `exact` (graph inputs,
   * whose names are part of the graph's interface, keep any name).
   */
  define(v: Value, preferred?: string, exact = false): string {
    const known = this.known(v);
    if (known !== undefined) return known;
    const usable = preferred !== undefined && (exact || (preferred !== '' && !INT_RE.test(preferred)));
    const name = usable ? this.freeVariant(preferred) : this.nextNumber();
    this.names.set(v, name);
    this.taken.add(name);
    return name;
  }

  get(v: Value): string {
    const known = this.known(v);
    if (known !== undefined) return known;
    if (this.undefinedPrefix === null) return this.define(v);
    let name: string;
    do name = `${this.undefinedPrefix}${++this.undefinedCount}>`; while (this.isTaken(name));
    this.names.set(v, name);
    this.taken.add(name);
    return name;
  }

  /** Names every value defined in `block` and its regions, in text order. */
  defineBlock(block: Block): void {
    block.args.forEach((a) => this.define(a, a.hint));
    block.nodes.forEach((n) => this.defineNode(n));
  }

  defineNode(n: Node): void {
    n.outputs.forEach((o) => this.define(o));
    n.regions.forEach((r) => this.defineBlock(r));
  }

  /** The names given so far (those of `base` excluded). */
  snapshot(): ReadonlyMap<Value, string> { return new Map(this.names); }

  private nextNumber(): string {
    let name: string;
    do name = String(this.counter++); while (this.isTaken(name));
    return name;
  }

  private freeVariant(base: string): string {
    if (!this.isTaken(base)) return base;
    for (let k = 1; ; k++) if (!this.isTaken(`${base}_${k}`)) return `${base}_${k}`;
  }
}

/**
 * The printed name (without `%`) of every value defined in `g`, as `printGraph` writes them:
 * useful to name values in messages exactly as the text form does.
 *
 * @example
 * const names = nameValues(g);
 * throw new Error(`value %${names.get(v)} is not a tensor`);
 */
export function nameValues(g: Graph): Map<Value, string> {
  return graphNamer(g).snapshot() as Map<Value, string>; // snapshot() is a fresh copy
}

/** A namer with the graph's inputs and all its blocks defined. */
export function graphNamer(g: Graph): ValueNamer {
  const namer = new ValueNamer();
  g.inputs.forEach((i) => namer.define(i.value, i.name, true));
  namer.defineBlock(g.body);
  return namer;
}
