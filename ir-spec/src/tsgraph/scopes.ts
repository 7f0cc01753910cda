// SSA visibility while walking a graph in program order, shared by the encoder and the decoder
// so that both accept exactly the same graphs. Invariant: a value is visible from its definition
// to the end of its block, including inside the regions of later nodes of that block; a region's
// values are invisible outside it; every key is defined at most once in the whole graph.

export class Scopes<K, V> {
  private readonly stack: Map<K, V>[] = [new Map()];
  private readonly everDefined = new Set<K>();

  push(): void { this.stack.push(new Map()); }
  pop(): void { this.stack.pop(); }

  /** Defines `key` in the innermost scope; false if it was already defined anywhere. */
  define(key: K, value: V): boolean {
    if (this.everDefined.has(key)) return false;
    this.everDefined.add(key);
    this.stack[this.stack.length - 1].set(key, value);
    return true;
  }

  /** The visible definition of `key`, or undefined. */
  lookup(key: K): V | undefined {
    for (let i = this.stack.length - 1; i >= 0; i--) {
      const v = this.stack[i].get(key);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  /** Whether `key` was defined anywhere so far (visible or not). */
  wasDefined(key: K): boolean { return this.everDefined.has(key); }
}
