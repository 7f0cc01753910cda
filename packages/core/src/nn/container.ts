// Containers: Sequential, ModuleList, ModuleDict. Invariant: their members are ordinary fields of
// the module ('0', '1', … for Sequential/ModuleList, the keys for ModuleDict), so state dict keys,
// traversal and the compiler's view are the same as for any other module.

import { Module } from './module.js';

function checkModule(where: string, m: unknown): Module {
  if (!(m instanceof Module)) throw new Error(`${where}: expected an nn.Module, got ${m === null ? 'null' : typeof m}`);
  return m;
}

/** Index `i` (negative counts from the end) into a list of length `n`. */
function wrapIndex(where: string, i: number, n: number): number {
  if (!Number.isInteger(i) || i < -n || i >= n) throw new RangeError(`${where}: index ${i} is out of range for ${n} modules`);
  return i < 0 ? i + n : i;
}

/** Numbered members ('0', '1', …) in order. */
function numbered(m: Module): Module[] {
  const out: Module[] = [];
  for (let i = 0; ; i++) {
    const v: unknown = Object.prototype.hasOwnProperty.call(m, String(i)) ? Reflect.get(m, String(i)) : undefined;
    if (!(v instanceof Module)) return out;
    out.push(v);
  }
}

/**
 * Modules applied one after another: `forward(x)` is `mN(…m1(m0(x)))`. Built from modules
 * (keyed '0', '1', …) or from a record of named modules.
 * @example new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 1))
 */
export class Sequential extends Module {
  constructor(...mods: Module[] | [Record<string, Module>]) {
    super();
    if (mods.length === 1 && !(mods[0] instanceof Module)) {
      for (const [k, m] of Object.entries(mods[0])) this.addModule(k, checkModule(`Sequential: entry '${k}'`, m));
    } else {
      mods.forEach((m, i) => this.addModule(String(i), checkModule(`Sequential: argument ${i}`, m)));
    }
  }
  /** The members with their keys, in order (named members included). */
  #entries(): [string, Module][] {
    const out: [string, Module][] = [];
    for (const k of this.memberNames()) {
      const v: unknown = Reflect.get(this, k);
      if (v instanceof Module) out.push([k, v]);
    }
    return out;
  }
  #list(): Module[] { return this.#entries().map(([, m]) => m); }
  get length(): number { return this.#list().length; }
  /** The i-th module (negative from the end). */
  get(i: number): Module {
    const l = this.#list();
    return l[wrapIndex('Sequential.get', i, l.length)];
  }
  /** Appends a module under key `String(length)` as PyTorch does, or — when a slice kept higher
   * keys and that key is taken — under the next number after the largest; never replaces a member.
   * Returns this. */
  append(m: Module): this {
    const entries = this.#entries();
    let key = String(entries.length);
    if (entries.some(([k]) => k === key)) {
      const numbers = entries.map(([k]) => k).filter((k) => /^(0|[1-9][0-9]*)$/.test(k)).map(Number);
      key = String(Math.max(-1, ...numbers) + 1);
    }
    this.addModule(key, checkModule('Sequential.append', m));
    return this;
  }
  /**
   * A new Sequential with modules start..end (positions, negative from the end; shared, not
   * copied) under their ORIGINAL keys, as PyTorch's `seq[1:]` keeps its OrderedDict keys: the
   * slice's state dict keys are the original model's (`classifier.1.weight`), so weights saved
   * from either load into the other by key.
   * @example new nn.Sequential(new nn.Dropout(), new nn.Linear(4, 2)).slice(1).stateDict() // keys '1.weight', '1.bias'
   */
  slice(start?: number, end?: number): Sequential {
    const out = new Sequential();
    for (const [k, m] of this.#entries().slice(start, end)) out.addModule(k, m);
    return out;
  }
  /** The members with their keys, in order (a slice keeps its original keys). */
  namedMembers(): [string, Module][] { return this.#entries(); }
  [Symbol.iterator](): Iterator<Module> { return this.#list()[Symbol.iterator](); }

  // Typed for the common case of tensors in, tensors out; any value is passed along as is.
  forward(input: any): any {
    let x: unknown = input;
    for (const m of this.#list()) x = m.forward(x);
    return x;
  }
}

/**
 * A list of modules that registers them as children ('0', '1', …); it has no forward.
 * @example this.blocks = new nn.ModuleList([1, 2, 3].map(() => new Block()));
 */
export class ModuleList extends Module {
  constructor(modules: Iterable<Module> = []) {
    super();
    for (const m of modules) this.append(m);
  }
  get length(): number { return numbered(this).length; }
  get(i: number): Module {
    const l = numbered(this);
    return l[wrapIndex('ModuleList.get', i, l.length)];
  }
  set(i: number, m: Module): void {
    this.addModule(String(wrapIndex('ModuleList.set', i, this.length)), checkModule('ModuleList.set', m));
  }
  append(m: Module): this {
    this.addModule(String(this.length), checkModule('ModuleList.append', m));
    return this;
  }
  extend(modules: Iterable<Module>): this {
    for (const m of modules) this.append(m);
    return this;
  }
  /** Inserts before index `i` (as Python's list.insert), renumbering the rest. */
  insert(i: number, m: Module): void {
    const l = numbered(this);
    const at = Math.min(Math.max(i < 0 ? i + l.length : i, 0), l.length);
    l.splice(at, 0, checkModule('ModuleList.insert', m));
    l.forEach((mod, k) => this.addModule(String(k), mod));
  }
  [Symbol.iterator](): Iterator<Module> { return numbered(this)[Symbol.iterator](); }
  forward(): never {
    throw new Error('ModuleList has no forward(): iterate over it and call the modules in your own forward()');
  }
}

/** The modules of a ModuleDict by key (what its constructor was given). */
export type ModuleRecord = Record<string, Module>;

/**
 * Named modules in insertion order (keys become state dict prefixes); it has no forward.
 * Built from a record, its keys are typed: `dict.cls`, `dict['cls']` and `dict.get('cls')` are
 * the module under that key, and `dict[k]` for `k` of `dict.keys()` is one of its modules.
 * @example this.heads = new nn.ModuleDict({ cls: new nn.Linear(8, 3), box: new nn.Linear(8, 4) });
 */
export class ModuleDictBase<T extends ModuleRecord = ModuleRecord> extends Module {
  #order: string[] = [];
  constructor(modules: T | Iterable<[string, Module]> = {} as T) {
    super();
    this.update(modules);
  }
  protected override memberNames(): string[] {
    // Object.keys would list integer-like keys first; keep insertion order instead.
    const mine = new Set(this.#order);
    return [...Object.keys(this).filter((k) => !mine.has(k)), ...this.#order];
  }
  get length(): number { return this.#order.length; }
  has(key: string): boolean { return this.#order.includes(key); }
  get<K extends keyof T & string>(key: K): T[K];
  get(key: string): Module;
  get(key: string): Module {
    if (!this.has(key)) throw new Error(`ModuleDict.get: no module under key '${key}' (keys: ${this.#order.join(', ')})`);
    return checkModule('ModuleDict.get', Reflect.get(this, key));
  }
  set(key: string, m: Module): this {
    this.addModule(key, checkModule(`ModuleDict.set('${key}')`, m));
    if (!this.#order.includes(key)) this.#order.push(key);
    return this;
  }
  /** Removes and returns the module under `key`. */
  pop(key: string): Module {
    const m = this.get(key);
    Reflect.deleteProperty(this, key);
    this.#order = this.#order.filter((k) => k !== key);
    return m;
  }
  delete(key: string): boolean {
    if (!this.has(key)) return false;
    this.pop(key);
    return true;
  }
  clear(): void { for (const k of [...this.#order]) this.pop(k); }
  update(modules: ModuleRecord | Iterable<[string, Module]>): this {
    const entries = Symbol.iterator in modules ? [...(modules as Iterable<[string, Module]>)] : Object.entries(modules);
    for (const [k, m] of entries) this.set(k, m);
    return this;
  }
  keys(): (keyof T & string)[] { return [...this.#order]; }
  values(): T[keyof T][] { return this.#order.map((k) => this.get(k) as T[keyof T]); }
  entries(): [keyof T & string, T[keyof T]][] { return this.#order.map((k) => [k, this.get(k) as T[keyof T]]); }
  /** Same as entries() (PyTorch's name). */
  items(): [keyof T & string, T[keyof T]][] { return this.entries(); }
  [Symbol.iterator](): Iterator<keyof T & string> { return this.keys()[Symbol.iterator](); }
  forward(): never {
    throw new Error("ModuleDict has no forward(): call its modules (dict.get('name').forward(x)) in your own forward()");
  }
}
// Errors, toString() and the compiler name the class as users write it.
Object.defineProperty(ModuleDictBase, 'name', { value: 'ModuleDict' });

/** A ModuleDict; with a record type `T` of its modules, its keys are also typed properties. */
export type ModuleDict<T extends ModuleRecord = ModuleRecord> = string extends keyof T ? ModuleDictBase<T> : ModuleDictBase<T> & Readonly<T>;

export const ModuleDict: {
  new <T extends ModuleRecord = ModuleRecord>(modules?: T | Iterable<[string, Module]>): ModuleDict<T>;
  readonly prototype: ModuleDictBase;
} = ModuleDictBase as never;
