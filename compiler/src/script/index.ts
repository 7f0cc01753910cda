// jit.script's compiler half: TypeScript source → IR graph with `if`/`loop` regions.
// `scriptModule` compiles a method of a model (seen through ScriptableModule), `scriptFunction`
// a plain function of tensors; both need the kinds of the inputs (tensor types with symbolic
// dims, numbers, booleans), which the caller takes from example arguments. Invariant: the
// returned graph verifies and computes what the eager method computes, or a ScriptError says
// which construct prevents it.

import { debugCapturedIr, tensorType, type Dim, type DType, type Graph, type Value } from '@kiln/ir-spec';
import type { ParameterDeclaration } from 'ts-morph';
import { ScriptContext, type Frame } from './context.js';
import type { CallResult, ModuleRead, ScriptableModule, ScriptHost } from './host.js';
import { inlineFunction, methodOf } from './calls.js';
import { functionFromText, sourceAtPath, findFunction, type FunctionLike, type SourceInfo } from './source.js';
import { describe, type SValue } from './values.js';

export { ScriptError, codeFrame } from './errors.js';
export type { CallResult, MethodMark, MethodOwner, ModuleRead, ProbeResult, ScriptField, ScriptHost, ScriptTensor, ScriptableModule, TraceArg, TraceInput, TraceTarget, TracedCall } from './host.js';
export { hostFunctionName } from './host-calls.js';
export { provideSource } from './source.js';
export { provideTsMorph } from './ts-morph.js';

/** The kind of one argument of the compiled method. */
export type ScriptInput =
  | { readonly kind: 'tensor'; readonly dtype: DType; readonly shape: readonly Dim[] }
  | { readonly kind: 'number'; readonly dtype: 'int32' | 'float32' }
  | { readonly kind: 'boolean' };

/** A compiled method: its graph, the graph input names and how outputs rebuild the result. */
export interface ScriptedGraph {
  readonly graph: Graph;
  readonly inputNames: readonly string[];
  /** The method's result: graph outputs by index, arrays of them, or static values. */
  readonly result: CallResult;
  /** Every module attribute the compilation read (what a guard must check before reusing the graph). */
  readonly reads: readonly ModuleRead[];
}

export interface ScriptOptions {
  /** Graph name (default: the class or function name). */
  readonly name?: string;
}

/**
 * Compiles method `method` (default `forward`) of `mod` for arguments of the given kinds.
 * @example
 * const { graph } = scriptModule(host, adapt(model), [{ kind: 'tensor', dtype: 'float32', shape: ['N', 4] }]);
 */
export function scriptModule(host: ScriptHost, mod: ScriptableModule, inputs: readonly ScriptInput[], method = 'forward', opts: ScriptOptions = {}): ScriptedGraph {
  if (mod.kind === 'sequential' || mod.kind === 'library') {
    // A container or library layer at the root has no user source to read (its forward is the
    // library's own code): compile a call to it, exactly as when it is a submodule.
    const params = inputs.map((_, i) => (inputs.length === 1 ? 'input' : `input${i}`)).join(', ');
    const wrapper = functionFromText(`function ${method}(${params}) { return this.${method}(${params}); }`, `${mod.className}.${method}`);
    return compile(host, wrapper.src, wrapper.decl, mod, inputs, opts.name ?? mod.className, `${mod.className}.${method}`);
  }
  const { src, decl } = methodOf(mod, method, undefined, undefined);
  return compile(host, src, decl, mod, inputs, opts.name ?? mod.className, `${mod.className}.${method}`);
}

/**
 * Compiles a plain function of tensors from its text (and its `.ts` file when given).
 * @example
 * const { graph } = scriptFunction(host, String(fn), fn.name, [{ kind: 'tensor', dtype: 'float32', shape: ['N'] }]);
 */
export function scriptFunction(host: ScriptHost, text: string, name: string, inputs: readonly ScriptInput[], sourceFile?: string, opts: ScriptOptions = {}): ScriptedGraph {
  let found: { src: SourceInfo; decl: FunctionLike } | undefined;
  if (sourceFile && name) {
    const src = sourceAtPath(sourceFile);
    const decl = findFunction(src, name);
    if (decl) found = { src, decl };
  }
  found ??= functionFromText(text, `${name || 'function'} (runtime text)`);
  return compile(host, found.src, found.decl, undefined, inputs, opts.name ?? (name || 'script'), name || 'function');
}

function compile(host: ScriptHost, src: SourceInfo, decl: FunctionLike, mod: ScriptableModule | undefined, inputs: readonly ScriptInput[], name: string, what: string): ScriptedGraph {
  const ctx = new ScriptContext(host, name, { source: src.typed ? src.display : what });
  const f: Frame = { mod, path: '', src, stack: [what], inLoop: false };
  const params = decl.getParameters();
  if (inputs.length > params.length) {
    throw src.error(decl, `${what} declares ${params.length} parameter(s) but was called with ${inputs.length} argument(s)`);
  }
  const inputNames: string[] = [];
  const args: SValue[] = inputs.map((inp, i) => {
    const p = params[i];
    const pname = p.getName();
    checkAnnotation(src, p, inp);
    inputNames.push(pname);
    if (inp.kind === 'tensor') {
      ctx.noteSymbols(inp.shape);
      return { k: 'tensor', v: ctx.b.input(pname, tensorType(inp.dtype, inp.shape)) } as SValue;
    }
    const dtype: DType = inp.kind === 'boolean' ? 'bool' : inp.dtype;
    const t: Value = ctx.b.input(pname, tensorType(dtype, []));
    ctx.b.meta = {};
    return { k: 'scalar', v: ctx.b.op('item', [t])[0] } as SValue;
  });
  const out = inlineFunction(ctx, f, decl, mod, args, decl);
  ctx.b.meta = {};
  const outputs: Value[] = [];
  // Outputs are named after the result's structure, as jit.trace names them: output, output.0, output.logits.
  const names: string[] = [];
  const build = (v: SValue, name: string): CallResult => {
    if (v.k === 'tensor') { outputs.push(v.v); names.push(name); return { kind: 'tensor', output: outputs.length - 1 }; }
    if (v.k === 'list') return { kind: 'list', items: v.items.map((x, i) => build(x, `${name}.${i}`)) };
    if (v.k === 'object') {
      const keys = Object.keys(v.entries);
      return { kind: 'object', keys, items: keys.map((k) => build(v.entries[k], `${name}.${k}`)) };
    }
    if (v.k === 'static') return { kind: 'static', value: v.value };
    throw src.error(decl, `${what} returns ${describe(v)}; a compiled method must return tensors (or arrays or objects of tensors)` +
      (v.k === 'scalar' ? '. Return a tensor instead of calling .item()' : ''));
  };
  const result = build(out, 'output');
  outputs.forEach((v, i) => ctx.b.output(result.kind === 'tensor' ? 'output' : names[i], v));
  ctx.emitBufferUpdates(); // after the method's outputs, so `result` indices stay valid
  const graph = ctx.b.build();
  debugCapturedIr('jit.script', graph); // KILN_DEBUG=ir
  return { graph, inputNames, result, reads: ctx.reads };
}

/** With the real `.ts` file, the checker's type of a parameter must agree with the argument. */
function checkAnnotation(src: SourceInfo, p: ParameterDeclaration, inp: ScriptInput): void {
  if (!src.typed || !p.getTypeNode()) return;
  const t = p.getType();
  const text = p.getTypeNode()!.getText();
  const isNum = t.isNumber() || t.isNumberLiteral(), isBool = t.isBoolean() || t.isBooleanLiteral();
  const isTensor = /\bTensor\b/.test(text) && !/\[\]|Array</.test(text);
  const bad = (isNum && inp.kind !== 'number') || (isBool && inp.kind !== 'boolean') || (isTensor && inp.kind !== 'tensor');
  if (bad) throw src.error(p, `parameter '${p.getName()}' is declared as ${text} but was given a ${inp.kind}`);
}
