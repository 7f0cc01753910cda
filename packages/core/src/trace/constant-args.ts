// Forward arguments that are not tensors (a number, a flag, a string, an options object): a
// trace records the run they selected, so they are constants of the trace, checked again on
// every call of the traced graph. Invariant: a constant argument holds no tensor and no
// function (their values could not be checked), and `sameConstant` is true exactly when a
// later argument equals the traced one (primitives by Object.is, arrays and plain objects
// element-wise).

import { Tensor } from '../tensor.js';
import { TraceError } from './tape.js';

/** A non-tensor argument of the traced run, baked into the graph. */
export interface ConstantArg {
  /** Its position among forward's arguments. */
  readonly index: number;
  /** The forward's parameter name at that position. */
  readonly name: string;
  readonly value: unknown;
}

/** Throws a TraceError when argument `index` cannot be a constant of the trace. */
export function checkConstantArg(value: unknown, index: number, name: string): void {
  const bad = (v: unknown, at: string): string | undefined => {
    if (v instanceof Tensor) return `holds a tensor at ${at}`;
    if (typeof v === 'function') return `holds a function at ${at}`;
    if (typeof v === 'symbol' || typeof v === 'bigint') return `is a ${typeof v} at ${at}`;
    if (Array.isArray(v)) return v.map((x, i) => bad(x, `${at}[${i}]`)).find(Boolean);
    if (v && typeof v === 'object') {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return `is a ${v.constructor?.name ?? 'class instance'} at ${at}`;
      return Object.entries(v).map(([k, x]) => bad(x, `${at}.${k}`)).find(Boolean);
    }
    return undefined;
  };
  const why = bad(value, name);
  if (why) {
    throw new TraceError(`jit.trace: argument ${index} ('${name}') ${why}; a non-tensor argument becomes a constant of the trace, ` +
      'so it may hold only numbers, booleans, strings, null and arrays or plain objects of them. Pass tensors as separate arguments ' +
      '(or compile with jit.script).');
  }
}

/** Primitives by Object.is; arrays and plain objects element-wise. */
export function sameConstant(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameConstant(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && sameConstant((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return false;
}

/** A constant as messages show it (JSON, with undefined kept). */
export function showConstant(v: unknown): string {
  if (v === undefined) return 'undefined';
  try {
    return JSON.stringify(v, (_, x) => (x === undefined ? '__undefined__' : typeof x === 'number' && !Number.isFinite(x) ? String(x) : x)).replace(/"__undefined__"/g, 'undefined');
  } catch {
    return String(v);
  }
}
