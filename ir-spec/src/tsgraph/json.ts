// Canonical JSON for the header, and the attribute number escape. Invariant: the same value
// always gives the same text (object keys sorted by UTF-16 code units, no whitespace, numbers
// as JavaScript prints them), so the same graph gives byte-identical files.
//
// JSON has no NaN, Infinity or -0, but attributes may hold them (a `-inf` mask fill, say):
// such a number is written as the object `{"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}`.
// Attribute objects with any key starting with `$` are therefore not writable.

import type { AttrValue, Attrs } from '../ir/graph.js';
import { MAX_JSON_DEPTH } from './format.js';

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [k: string]: JsonValue };

const SPECIAL: Readonly<Record<string, number>> = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 };

/** Thrown by `canonicalJson` and `encodeAttrs` for a value JSON cannot carry; `path` names it. */
export class JsonValueError extends Error {
  constructor(readonly path: string, reason: string) {
    super(`${path}: ${reason}`);
    this.name = 'JsonValueError';
  }
}

/**
 * Canonical JSON text of a JSON-compatible value.
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [true, null] }); // '{"a":[true,null],"b":1}'
 * ```
 * Keys whose value is `undefined` are skipped, as JSON.stringify does. `path` names the root in
 * error messages. Linear in the value's size: one output array, and the path of a bad value is
 * built from a key stack only when it is reported.
 */
export function canonicalJson(v: unknown, path = '$'): string {
  const out: string[] = [];
  const keys: (string | number)[] = [];
  const where = () => path + keys.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');
  const write = (v: unknown): void => {
    if (v === null || typeof v === 'boolean' || typeof v === 'string') { out.push(JSON.stringify(v)); return; }
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new JsonValueError(where(), `${v} cannot be written as JSON`);
      out.push(JSON.stringify(v));
      return;
    }
    // The same bound readers apply (checkJsonShape), so the writer never makes an unreadable file.
    if (typeof v === 'object' && keys.length >= MAX_JSON_DEPTH) throw new JsonValueError(where(), `nests deeper than ${MAX_JSON_DEPTH} levels (a cycle, or regions nested too deep)`);
    if (Array.isArray(v)) {
      out.push('[');
      for (let i = 0; i < v.length; i++) {
        if (i) out.push(',');
        keys.push(i); write(v[i]); keys.pop();
      }
      out.push(']');
      return;
    }
    if (isPlainObject(v)) {
      out.push('{');
      let first = true;
      for (const k of Object.keys(v).sort(compareCodeUnits)) {
        if (v[k] === undefined) continue;
        if (k === '__proto__') throw new JsonValueError(where(), 'the key "__proto__" cannot be written (readers refuse it)');
        out.push(first ? `${JSON.stringify(k)}:` : `,${JSON.stringify(k)}:`);
        first = false;
        keys.push(k); write(v[k]); keys.pop();
      }
      out.push('}');
      return;
    }
    throw new JsonValueError(where(), `a ${typeof v} cannot be written as JSON (expected null, boolean, number, string, array or plain object)`);
  };
  write(v);
  return out.join('');
}

/** Sorting by UTF-16 code units: locale-independent, hence deterministic everywhere. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Attributes in their JSON form (special numbers escaped). */
export function encodeAttrs(attrs: Attrs, path: string): JsonValue {
  return encodeAttr(attrs, path);
}

function encodeAttr(v: AttrValue | undefined, path: string): JsonValue {
  if (v === undefined) throw new JsonValueError(path, 'undefined is not an attribute value (use null)');
  if (typeof v === 'number') {
    if (Object.is(v, -0)) return { $num: '-0' };
    if (Number.isNaN(v)) return { $num: 'NaN' };
    if (v === Infinity) return { $num: 'Infinity' };
    if (v === -Infinity) return { $num: '-Infinity' };
    return v;
  }
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map((e: AttrValue, i) => encodeAttr(e, `${path}[${i}]`));
  if (!isPlainObject(v)) throw new JsonValueError(path, 'attribute objects must be plain objects');
  return Object.fromEntries(Object.entries(v).map(([k, e]) => {
    if (k.startsWith('$')) throw new JsonValueError(`${path}.${k}`, "attribute keys starting with '$' are reserved by the .tsgraph format");
    return [k, encodeAttr(e as AttrValue, `${path}.${k}`)];
  }));
}

/**
 * Attributes back from their JSON form; throws JsonValueError on a malformed `$num`. `path`
 * names the attributes in messages (a function: spelled out only for an error).
 */
export function decodeAttrs(v: Readonly<Record<string, unknown>>, path: string | (() => string)): Attrs {
  const keys = Object.keys(v);
  // Most nodes have none: one shared, frozen empty object for all of them.
  if (keys.length === 0) return NO_ATTRS;
  const at = typeof path === 'string' ? () => path : path;
  return Object.fromEntries(keys.map((k) => [k, decodeAttr(v[k], () => `${at()}.${k}`)]));
}

const NO_ATTRS: Attrs = Object.freeze({});

function decodeAttr(v: unknown, path: () => string): AttrValue {
  if (v === null || typeof v === 'boolean' || typeof v === 'string' || typeof v === 'number') return v;
  if (Array.isArray(v)) return v.map((e, i) => decodeAttr(e, () => `${path()}[${i}]`));
  if (!isPlainObject(v)) throw new JsonValueError(path(), 'not a JSON value');
  const keys = Object.keys(v);
  if (keys.some((k) => k.startsWith('$'))) {
    const s = v.$num;
    if (keys.length !== 1 || typeof s !== 'string' || !Object.hasOwn(SPECIAL, s)) {
      throw new JsonValueError(path(), `an object with '$' keys must be exactly {"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}, got ${JSON.stringify(v).slice(0, 80)}`);
    }
    return SPECIAL[s];
  }
  return Object.fromEntries(keys.map((k) => [k, decodeAttr(v[k], () => `${path()}.${k}`)]));
}

/**
 * Checks parsed JSON before any recursive code sees it: nesting at most `maxDepth`, and no
 * `__proto__` keys (which would alter prototypes when copied by assignment). Iterative, so a
 * hostile nesting cannot overflow the stack; only containers are visited, and a path is spelled
 * out only for the problem found. Returns a problem description, or null.
 */
export function checkJsonShape(root: unknown, maxDepth: number): string | null {
  return jsonShapeOk(root, maxDepth) ? null : jsonShapeProblem(root, maxDepth);
}

/** checkJsonShape's walk without paths: two flat stacks, no object per container. */
function jsonShapeOk(root: unknown, maxDepth: number): boolean {
  const values: unknown[] = [root];
  const depths: number[] = [0];
  while (values.length) {
    const v = values.pop(), depth = depths.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= maxDepth) return false;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        const e: unknown = v[i];
        if (typeof e === 'object' && e !== null) { values.push(e); depths.push(depth + 1); }
      }
    } else {
      // for-in allocates no key array per object; parsed JSON objects inherit no enumerable keys.
      for (const k in v) {
        if (k === '__proto__') return false;
        const e = (v as Record<string, unknown>)[k];
        if (typeof e === 'object' && e !== null) { values.push(e); depths.push(depth + 1); }
      }
    }
  }
  return true;
}

/** The first problem checkJsonShape reports, with its path (run only when there is one). */
function jsonShapeProblem(root: unknown, maxDepth: number): string | null {
  interface Entry { readonly v: object; readonly depth: number; readonly parent: Entry | null; readonly key: string | number }
  const pathOf = (e: Entry | null, last?: string): string => {
    const keys: (string | number)[] = last === undefined ? [] : [last];
    for (let at = e; at && at.parent; at = at.parent) keys.push(at.key);
    return `$${keys.reverse().map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('')}`;
  };
  const stack: Entry[] = [];
  const push = (v: unknown, depth: number, parent: Entry | null, key: string | number) => {
    if (typeof v === 'object' && v !== null) stack.push({ v, depth, parent, key });
  };
  push(root, 0, null, '$');
  while (stack.length) {
    const e = stack.pop()!;
    if (e.depth >= maxDepth) return `${pathOf(e)}: JSON nests deeper than ${maxDepth} levels`;
    if (Array.isArray(e.v)) {
      for (let i = e.v.length - 1; i >= 0; i--) push(e.v[i], e.depth + 1, e, i);
    } else {
      for (const k of Object.keys(e.v)) {
        if (k === '__proto__') return `${pathOf(e, k)}: the key "__proto__" is not allowed`;
        push((e.v as Record<string, unknown>)[k], e.depth + 1, e, k);
      }
    }
  }
  return null;
}
