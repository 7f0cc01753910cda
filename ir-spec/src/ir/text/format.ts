// Lexical forms shared by the printer and the parser: names, numbers, strings, types and
// attribute values. Invariant: every function here is total (it prints any input, however
// malformed, since error messages print graphs) and its output reads back through lexer.ts to
// the same text; a value that has no bare form is written as a JSON string.

import type { Dim } from '../../shape.js';
import type { AttrValue, Attrs } from '../graph.js';
import { DTYPE_SHORT, type IRType } from '../types.js';

/** Words with a meaning of their own; an op, output or key spelled like one is quoted. */
export const KEYWORDS: ReadonlySet<string> = new Set([
  'graph', 'param', 'none', 'yield', 'return', 'metadata', 'true', 'false', 'null', 'inf', 'nan',
]);

/** A bare identifier: op names, attribute and metadata keys, output names, dtypes. */
export const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_.]*$/;
/** The characters of a bare `%value` or `@graph` name (numbered values are all digits). */
export const NAME_CHAR_RE = /[A-Za-z0-9_.$-]/;
const NAME_RE = /^[A-Za-z0-9_.$-]+$/;
const DIM_CHAR_RE = /[A-Za-z0-9_*+\-/()%.]/;
export const INT_RE = /^-?\d+$/;

/**
 * The end of a bare dim starting at `start`: letters, digits and `_ * + - / ( ) % .`, plus
 * bracketed slices (`T[1::1]`, `(N*64)[:-1:1]`) in which `:` may appear. It stops at `,`,
 * at a `]` that closes nothing, or at any other character (whitespace included).
 */
export function scanBareDim(text: string, start: number): number {
  let i = start, depth = 0;
  for (; i < text.length; i++) {
    const c = text[i];
    if (c === '[') depth++;
    else if (c === ']') { if (depth === 0) break; depth--; }
    else if (!(DIM_CHAR_RE.test(c) || (c === ':' && depth > 0))) break;
  }
  return depth === 0 ? i : start;
}

export const quote = (s: string): string => JSON.stringify(s);

/** An identifier-like word: bare when it lexes as one identifier and is no keyword. */
export function printWord(s: string): string {
  return IDENT_RE.test(s) && !KEYWORDS.has(s) ? s : quote(s);
}

/** `%x`, `%0`, `%conv.weight`, or `%"odd name"`. */
export function printValueName(s: string): string { return `%${NAME_RE.test(s) ? s : quote(s)}`; }

/** `@cnn` or `@"odd name"`. */
export function printGraphName(s: string): string { return `@${NAME_RE.test(s) ? s : quote(s)}`; }

/**
 * A number that reads back to the identical float64 (so also float32) value: the shortest
 * round-trip decimal (`0.1`, `0.00001`, `-1000000000`, `1e+21`), plus `-0`, `inf`, `-inf`, `nan`.
 */
export function printNumber(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (n === Infinity) return 'inf';
  if (n === -Infinity) return '-inf';
  if (Object.is(n, -0)) return '-0';
  return String(n);
}

/** A dim: an integer, a bare symbol expression (`N`, `N*64`, `T[1::1]`), else a JSON string. */
export function printDim(d: Dim): string {
  if (typeof d === 'number') return String(d);
  const bare = d !== '' && scanBareDim(d, 0) === d.length && !INT_RE.test(d) && !d.startsWith('//');
  return bare ? d : quote(d);
}

/** `f32[N,3,32,32]`, `f32[]`, `i32`, `tuple<f32[2], i32>`, `list<f32[N,4]>`. */
export function printType(t: IRType): string {
  switch (t.kind) {
    case 'tensor': return `${DTYPE_SHORT[t.dtype] ?? quote(String(t.dtype))}[${t.shape.map(printDim).join(',')}]`;
    case 'scalar': return DTYPE_SHORT[t.dtype] ?? quote(String(t.dtype));
    case 'tuple': return `tuple<${t.elements.map(printType).join(', ')}>`;
    case 'list': return `list<${printType(t.element)}>`;
  }
}

/** An attribute value: JSON-like, lists without spaces, object keys sorted, `undefined` skipped. */
export function printAttrValue(v: AttrValue | undefined): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'number': return printNumber(v);
    case 'string': return quote(v);
    case 'boolean': return String(v);
  }
  if (Array.isArray(v)) return `[${v.map((x: AttrValue) => printAttrValue(x)).join(',')}]`;
  return printAttrDict(v as Attrs);
}

/** `{a=1, b="x"}` with keys sorted by code unit; `{}` when empty. */
export function printAttrDict(attrs: Attrs): string {
  const keys = Object.keys(attrs).filter((k) => attrs[k] !== undefined).sort();
  return `{${keys.map((k) => `${printWord(k)}=${printAttrValue(attrs[k])}`).join(', ')}}`;
}

/** Bare scope: no whitespace, not starting with `"` or `@`. Bare loc: one trimmed line. */
export function printMetaScope(s: string): string { return /^[^\s"@]\S*$/.test(s) ? s : quote(s); }
export function printMetaLoc(s: string): string { return /^[^\s"](?:[^\n\r]*\S)?$/.test(s) ? s : quote(s); }
