// Shared by the jit.script error tests: catch the ScriptError a scripted forward throws, and
// check where its caret points.

import { expect } from 'vitest';
import { jit, type nn } from 'kiln';

/** The ScriptError that scripting `m` (with `opts`) and calling forward(...args) throws. */
export function scriptErrorOf(m: nn.Module, opts: jit.ScriptOptions, ...args: unknown[]): jit.ScriptError {
  try {
    jit.script(m, opts).forward(...args);
  } catch (e) {
    expect(e).toBeInstanceOf(jit.ScriptError);
    return e as jit.ScriptError;
  }
  throw new Error('expected a ScriptError');
}

/** The caret sits under `token` on the reported line. */
export function caretUnder(e: jit.ScriptError, token: string): void {
  const lines = e.frame.split('\n');
  const src = lines[lines.length - 2], caret = lines[lines.length - 1];
  const bar = src.indexOf('| ') + 2;
  expect(src.slice(bar + e.col - 1).startsWith(token)).toBe(true);
  expect(caret.indexOf('^')).toBe(bar + e.col - 1);
}
