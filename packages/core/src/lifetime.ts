// Deterministic tensor lifetimes: t.dispose(), tidy(fn) and keep(t) (tfjs's practice, adapted to
// storages shared by views). Invariants: a storage counts the Tensor objects made on it (`refs`);
// disposing a tensor drops its count, and the storage's GPU buffer goes back to the pool (`free`)
// only when the count reaches 0 — disposing a view never frees what another live tensor reads.
// A tensor made while a scope is open belongs to the innermost scope, which disposes it when it
// ends unless it is returned (it then moves to the enclosing scope), kept (keep()), or saved for
// backward by the graph of a returned tensor. Tensors never disposed go back when JavaScript
// collects their storage (device.ts's FinalizationRegistry, the safety net).

import type { Node } from './autograd/node.js';
import type { Storage, Tensor } from './tensor.js';

/** A disposed tensor was used (after t.dispose(), or after the tidy() that made it ended). */
export class DisposedError extends Error {
  override readonly name = 'DisposedError';
}

/** The tensors made while a scope was open (those still `_scope === this` belong to it). */
export interface Scope { readonly tensors: Tensor[] }

/** Open scopes, innermost last; null while tracking is suspended (user hooks inside backward). */
const scopes: (Scope | null)[] = [];
let made = 0;

/** @internal counts `t` on its storage and puts it in the innermost open scope (Tensor's constructor). */
export function adopt(t: Tensor): void {
  const s = t._storage;
  s.refs = (s.refs ?? 0) + 1;
  t._seq = made++;
  const top = scopes.length ? scopes[scopes.length - 1] : null;
  if (top) { top.tensors.push(t); t._scope = top; }
}

/** @internal how many tensors were made so far (a tensor with `_seq >= mark` was made after the mark). */
export function tensorsMade(): number { return made; }

/** @internal drops one count of `s`; at 0 the storage is dead and its buffer goes back to the pool. */
export function releaseStorage(s: Storage): void {
  if (s.refs === undefined || --s.refs > 0) return;
  s.disposed = true;
  s.free?.();
}

/** @internal disposes `t` (idempotent): it can no longer be used, and its storage loses a count. */
export function disposeTensor(t: Tensor): void {
  if (t._disposed) return;
  t._disposed = true;
  t._scope = null;
  releaseStorage(t._storage);
}

/** @internal the error for a use of disposed `t` at `where`. */
export function disposedError(t: Tensor, where: string): DisposedError {
  return new DisposedError(`${where}: this tensor (shape [${t.shape.join(',')}], ${t.dtype}) was disposed — by t.dispose() or at the end of the tidy() that made it; ` +
    'return it from tidy() or keep() it to use it afterwards');
}

/**
 * Marks `t` as outliving every tidy() scope (tfjs's keep): no scope disposes it; dispose() still
 * does. Returns `t`. @example const w = tidy(() => keep(randn([3])).mul(2));
 */
export function keep<T extends Tensor>(t: T): T {
  t._scope = null;
  return t;
}

/** @internal opens a scope; close it with closeScope (a try/finally pair). */
export function openScope(): Scope {
  const s: Scope = { tensors: [] };
  scopes.push(s);
  return s;
}

/**
 * @internal closes the innermost scope `s`: its tensors in `results` (and what their autograd
 * graphs saved for backward) move to the enclosing scope; every other tensor of it is disposed.
 */
export function closeScope(s: Scope, results: Iterable<Tensor>): void {
  if (scopes[scopes.length - 1] !== s) throw new Error('tidy: scopes closed out of order (a tidy() callback must not leave a scope open)');
  scopes.pop();
  const live = new Set<Tensor>();
  for (const r of results) withGraph(r, live);
  const parent = scopes.length ? scopes[scopes.length - 1] : null;
  for (const t of s.tensors) {
    if (t._scope !== s) continue; // disposed, kept, or moved already
    if (!live.has(t)) disposeTensor(t);
    else if (parent) { parent.tensors.push(t); t._scope = parent; } else t._scope = null;
  }
}

/** `t` and every tensor the autograd graph behind it still needs for backward (saved tensors, leaves). */
function withGraph(t: Tensor, out: Set<Tensor>): void {
  if (out.has(t)) return;
  out.add(t);
  const seen = new Set<Node>();
  const stack: Node[] = t.gradFn ? [t.gradFn] : [];
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    for (const s of n.savedTensors()) out.add(s);
    for (const e of n.edges) {
      if (!e) continue;
      if ('node' in e) stack.push(e.node); else out.add(e.leaf);
    }
  }
}

/** @internal runs `fn` with no scope collecting the tensors it makes (user hooks called by backward). */
export function untracked<R>(fn: () => R): R {
  scopes.push(null);
  try { return fn(); } finally { scopes.pop(); }
}

/** The tensors of a tidy() result: a tensor, or arrays / plain objects holding tensors. */
function tensorsIn(v: unknown, out: Tensor[], isTensor: (x: unknown) => x is Tensor, depth = 0): Tensor[] {
  if (isTensor(v)) out.push(v);
  else if (depth < 8 && Array.isArray(v)) for (const x of v) tensorsIn(x, out, isTensor, depth + 1);
  else if (depth < 8 && v !== null && typeof v === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(v))) {
    for (const x of Object.values(v)) tensorsIn(x, out, isTensor, depth + 1);
  }
  return out;
}

let isTensorFn: ((x: unknown) => x is Tensor) | null = null;
/** @internal tensor.ts hands over its instanceof test (this file cannot import the class). */
export function registerTensorTest(f: (x: unknown) => x is Tensor): void { isTensorFn = f; }

/**
 * Runs `fn` and disposes every tensor it made except those it returns (a tensor, or arrays /
 * plain objects of tensors), those kept with keep(), and what the autograd graph of a returned
 * tensor still needs for backward — tfjs's tidy: GPU buffers go back to the pool at once instead
 * of when JavaScript collects the tensors. Tidies nest; gradients that backward() accumulates into
 * `.grad` and optimizer state are kept automatically. `fn` must be synchronous.
 * @example
 * const loss = tidy(() => { opt.zeroGrad(); const l = F.crossEntropy(model.forward(x), y); l.backward(); opt.step(); return l; });
 * console.log(await loss.itemAsync()); loss.dispose();
 */
export function tidy<T>(fn: () => T): T {
  if (typeof fn !== 'function') throw new TypeError(`tidy(fn): fn must be a function, got ${typeof fn}`);
  const s = openScope();
  let result: T;
  try {
    result = fn();
  } catch (e) {
    closeScope(s, []);
    throw e;
  }
  if (result instanceof Promise) {
    closeScope(s, []);
    throw new TypeError('tidy(fn): fn returned a Promise; tidy() needs a synchronous function (await outside it: `const y = tidy(() => f(x)); await y.toArrayAsync()`)');
  }
  closeScope(s, tensorsIn(result, [], isTensorFn!));
  return result;
}
