// ScriptError: every construct the scripter cannot compile ends here, located in the user's
// source (file:line:col) with a code frame and a caret, the construct's name and what to do.
// Invariant: the scripter never lets an exception from ts-morph or the builder escape without
// a location; `located` (stmt.ts) turns any such failure into a ScriptError at the node being
// lowered, and an error inside inlined library or runtime-text code is re-reported at the
// outermost call site in the user's source (calls.ts), the inner places kept as `notes`.

/** A place in a source text: 1-based line and column. */
export interface SourcePlace {
  readonly file: string;
  readonly line: number;
  readonly col: number;
}

/** A construct that jit.script cannot compile, with where it is and what to do instead. */
export class ScriptError extends Error {
  constructor(
    /** What went wrong and what to do, without the location. */
    readonly reason: string,
    readonly file: string,
    readonly line: number,
    readonly col: number,
    /** The offending source line and a caret under the construct. */
    readonly frame: string,
    /** Where the failure sat in the code inlined from this place (`while inlining ...`), innermost first. */
    readonly notes: readonly string[] = [],
  ) {
    super(`${file}:${line}:${col}: ${reason}\n${frame}${notes.map((n) => `\n${n}`).join('')}`);
    this.name = 'ScriptError';
  }
}

/** The code frame for `place` in `text`: the line before, the line itself and a caret. */
export function codeFrame(text: string, line: number, col: number): string {
  const lines = text.split(/\r?\n/);
  const out: string[] = [];
  const width = String(line).length;
  for (let l = Math.max(1, line - 1); l <= line; l++) {
    out.push(`${String(l).padStart(width)} | ${lines[l - 1] ?? ''}`);
  }
  out.push(`${' '.repeat(width)} | ${' '.repeat(Math.max(0, col - 1))}^`);
  return out.join('\n');
}
