// SSA visibility while walking a graph in program order, shared by the encoder and the decoder
// so that both accept exactly the same graphs. Invariant: a value is visible from its definition
// to the end of its block, including inside the regions of later nodes of that block; a region's
// values are invisible outside it; every key is defined at most once in the whole graph. One map
// holds the visible keys (a lookup is one probe, whatever the nesting); closing a scope moves its
// keys to the set of hidden ones, so the outermost block's keys are stored once.

export class Scopes<K, V> {
  private readonly visible = new Map<K, V>();
  private readonly hidden = new Set<K>();
  /** Keys defined in each open inner scope (the outermost scope is never closed, so not listed). */
  private readonly inner: K[][] = [];

  push(): void { this.inner.push([]); }

  pop(): void {
    const keys = this.inner.pop();
    if (!keys) return;
    for (const k of keys) { this.visible.delete(k); this.hidden.add(k); }
  }

  /** Defines `key` in the innermost scope; false if it was already defined anywhere. */
  define(key: K, value: V): boolean {
    if (this.visible.has(key) || this.hidden.has(key)) return false;
    this.visible.set(key, value);
    if (this.inner.length) this.inner[this.inner.length - 1].push(key);
    return true;
  }

  /** The visible definition of `key`, or undefined. */
  lookup(key: K): V | undefined { return this.visible.get(key); }

  /** Whether `key` was defined anywhere so far (visible or not). */
  wasDefined(key: K): boolean { return this.visible.has(key) || this.hidden.has(key); }
}
