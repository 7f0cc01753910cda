// Guards: the module attributes a compiled graph was specialized on, captured with the values
// they had, checked cheaply before the graph is reused. jit.script builds them from the
// scripter's reads (ModuleRead), jit.trace carries those of the scripted graphs it inlines, and
// OptimizedModule keys its optimized graphs on them; jit.compile will reuse the same pieces.
// Invariant: a guard set holds exactly when every attribute it captured still has the captured
// value (numbers, strings, booleans, arrays by value; modules and tensors by identity), so a
// graph whose guards hold computes what the eager module computes now.

import { nn, Tensor } from '@kiln/core';
import type { ModuleRead, ScriptableModule } from '@kiln/compiler';

/** A failed guard: which attribute changed, and how. */
export interface GuardFailure {
  /** The attribute as written in the model's code: `this.mode`, `this.head.training`. */
  readonly attribute: string;
  readonly was: string;
  readonly now: string;
}

/** One captured fact about a module. */
export interface Guard {
  /** What it guards, as jit.compile's explain() lists it (`this.mode`). */
  readonly attribute?: string;
  /** The failure, or undefined while the fact still holds. */
  check(): GuardFailure | undefined;
}

/** The guards of one compiled graph; `failure()` is the first that no longer holds. */
export class GuardSet {
  static readonly empty = new GuardSet([]);
  constructor(readonly guards: readonly Guard[]) {}

  failure(): GuardFailure | undefined {
    for (const g of this.guards) {
      const f = g.check();
      if (f) return f;
    }
    return undefined;
  }

  holds(): boolean { return this.failure() === undefined; }

  /** core's tracer keeps guards of the graphs a trace inlines as this interface. */
  describeFailure(): string | undefined {
    const f = this.failure();
    return f && describeFailure(f);
  }

  and(other: GuardSet): GuardSet {
    if (!other.guards.length) return this;
    if (!this.guards.length) return other;
    return new GuardSet([...this.guards, ...other.guards]);
  }
}

/** `this.head.mode changed from "cls" to "seg"` */
export function describeFailure(f: GuardFailure): string {
  return `${f.attribute} changed from ${f.was} to ${f.now}`;
}

/**
 * Guards for the scripter's reads, capturing the current values; `moduleOf` maps a
 * ScriptableModule (the adapter the scripter saw) back to the object holding the attributes.
 */
export function guardsForReads(reads: readonly ModuleRead[], moduleOf: (m: ScriptableModule) => object | undefined): GuardSet {
  const guards: Guard[] = [];
  for (const r of reads) {
    const owner = moduleOf(r.mod);
    if (!owner) continue; // a traced submodule: its graph is fixed, its identity is guarded by its parent's field
    const at = r.path ? `this.${r.path}` : 'this';
    if (r.name === '#training') guards.push(valueGuard(`${at}.training`, () => (owner as nn.Module).training));
    else if (r.name === '#items') guards.push(valueGuard(`the modules of ${at}`, () => childrenOf(owner)));
    else if (r.name === '#children') guards.push(valueGuard(`the named children of ${at}`, () => namedChildrenOf(owner)));
    else if (r.name === '#state') guards.push(valueGuard(`the settings of the ${owner.constructor.name} layer ${at}`, () => stateOf(owner)));
    else {
      guards.push(valueGuard(`${at}.${r.name}`, () => Reflect.get(owner, r.name)));
      // A compiled submodule (a trace inlined by the scripter) brings the guards of its own graph.
      const inner = (Reflect.get(owner, r.name) as { current?: { guards?: unknown } } | undefined)?.current?.guards;
      if (inner instanceof GuardSet) guards.push(...inner.guards);
    }
  }
  return new GuardSet(guards);
}

/**
 * Holds while `read()` gives a value equal (see `same`) to the one it gives now.
 * @example
 * const g = new GuardSet([valueGuard('this.mode', () => model.mode)]);
 * model.mode = 'seg';
 * g.failure(); // { attribute: 'this.mode', was: '"cls"', now: '"seg"' }
 */
export function valueGuard(attribute: string, read: () => unknown): Guard {
  const seen = snapshot(read());
  return {
    attribute,
    check() {
      const now = read();
      return same(seen, now) ? undefined : { attribute, was: show(seen), now: show(now) };
    },
  };
}

/** A copy of a value as guards compare it: arrays and plain objects copied, the rest as is. */
function snapshot(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(snapshot);
  if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, snapshot(x)]));
  return v;
}

/** Primitives by Object.is, arrays and plain objects element-wise, everything else by identity. */
export function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && same(a[k], b[k]));
  }
  return false;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
}

/** A value as a guard failure shows it. */
export function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Tensor) return `a tensor of shape [${v.shape.join(',')}]`;
  if (v instanceof nn.Module) return `a ${v.constructor.name} module`;
  if (Array.isArray(v)) return v.length > 8 ? `an array of ${v.length}` : `[${v.map(show).join(', ')}]`;
  if (isPlainObject(v)) return `{ ${Object.entries(v).map(([k, x]) => `${k}: ${show(x)}`).join(', ')} }`;
  if (typeof v === 'function') return `the function ${v.name || '(anonymous)'}`;
  if (v && typeof v === 'object') return `a ${v.constructor?.name ?? 'object'}`;
  return String(v);
}

function childrenOf(m: object): readonly unknown[] {
  return m instanceof nn.Module ? m.children() : [];
}

/** Names and modules (a ModuleDict: its keys), for code unrolled over them. */
function namedChildrenOf(m: object): readonly unknown[] {
  return m instanceof nn.Module ? m.namedChildren().map(([k, c]) => [k, c]) : [];
}

/**
 * What a library layer recorded as one call depends on: for it and each submodule, the
 * training flag, every own field that is not a tensor or module (by value), and the children
 * (by identity). Parameters are copied into the graph when compiling, as jit.trace does.
 */
function stateOf(m: object): unknown[] {
  const out: unknown[] = [];
  const walk = (x: object) => {
    if (x instanceof nn.Module) out.push(x.training);
    for (const [k, v] of Object.entries(x)) {
      if (v instanceof Tensor) continue;
      if (v instanceof nn.Module) { out.push(k, v); walk(v); continue; }
      if (k.startsWith('_')) continue; // private registries (_parameters, _modules...) hold what is walked above
      if (typeof v !== 'function') out.push(k, v);
    }
  };
  walk(m);
  return out;
}

/**
 * Compiled values cached per key, each valid while its guards hold: `get` returns the first
 * entry whose guards hold. At most `limit` entries per key (the oldest goes first), so a value
 * that changes on every call (a counter read by forward) cannot grow the cache without bound.
 * @example
 * const cache = new GuardedCache<Graph>();
 * cache.set('f32[N,4]', guards, graph);
 * cache.get('f32[N,4]'); // graph while guards.holds(), else undefined (compile again)
 */
export class GuardedCache<T> {
  private readonly entries = new Map<string, { guards: GuardSet; value: T }[]>();
  constructor(private readonly limit = 8) {}

  get(key: string): T | undefined {
    return this.entries.get(key)?.find((e) => e.guards.holds())?.value;
  }

  set(key: string, guards: GuardSet, value: T): void {
    const list = this.entries.get(key) ?? [];
    list.unshift({ guards, value });
    if (list.length > this.limit) list.pop();
    this.entries.set(key, list);
  }
}
