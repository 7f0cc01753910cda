// An error inside code jit.script inlines from the Kiln library (an nn.Module method such as
// parameters()) or from a submodule's runtime text is reported at the user's call site, with
// the inner place as a `while inlining` note — never located only in library text.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { jit, randn, type nn } from 'kiln';
import { CallsParameters, CallsUntyped } from './script-models/library-calls.js';
import { scriptErrorOf } from './helpers/script-errors.js';

const FILE = fileURLToPath(new URL('./script-models/library-calls.ts', import.meta.url));

function scriptError(m: nn.Module, sourceFile?: string): jit.ScriptError {
  return scriptErrorOf(m, sourceFile ? { sourceFile } : {}, randn([2, 3]));
}

describe('errors inside inlined library code', () => {
  it('this.net.parameters() is reported at the call in the user file', () => {
    const e = scriptError(new CallsParameters(), FILE);
    expect(e.file).toBe(FILE);
    expect(e.line).toBe(14);
    expect(e.frame.split('\n').at(-2)!.slice(e.frame.split('\n').at(-2)!.indexOf('| ') + 2 + e.col - 1)).toMatch(/^this\.net\.parameters\(\)/);
    expect(e.reason).toMatch(/^MLP\.parameters\(\) is Kiln library code that jit\.script cannot compile \(.*\); call it outside the compiled method/);
    expect(e.notes).toHaveLength(1);
    expect(e.notes[0]).toMatch(/^  while inlining MLP\.parameters, at nn\.Module\.namedParameters \(Kiln library code\):\d+:\d+:/);
    expect(e.message.startsWith(`${FILE}:14:${e.col}: MLP.parameters() is Kiln library code`)).toBe(true);
    expect(e.message).not.toMatch(/^MLP\.namedParameters \(runtime text\)/);
  });

  it('without a .ts file the place is the runtime text of the user method, not library text', () => {
    const e = scriptError(new CallsParameters());
    expect(e.file).toBe('CallsParameters.forward (runtime text)');
    expect(e.reason).toMatch(/^MLP\.parameters\(\) is Kiln library code/);
  });

  it('an error in a submodule declared in the same file is reported at its own line there', () => {
    // The submodule's class is read from the .ts file (not its runtime text), so the place is
    // the user's line in Untyped.forward, with the library method as the only note.
    const e = scriptError(new CallsUntyped(), FILE);
    expect(e.file).toBe(FILE);
    expect(e.line).toBe(22);
    expect(e.notes.map((n) => n.split('\n')[0])).toEqual([
      expect.stringMatching(/^  while inlining Untyped\.parameters, at nn\.Module\.namedParameters \(Kiln library code\):\d+:\d+:$/),
    ]);
    expect(e.reason).toMatch(/^Untyped\.parameters\(\) is Kiln library code/);
  });
});
