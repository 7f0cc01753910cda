// The error of the text-form parser. Invariant: every parse failure is an IRParseError that
// names the place (line:col, 1-based, with the source line and a caret under the offending
// character) and says what was expected or what to fix.

/** Line and column (1-based, in UTF-16 units) of `offset` in `text`. */
export function lineCol(text: string, offset: number): { line: number; col: number } {
  let line = 1, start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) { line++; start = i + 1; }
  return { line, col: offset - start + 1 };
}

const MAX_FRAME = 100;

/** The source line of `offset` with a caret under it (long lines are cut around the caret). */
export function caretFrame(text: string, offset: number): string {
  const { line, col } = lineCol(text, offset);
  const start = offset - (col - 1);
  const endAt = text.indexOf('\n', start);
  let src = text.slice(start, endAt === -1 ? text.length : endAt).replace(/\r$/, '');
  let at = col - 1;
  if (src.length > MAX_FRAME) {
    const from = Math.max(0, Math.min(at - MAX_FRAME / 2, src.length - MAX_FRAME));
    src = `${from > 0 ? '…' : ''}${src.slice(from, from + MAX_FRAME)}${from + MAX_FRAME < src.length ? '…' : ''}`;
    at = at - from + (from > 0 ? 1 : 0);
  }
  const gutter = String(line);
  const pad = src.slice(0, at).replace(/[^\t]/g, ' ');
  return `${gutter} | ${src}\n${' '.repeat(gutter.length)} | ${pad}^`;
}

/**
 * A syntax or typing error in IR text.
 *
 * @example
 * try { parseGraph(text); } catch (e) { if (e instanceof IRParseError) console.error(e.message); }
 * // 2:8: unknown op 'rleu': it is not in the op registry nor a structural op; did you mean 'relu'?
 * // 2 |   %0 = rleu(%x) : f32[N,4]
 * //   |        ^
 */
export class IRParseError extends Error {
  readonly line: number;
  readonly col: number;

  constructor(
    /** What went wrong and what to do, without the location. */
    readonly reason: string,
    text: string,
    /** Offset of the error in the parsed text. */
    readonly offset: number,
  ) {
    const { line, col } = lineCol(text, offset);
    super(`${line}:${col}: ${reason}\n${caretFrame(text, offset)}`);
    this.name = 'IRParseError';
    this.line = line;
    this.col = col;
  }
}
