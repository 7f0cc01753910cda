// Module scopes of eager calls (`features.0`) for profilers. Invariant: while no listener is
// attached, nothing wraps any forward (the only cost is one Set.add per module constructed);
// while one is attached, the prototype `forward` of every Module class seen is wrapped so a call
// pushes the module's path relative to the outermost module being called (found through the
// caller's namedModules, cached per pair), and the listener hears each enter and exit. A
// `super.forward` call of the same instance pushes nothing.

export interface ScopedModule {
  forward(...args: unknown[]): unknown;
  namedModules(): [string, ScopedModule][];
}

/** Hears each module call: its path ('' for the outermost) and class name. */
export interface ModuleScopeListener {
  enter(path: string, className: string): void;
  exit(path: string, className: string): void;
}

const classes = new Set<abstract new (...a: never[]) => unknown>();
const stack: { module: ScopedModule; path: string }[] = [];
const originals = new Map<object, (...args: unknown[]) => unknown>();
const relative = new WeakMap<ScopedModule, WeakMap<ScopedModule, string>>();
let listener: ModuleScopeListener | null = null;

/** @internal called by Module's constructor with `new.target`. */
export function noteModuleClass(cls: abstract new (...a: never[]) => unknown): void {
  // A class and its ancestors (an inherited forward lives on an abstract base's prototype).
  for (let c = cls; c && c !== Function.prototype && !classes.has(c); c = Object.getPrototypeOf(c) as typeof cls) {
    classes.add(c);
    if (listener) wrapClass(c);
  }
}

/** The path of `child` inside `parent` ('?' when it is not one of its modules). */
function pathIn(parent: ScopedModule, child: ScopedModule): string {
  let m = relative.get(parent);
  if (!m) relative.set(parent, (m = new WeakMap()));
  let p = m.get(child);
  if (p === undefined) {
    p = parent.namedModules().find(([, c]) => c === child)?.[0] ?? child.constructor.name;
    m.set(child, p);
  }
  return p;
}

function wrapClass(cls: abstract new (...a: never[]) => unknown): void {
  const proto = cls.prototype as Record<string, unknown>;
  const own = Object.getOwnPropertyDescriptor(proto, 'forward');
  if (!own || typeof own.value !== 'function' || originals.has(proto)) return;
  const original = own.value as (...args: unknown[]) => unknown;
  originals.set(proto, original);
  proto.forward = function scopedForward(this: ScopedModule, ...args: unknown[]) {
    const top = stack[stack.length - 1];
    if (!listener || top?.module === this) return original.apply(this, args);
    const path = top ? [top.path, pathIn(top.module, this)].filter(Boolean).join('.') : '';
    const name = this.constructor.name;
    stack.push({ module: this, path });
    listener.enter(path, name);
    try {
      return original.apply(this, args);
    } finally {
      stack.pop();
      listener?.exit(path, name);
    }
  };
}

/** The path of the module call running now ('' outside modules or for the outermost). */
export function currentModuleScope(): string {
  return stack.length ? stack[stack.length - 1].path : '';
}

/** Attaches `l` (wrapping every Module class's forward); the returned function detaches and unwraps. */
export function attachModuleScopes(l: ModuleScopeListener): () => void {
  if (listener) throw new Error('module scopes: a profiler is already attached; stop it before starting another');
  listener = l;
  for (const c of classes) wrapClass(c);
  return () => {
    listener = null;
    for (const [proto, original] of originals) (proto as Record<string, unknown>).forward = original;
    originals.clear();
  };
}
