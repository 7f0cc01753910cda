// Every construct jit.script refuses gives a ScriptError at file:line:col with a code frame,
// a caret under the construct, its name and what to do instead.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { jit, randn, type nn } from 'kiln';
import {
  BranchTypesDiffer, CapturesMutable, LabelledLoop, ReturnInRunTimeLoop, SwitchDefaultFirst, SwitchFallsThrough, SwitchInnerBreak,
  TensorCompound, TensorCondition, UsesAsync, UsesClassExpression, UsesClosure, UsesTry,
} from './script-models/unsupported.js';
import { caretUnder, scriptErrorOf } from './helpers/script-errors.js';

const FILE = fileURLToPath(new URL('./script-models/unsupported.ts', import.meta.url));

function scriptError(m: nn.Module): jit.ScriptError {
  return scriptErrorOf(m, { sourceFile: FILE }, randn([2, 3]));
}

describe('jit.script errors', () => {
  const cases: [string, () => nn.Module, number, string, RegExp][] = [
    ['try', () => new UsesTry(), 6, 'try', /'try' statements are not supported[\s\S]*@jit\.ignore/],
    ['class expression', () => new UsesClassExpression(), 16, 'class', /class expressions are not supported/],
    ['captured mutable variable', () => new CapturesMutable(), 24, 'counter', /'counter' is not a local variable[\s\S]*cannot capture/],
    ['closure assigning outside itself, called in a data-dependent if', () => new UsesClosure(), 32, 'bump()', /'bump' \(declared at [^)]*:31:18\) assigns 's', a variable declared outside it, and is called inside a data-dependent 'if'[\s\S]*s = f\(s\)/],
    ['async', () => new UsesAsync(), 38, 'async', /async functions are not supported/],
    ['branches of different types', () => new BranchTypesDiffer(), 46, 'if', /the variable 'y' holds a tensor of type f32\[N\] on one side and f32\[N,3\] on the other/],
    ['tensor as a condition', () => new TensorCondition(), 55, 'x.gt(0)', /always true in JavaScript[\s\S]*\.item\(\)/],
    ['compound assignment on a tensor', () => new TensorCompound(), 66, 'y += x', /the operator '\+' on a Tensor is not supported[\s\S]*x\.add\(y\)/],
    ['switch fall-through', () => new SwitchFallsThrough(), 75, 'case 3', /falls through into the next one[\s\S]*End the case with 'break'/],
    ['break inside a switch case', () => new SwitchInnerBreak(), 90, 'break', /a 'break' inside a switch case other than its last statement[\s\S]*if\/else/],
    ['default before the cases', () => new SwitchDefaultFirst(), 101, 'default', /'default' must be the last clause/],
    ['return inside a run-time loop', () => new ReturnInRunTimeLoop(), 111, 'if', /'return' inside a data-dependent 'if' within a loop[\s\S]*return after the loop/],
    ['labelled statement', () => new LabelledLoop(), 119, 'outer:', /labelled statements are not supported/],
  ];
  it.each(cases)('%s', (_, make, line, token, message) => {
    const e = scriptError(make());
    expect(e.file).toBe(FILE);
    expect(e.line).toBe(line);
    expect(e.message).toMatch(message);
    expect(e.message.startsWith(`${FILE}:${line}:${e.col}: `)).toBe(true);
    caretUnder(e, token);
  });

  it('locates errors in the runtime text when no .ts file is given', () => {
    let err: unknown;
    try { jit.script(new UsesTry()).forward(randn([2, 3])); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(jit.ScriptError);
    const e = err as jit.ScriptError;
    expect(e.file).toBe('UsesTry.forward (runtime text)');
    expect(e.line).toBe(2);
    caretUnder(e, 'try');
  });

  it('a shape error inside a compiled op names the statement', () => {
    function bad(x: import('kiln').Tensor, y: import('kiln').Tensor) { return x.matmul(y); }
    expect(() => jit.script(bad).forward(randn([2, 3]), randn([2, 3]))).toThrow(/bad \(runtime text\):2:\d+: the tensor method \.matmul\(\) failed[\s\S]*f32\[N,3\], f32\[N,3\][\s\S]*inner dimensions[\s\S]*\^/);
  });
});
