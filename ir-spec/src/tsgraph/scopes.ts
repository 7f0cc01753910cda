// SSA visibility while walking a graph in program order, shared by the encoder and the decoder
// so that both accept exactly the same graphs. Invariant: a value is visible from its definition
// to the end of its block, including inside the regions of later nodes of that block; a region's
// values are invisible outside it; every key is defined at most once in the whole graph. One map
// holds every key defined (a lookup is one probe, whatever the nesting); closing a scope marks its
// keys hidden, so the outermost block's keys are stored once.

export class Scopes<K, V> {
  /** Every key defined so far: its value while visible, HIDDEN once its scope closed (one probe per call). */
  private readonly defined = new Map<K, V | typeof HIDDEN>();
  /** Keys defined in each open inner scope (the outermost scope is never closed, so not listed). */
  private readonly inner: K[][] = [];

  push(): void { this.inner.push([]); }

  pop(): void {
    const keys = this.inner.pop();
    if (!keys) return;
    for (const k of keys) this.defined.set(k, HIDDEN);
  }

  /** Defines `key` in the innermost scope; false if it was already defined anywhere. */
  define(key: K, value: V): boolean {
    if (this.defined.has(key)) return false;
    this.defined.set(key, value);
    if (this.inner.length) this.inner[this.inner.length - 1].push(key);
    return true;
  }

  /** The visible definition of `key`, or undefined. */
  lookup(key: K): V | undefined {
    const v = this.defined.get(key);
    return v === HIDDEN ? undefined : v;
  }

  /** Whether `key` was defined anywhere so far (visible or not). */
  wasDefined(key: K): boolean { return this.defined.has(key); }
}

/** The mark of a key whose scope closed. */
const HIDDEN: unique symbol = Symbol('hidden');
