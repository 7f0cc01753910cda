// Decorators whose member name is a reserved word (`@jit.export`). The decorators proposal allows
// any IdentifierName after the dot (`@a.export` is valid), and tsc accepts it, but esbuild's
// parser for standard decorators (0.28, every target, experimentalDecorators false) rejects it:
// `Expected identifier but found "export"`. Kiln documents `@jit.export`, so before esbuild
// bundles a model file the CLI writes such a decorator in the equivalent parenthesized form
// `@(jit.export)`. Invariant: only the places esbuild itself rejects are rewritten (found from its
// own error locations, so strings and comments are never touched), and the meaning is unchanged.
// Columns after such a decorator on the same line shift by two characters.

import { transform, type Loader, type Message } from 'esbuild';

/** A cheap test: can `text` contain a decorator with a reserved word after a dot? */
const CANDIDATE = /@\s*[A-Za-z_$][\w$]*(\s*\.\s*[A-Za-z_$][\w$]*)*\s*\.\s*(export|import|default|delete|new|class|function|return|if|in|do|for|case|var|void|with|enum|const|break|catch|throw|while|super|switch|extends|typeof|finally|continue|debugger|instanceof|try|else|null|true|false|this|yield|let|static|await)\b/;
const REJECTED = /^Expected identifier but found "([A-Za-z]+)"$/;
/** The decorator expression before the rejected word: `@a.b.` ending right at it. */
const BEFORE = /@(\s*)([A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*\s*\.\s*)$/;

/** The loader esbuild uses for `file` (by extension). */
export function loaderFor(file: string): Loader {
  if (file.endsWith('.tsx')) return 'tsx';
  if (/\.(c|m)?ts$/.test(file)) return 'ts';
  if (file.endsWith('.jsx')) return 'jsx';
  return 'js';
}

/**
 * `text` with every decorator esbuild rejects for a reserved member name (`@jit.export`) written
 * as `@(jit.export)`; `text` itself when there is none. Other syntax errors are left for the
 * bundler to report.
 * @example
 * await parenthesizeReservedDecorators('class A { @jit.export f() {} }', 'ts') // 'class A { @(jit.export) f() {} }'
 */
export async function parenthesizeReservedDecorators(text: string, loader: Loader): Promise<string> {
  if (!CANDIDATE.test(text)) return text;
  for (let round = 0; round < 1000; round++) {
    let errors: Message[];
    try {
      await transform(text, { loader, format: 'esm', target: 'esnext', logLevel: 'silent', tsconfigRaw: { compilerOptions: { experimentalDecorators: false } } });
      return text;
    } catch (e) {
      errors = (e as { errors?: Message[] }).errors ?? [];
    }
    const fix = errors.map((m) => place(text, m)).find((p) => p !== undefined);
    if (!fix) return text;
    text = `${text.slice(0, fix.open)}(${text.slice(fix.open, fix.close)})${text.slice(fix.close)}`;
  }
  return text;
}

/** Where to put the parentheses for one rejected decorator, or undefined if `m` is another error. */
function place(text: string, m: Message): { open: number; close: number } | undefined {
  const word = REJECTED.exec(m.text)?.[1];
  const loc = m.location;
  if (!word || !loc) return undefined;
  let lineStart = 0;
  for (let l = 1; l < loc.line; l++) lineStart = text.indexOf('\n', lineStart) + 1;
  const lineEnd = text.indexOf('\n', lineStart);
  const line = text.slice(lineStart, lineEnd < 0 ? text.length : lineEnd);
  // esbuild's column counts UTF-8 bytes; find the UTF-16 column with the same prefix.
  let col = loc.column;
  if (!line.slice(col).startsWith(word)) col = Buffer.from(line, 'utf8').subarray(0, loc.column).toString('utf8').length;
  if (!line.slice(col).startsWith(word)) return undefined;
  const before = BEFORE.exec(line.slice(0, col));
  if (!before) return undefined;
  const open = lineStart + col - before[2].length;
  return { open, close: lineStart + col + word.length };
}
