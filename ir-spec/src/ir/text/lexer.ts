// The lexer of the IR text form: a pull lexer with one token of lookahead, plus two raw scans
// the grammar needs (a tensor dim, and a node's trailing `// scope @ loc` annotation).
// Invariant: `pos` is the end of the last consumed token; peeking never moves it, so the
// parser can still ask for a same-line annotation after peeking. Comments (`//` to the end of
// the line) are trivia everywhere except where the parser asks for a trailing annotation.

import type { Dim } from '../../shape.js';
import { INT_RE, NAME_CHAR_RE, scanBareDim } from './format.js';
import { IRParseError } from './errors.js';

export type TokenKind = 'ident' | 'value' | 'global' | 'string' | 'number' | 'punct' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  /** The source text of the token. */
  readonly text: string;
  /** Decoded content: a name (value, global), the string, or the number. */
  readonly value: string | number;
  readonly start: number;
  readonly end: number;
}

const PUNCT = new Set(['(', ')', '{', '}', '[', ']', '<', '>', ',', ':', '=', '^']);
const IDENT_START = /[A-Za-z_]/;
const IDENT_CHAR = /[A-Za-z0-9_.]/;
const NUMBER = /-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;

export class Lexer {
  /** End of the last consumed token. */
  pos = 0;
  private cached: Token | null = null;

  constructor(readonly text: string) {}

  error(reason: string, offset: number): IRParseError { return new IRParseError(reason, this.text, offset); }

  peek(): Token {
    if (!this.cached) this.cached = this.scan(this.skipTrivia(this.pos));
    return this.cached;
  }

  next(): Token {
    const t = this.peek();
    this.cached = null;
    this.pos = t.end;
    return t;
  }

  /** True (and consumes it) when the next token is the punctuation or identifier `text`. */
  eat(text: string): boolean {
    const t = this.peek();
    if ((t.kind === 'punct' || t.kind === 'ident') && t.text === text) { this.next(); return true; }
    return false;
  }

  expect(text: string, what: string): Token {
    const t = this.peek();
    if ((t.kind === 'punct' || t.kind === 'ident') && t.text === text) return this.next();
    throw this.error(`expected '${text}' ${what}, found ${describe(t)}`, t.start);
  }

  /** Consumes the character `ch` when it comes next (after trivia), without tokenizing. */
  eatRaw(ch: string): boolean {
    const at = this.skipTrivia(this.pos);
    if (this.text[at] !== ch) return false;
    this.cached = null;
    this.pos = at + 1;
    return true;
  }

  /**
   * A tensor dim: an integer, a bare symbol expression (`N`, `N*64`, `T[1::1]`) or a JSON
   * string. It is scanned raw because `N*64` is one dim, not three tokens.
   */
  scanDim(): { dim: Dim; start: number } {
    this.cached = null;
    const start = this.skipTrivia(this.pos);
    if (this.text[start] === '"') {
      const s = this.scanString(start);
      this.pos = s.end;
      return { dim: s.value as string, start };
    }
    const end = scanBareDim(this.text, start);
    if (end === start) throw this.error(`expected a dimension (an integer, a symbol such as N or N*64, or a "string"), found ${describe(this.scan(start))}`, start);
    const raw = this.text.slice(start, end);
    this.pos = end;
    return { dim: INT_RE.test(raw) ? Number(raw) : raw, start };
  }

  /** The text after `//` when a comment follows the last token on the same line (consumed). */
  trailingComment(): { body: string; start: number } | null {
    let i = this.pos;
    while (this.text[i] === ' ' || this.text[i] === '\t') i++;
    if (!this.text.startsWith('//', i)) return null;
    const nl = this.text.indexOf('\n', i);
    const end = nl === -1 ? this.text.length : nl;
    this.cached = null;
    this.pos = end;
    return { body: this.text.slice(i + 2, end), start: i + 2 };
  }

  /** A JSON string starting at `start` (which holds `"`). */
  scanString(start: number): Token {
    let i = start + 1;
    for (;;) {
      if (i >= this.text.length) throw this.error('unterminated string: add the closing \'"\'', start);
      const c = this.text[i];
      if (c === '"') break;
      if (c === '\\') { i += 2; continue; }
      if (c === '\n' || c === '\r') throw this.error('unterminated string: close it with \'"\' on the same line (a line break inside a string is written \\n)', start);
      if (c.charCodeAt(0) < 0x20) throw this.error('a string cannot contain a control character; write it as a JSON escape such as \\t or \\u0001', i);
      i++;
    }
    const text = this.text.slice(start, i + 1);
    let value: string;
    try {
      value = JSON.parse(text) as string;
    } catch {
      throw this.error('invalid escape in string (use JSON escapes: \\" \\\\ \\n \\t \\uXXXX)', start);
    }
    return { kind: 'string', text, value, start, end: i + 1 };
  }

  private skipTrivia(from: number): number {
    let i = from;
    for (;;) {
      const c = this.text[i];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') i++;
      else if (c === '/' && this.text[i + 1] === '/') {
        const nl = this.text.indexOf('\n', i);
        i = nl === -1 ? this.text.length : nl + 1;
      } else return i;
    }
  }

  private scan(start: number): Token {
    const text = this.text;
    if (start >= text.length) return { kind: 'eof', text: '', value: '', start, end: start };
    const c = text[start];
    const tok = (kind: TokenKind, end: number, value: string | number = text.slice(start, end)): Token =>
      ({ kind, text: text.slice(start, end), value, start, end });
    if (PUNCT.has(c)) return tok('punct', start + 1);
    if (c === '-' && text[start + 1] === '>') return tok('punct', start + 2);
    if (c === '"') return this.scanString(start);
    if (c === '%' || c === '@') {
      const kind = c === '%' ? 'value' : 'global';
      if (text[start + 1] === '"') {
        const s = this.scanString(start + 1);
        return tok(kind, s.end, s.value);
      }
      let end = start + 1;
      while (end < text.length && NAME_CHAR_RE.test(text[end])) end++;
      if (end === start + 1) throw this.error(`expected a name after '${c}' (letters, digits, _ . $ - or a "string")`, start);
      return tok(kind, end, text.slice(start + 1, end));
    }
    if (text.startsWith('-inf', start) && !IDENT_CHAR.test(text[start + 4] ?? '')) return tok('number', start + 4, -Infinity);
    NUMBER.lastIndex = start;
    const m = NUMBER.exec(text);
    if (m) {
      const end = start + m[0].length;
      if (IDENT_CHAR.test(text[end] ?? '')) throw this.error(`malformed number '${text.slice(start, end + 1)}'`, start);
      return tok('number', end, Number(m[0]));
    }
    if (IDENT_START.test(c)) {
      let end = start + 1;
      while (end < text.length && IDENT_CHAR.test(text[end])) end++;
      return tok('ident', end);
    }
    throw this.error(`unexpected character ${JSON.stringify(c)}`, start);
  }
}

/** A token as error messages name it: `'{'`, `'conv2d'`, `end of input`. */
export function describe(t: Token): string {
  if (t.kind === 'eof') return 'end of input';
  const s = t.text.length > 40 ? `${t.text.slice(0, 40)}…` : t.text;
  return `'${s}'`;
}
