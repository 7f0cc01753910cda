// Reads the text form of IR types (`f32[N,3,32,32]`, `i32`, `tuple<f32[2], i32>`, `list<f32[N]>`)
// as `typeToString` (ir/types.ts) writes it. Invariant: for every type t the file may hold,
// `typeToString(parseTypeString(typeToString(t)))` equals `typeToString(t)`; anything else is
// refused with a message naming the character offset. Bounded: input length, nesting depth and
// rank are capped, so a hostile string costs bounded time and no deep recursion.

import { DTYPE_FROM_SHORT, listType, scalarType, tensorType, tupleType, type IRType } from '../ir/types.js';
import type { Dim } from '../shape.js';
import { parseDim } from '../ir/dims.js';

/** Longest type string accepted (a tuple of many tensors stays far below this). */
export const MAX_TYPE_STRING = 65_536;
/** Deepest nesting of tuple/list types accepted. */
export const MAX_TYPE_DEPTH = 32;
/** Highest tensor rank accepted. */
export const MAX_RANK = 32;

/** Characters a dim may contain (dims.ts grammar: integers, symbols, + - *, parentheses, slices). */
const DIM_CHAR = /[A-Za-z0-9_.*+\-():[\]]/;

export class TypeStringError extends Error {
  constructor(readonly text: string, readonly offset: number, reason: string) {
    super(`type '${text.length > 80 ? `${text.slice(0, 80)}...` : text}' at character ${offset}: ${reason}`);
    this.name = 'TypeStringError';
  }
}

/**
 * Parses one type string.
 *
 * @example
 * ```ts
 * parseTypeString('f32[N,3,32,32]'); // { kind: 'tensor', dtype: 'float32', shape: ['N', 3, 32, 32] }
 * ```
 */
export function parseTypeString(text: string): IRType {
  if (text.length > MAX_TYPE_STRING) throw new TypeStringError(text, MAX_TYPE_STRING, `longer than ${MAX_TYPE_STRING} characters`);
  const p = new Parser(text);
  const t = p.type(0);
  if (p.pos !== text.length) p.fail('unexpected text after the type');
  return t;
}

/** Whether `d` is a dim this format can write and read back unchanged. */
export function isValidDim(d: Dim): boolean {
  if (typeof d === 'number') return Number.isSafeInteger(d) && d >= 0;
  try {
    const t = parseTypeString(`f32[${d}]`);
    return t.kind === 'tensor' && t.shape.length === 1 && String(t.shape[0]) === d;
  } catch {
    return false;
  }
}

class Parser {
  pos = 0;
  constructor(readonly text: string) {}

  fail(reason: string): never { throw new TypeStringError(this.text, this.pos, reason); }

  private word(): string {
    const start = this.pos;
    while (this.pos < this.text.length && /[a-z0-9]/.test(this.text[this.pos])) this.pos++;
    return this.text.slice(start, this.pos);
  }

  private expect(ch: string): void {
    if (this.text[this.pos] !== ch) this.fail(`expected '${ch}'`);
    this.pos++;
  }

  private spaces(): void { while (this.text[this.pos] === ' ') this.pos++; }

  type(depth: number): IRType {
    if (depth > MAX_TYPE_DEPTH) this.fail(`types nest deeper than ${MAX_TYPE_DEPTH}`);
    const start = this.pos;
    const w = this.word();
    if (w === 'tuple') {
      this.expect('<');
      const elements: IRType[] = [];
      if (this.text[this.pos] !== '>') {
        for (;;) {
          this.spaces();
          elements.push(this.type(depth + 1));
          if (this.text[this.pos] !== ',') break;
          this.pos++;
        }
      }
      this.expect('>');
      return tupleType(elements);
    }
    if (w === 'list') {
      this.expect('<');
      const element = this.type(depth + 1);
      this.expect('>');
      return listType(element);
    }
    const dtype = DTYPE_FROM_SHORT[w];
    if (!dtype || !Object.hasOwn(DTYPE_FROM_SHORT, w)) {
      this.pos = start;
      this.fail(`expected f32, i32, bool, tuple<...> or list<...>, got '${w || this.text.slice(start, start + 1)}'`);
    }
    if (this.text[this.pos] !== '[') return scalarType(dtype);
    this.pos++;
    const shape: Dim[] = [];
    if (this.text[this.pos] !== ']') {
      for (;;) {
        if (shape.length === MAX_RANK) this.fail(`rank above ${MAX_RANK}`);
        shape.push(this.dim());
        if (this.text[this.pos] !== ',') break;
        this.pos++;
      }
    }
    this.expect(']');
    return tensorType(dtype, shape);
  }

  /** A dim: digits are a concrete size; anything else must be a symbolic dim per dims.ts. The
   * text is kept as written (the verifier requires the canonical form). */
  private dim(): Dim {
    const start = this.pos;
    let depth = 0;
    for (; this.pos < this.text.length; this.pos++) {
      const c = this.text[this.pos];
      if (c === '(' || c === '[') depth++;
      else if (c === ')' || c === ']') {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
      else if (!DIM_CHAR.test(c)) break;
    }
    const text = this.text.slice(start, this.pos);
    if (!text) this.fail('expected a dim (a non-negative integer or a symbol such as N)');
    if (/^[0-9]+$/.test(text)) {
      const n = Number(text);
      if (!Number.isSafeInteger(n)) { this.pos = start; this.fail(`dim ${text} is too large`); }
      return n;
    }
    const shown = text.length > 40 ? `${text.slice(0, 40)}...` : text;
    let value: Dim;
    try {
      value = parseDim(text);
    } catch (e) {
      this.pos = start;
      this.fail(`'${shown}' is not a dim: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (typeof value === 'number') { this.pos = start; this.fail(`'${shown}' is a constant: write a concrete dim as a non-negative integer`); }
    return text;
  }
}
