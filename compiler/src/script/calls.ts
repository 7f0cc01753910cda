// Calls. Methods of the model (and of user submodules), `super.method()` (super.ts) and
// functions of the same file or imported from the user's other files (imports.ts) are inlined:
// their bodies are lowered with the arguments bound to the parameters, under the callee
// module's scope. Container and traversal methods (ModuleDict.get, children(), ...) fold to the
// module tree (modules.ts). Tensor methods, library functions (F.*, cat, ...) and built-in
// layers are recorded through the host (one eager call traced into a small graph, inlined),
// so they lower to exactly the ops eager dispatches. `.item()` becomes the `item` builtin; a
// run-time number passed to a tensor op becomes a 0-d tensor (`to_tensor`); methods marked
// @jit.ignore / @jit.unused become `host_call` / `raise` (host-calls.ts).
// Invariant: a call whose result would depend on values read at compile time is an error.

import type { Node as TsNode, CallExpression } from 'ts-morph';
import { tsm } from './ts-morph.js';
import { typeToString, type Dim, type Graph, type TensorIRType, type Value } from '@kiln/ir-spec';
import type { Frame, ScriptContext } from './context.js';
import type { ScriptableModule, TraceArg } from './host.js';
import { lowerExpr, lowerObject } from './expr.js';
import { floorDiv, mathCall } from './scalars.js';
import { callMarked } from './host-calls.js';
import { moduleMethod } from './modules.js';
import { classNear } from './imports.js';
import { superCall } from './super.js';
import { findMethod, methodFromText, sourceAtPath, sourceOf, type FunctionLike, type SourceInfo } from './source.js';
import { lowerStatements } from './stmt.js';
import { arrayMethod, ARRAY_METHODS } from './arrays.js';
import { callFunction } from './closures.js';
import { activation } from './recursion.js';
import { ScriptError } from './errors.js';
import { stepSlice } from './step-slice.js';
import { describe, Env, stat, type SValue } from './values.js';

const MAX_DEPTH = 64;

export function lowerCall(ctx: ScriptContext, f: Frame, env: Env, e: CallExpression): SValue {
  let callee: TsNode = e.getExpression();
  // Transpilers call imports as `(0, ns.fn)(...)` (no `this`): the callee is `ns.fn`.
  while (tsm().Node.isParenthesizedExpression(callee)) {
    const inner = callee.getExpression();
    if (tsm().Node.isBinaryExpression(inner) && inner.getOperatorToken().getText() === ',' && tsm().Node.isNumericLiteral(inner.getLeft())) callee = inner.getRight();
    else break;
  }
  const argNodes = e.getArguments();
  const args = () => argNodes.map((a) => {
    if (tsm().Node.isSpreadElement(a)) throw f.src.error(a, 'spread arguments (...) are not supported by jit.script; pass the arguments one by one');
    return lowerExpr(ctx, f, env, a);
  });
  const saved = ctx.b.meta;
  try {
    if (tsm().Node.isPropertyAccessExpression(callee)) {
      const name = callee.getName();
      const recvNode = callee.getExpression();
      // Math.floor(a / b) on run-time integers is a floor division, not a float round trip.
      if (recvNode.getText() === 'Math' && name === 'floor' && argNodes.length === 1 && tsm().Node.isBinaryExpression(argNodes[0]) && argNodes[0].getOperatorToken().getText() === '/') {
        const d = argNodes[0];
        return floorDiv(ctx, f.src, e, lowerExpr(ctx, f, env, d.getLeft()), lowerExpr(ctx, f, env, d.getRight()));
      }
      if (tsm().Node.isSuperExpression(recvNode)) return superCall(ctx, f, name, args(), e);
      const recv = lowerObject(ctx, f, env, recvNode);
      if (recv.k === 'list' && name === 'push' && tsm().Node.isIdentifier(recvNode)) {
        const items = [...recv.items, ...args()];
        env.assign(recvNode.getText(), { k: 'list', items });
        return stat(items.length);
      }
      if ((recv.k === 'list' || recv.k === 'shape') && ARRAY_METHODS.has(name)) return arrayMethod(ctx, f, env, recv, name, args(), e);
      return callMember(ctx, f, env, recv, name, args(), e);
    }
    const fn = lowerExpr(ctx, f, env, callee);
    if (fn.k === 'fn') return callFunction(ctx, f, env, fn, args(), e);
    if (fn.k === 'ns') return library(ctx, f, fn.name, args(), e);
    throw f.src.error(callee, `calling ${describe(fn)} is not supported by jit.script; call a method of the model, a function declared at the top level of the file, a tensor method or F.*`);
  } finally {
    ctx.b.meta = saved;
  }
}

function callMember(ctx: ScriptContext, f: Frame, env: Env, recv: SValue, name: string, args: SValue[], at: CallExpression): SValue {
  if (recv.k === 'module') return callModule(ctx, f, recv.mod, recv.path, name, args, at);
  if (recv.k === 'ns') {
    if (recv.name === 'Math') return mathCall(ctx, f.src, at, name, args);
    return library(ctx, f, recv.name ? `${recv.name}.${name}` : name, args, at);
  }
  if (recv.k === 'tensor') {
    if (name === 'item') {
      const t = recv.v.type as TensorIRType;
      if (!t.shape.every((d) => d === 1)) {
        throw f.src.error(at, `.item() needs a one-element tensor, but this one has shape [${t.shape.join(',')}]; reduce it first (x.sum().item())`);
      }
      return { k: 'scalar', v: ctx.b.op('item', [recv.v])[0] };
    }
    if (name === 'size' && args.length === 1) return shapeItem(ctx, f, recv.v, args[0], at);
    if (name === 'slice') { const step = stepSlice(ctx, recv.v, args, at); if (step) return step; }
    return record(ctx, f, { kind: 'method', name }, [recv, ...args], '', at);
  }
  if (recv.k === 'shape' && name === 'length') return stat((recv.of.type as TensorIRType).shape.length);
  throw f.src.error(at, `calling .${name}() on ${describe(recv)} is not supported by jit.script; call tensor methods on tensors and methods on modules, or move this code into a method marked @jit.ignore`);
}

function shapeItem(ctx: ScriptContext, f: Frame, v: Value, i: SValue, at: TsNode): SValue {
  const shape = (v.type as TensorIRType).shape;
  if (i.k !== 'static' || typeof i.value !== 'number') throw f.src.error(at, 'size(i) needs an index known when compiling');
  const k = i.value < 0 ? i.value + shape.length : i.value;
  if (k < 0 || k >= shape.length) throw f.src.error(at, `size(${i.value}) is out of range for rank ${shape.length}`);
  const d = shape[k];
  return typeof d === 'number' ? stat(d) : { k: 'scalar', v: ctx.b.op('dim', [v], { index: k })[0], dim: d };
}

/** The scope path of item `i` of a Sequential/ModuleList at `path`: its key, not its position
 * (a Sequential slice keeps the original keys, so parameter names match the state dict). */
export function itemPath(mod: ScriptableModule, path: string, i: number): string {
  const key = mod.itemKeys()[i] ?? String(i);
  return path ? `${path}.${key}` : key;
}

/** `mod.name(args)`: a user module's method is inlined; a library layer is recorded. */
export function callModule(ctx: ScriptContext, f: Frame, mod: ScriptableModule, path: string, name: string, args: SValue[], at: TsNode): SValue {
  const tree = moduleMethod(ctx, f, mod, path, name, args, at);
  if (tree) return tree;
  if (mod.kind === 'list' || mod.kind === 'sequential') {
    ctx.assume(mod, '#items', path);
    if (name === 'get' && args.length === 1 && args[0].k === 'static' && typeof args[0].value === 'number') {
      const items = mod.items(), i = args[0].value < 0 ? args[0].value + items.length : args[0].value;
      if (!items[i]) throw f.src.error(at, `index ${args[0].value} is out of range for ${items.length} modules`);
      return { k: 'module', mod: items[i], path: itemPath(mod, path, i) };
    }
    if (mod.kind === 'sequential' && name === 'forward') {
      if (args.length !== 1) throw f.src.error(at, 'Sequential.forward takes one argument');
      return mod.items().reduce((x, m, i) => callModule(ctx, f, m, itemPath(mod, path, i), 'forward', [x], at), args[0]);
    }
    if (mod.kind === 'list') throw f.src.error(at, `ModuleList has no method '${name}' that jit.script supports; iterate with for...of or use .get(i)`);
  }
  if (mod.kind === 'graph' && mod.graph) {
    if (name !== 'forward') throw f.src.error(at, `${mod.className} was traced: only its forward can be called from compiled code`);
    ctx.b.meta = { ...ctx.b.meta, scope: path };
    return inlineTraced(ctx, f, mod.graph(), path, args, at);
  }
  if (mod.kind === 'library') {
    ctx.assume(mod, '#state', path);
    ctx.b.meta = { ...ctx.b.meta, scope: path };
    return record(ctx, f, { kind: 'module', module: mod, method: name }, args, path, at);
  }
  const mark = mod.methodMark(name);
  if (mark === 'ignore' || mark === 'unused') return callMarked(ctx, f, mod, path, name, mark, args, at, declaredVoid(mod, name));
  const key = `${mod.className}.${name}@${path}`;
  const { src, decl } = methodOf(mod, name, f, at);
  // Recursion is unrolled while it runs on values known when compiling (recursion.ts).
  return activation(ctx, f, key, `${mod.className}.${name}`, at,
    () => inlineFunction(ctx, { mod, path, src, stack: [...f.stack, key], inLoop: f.inLoop }, decl, mod, args, at, f));
}

/** Whether the type checker says method `name` of `mod` returns void (then it need not be probed). */
function declaredVoid(mod: ScriptableModule, name: string): boolean {
  if (!mod.sourceFile) return false;
  try {
    const { src, decl } = methodOf(mod, name, undefined, undefined);
    return src.typed && decl.getReturnType().isVoid();
  } catch {
    return false;
  }
}

/** The declaration of method `name` of `mod`: from its `.ts` file when known, else its runtime text. */
export function methodOf(mod: ScriptableModule, name: string, f: Frame | undefined, at: TsNode | undefined): { src: SourceInfo; decl: FunctionLike } {
  if (mod.sourceFile) {
    const src = sourceAtPath(mod.sourceFile);
    const decl = findMethod(src, mod.className, name);
    if (decl) return { src, decl };
  } else if (f?.src.typed) {
    // A submodule's class declared in (or imported into) the caller's file is read from its source too.
    const near = classNear(f.src, mod.className);
    const decl = near?.decl.getInstanceMethod(name);
    if (near && decl) return { src: near.src, decl };
  }
  const text = mod.methodSource(name);
  if (text === undefined) {
    const msg = `${mod.className} has no method '${name}'`;
    if (f && at) throw f.src.error(at, msg);
    throw new Error(`jit.script: ${msg}`);
  }
  const owner = mod.libraryOwner?.(name);
  return owner ? methodFromText(text, `nn.${owner}.${name} (Kiln library code)`, true)
    : methodFromText(text, `${mod.className}.${name} (runtime text)`);
}

/**
 * Lowers a call of `decl` with `args` bound to its parameters; returns what it returns. When the
 * callee's source points the user at their code less well than the caller's (library code, or
 * runtime text called from their `.ts` file), a ScriptError inside it is re-reported at the call
 * site `at`, with the inner place as a `while inlining` note: errors name the user's line.
 */
export function inlineFunction(ctx: ScriptContext, f: Frame, decl: FunctionLike, mod: ScriptableModule | undefined, args: SValue[], at: TsNode, caller: Frame = f, outer?: Env): SValue {
  if (f.src.rank >= caller.src.rank) return inlineBody(ctx, f, decl, args, at, caller, outer);
  try {
    return inlineBody(ctx, f, decl, args, at, caller, outer);
  } catch (e) {
    if (!(e instanceof ScriptError)) throw e;
    const callee = f.stack[f.stack.length - 1]?.replace(/@.*$/, '') ?? 'the callee';
    const note = `  while inlining ${callee}, at ${e.file}:${e.line}:${e.col}:\n${e.frame.replace(/^/gm, '    ')}`;
    const reason = f.src.library
      ? `${callee}() is Kiln library code that jit.script cannot compile (${e.reason}); call it outside the compiled method ` +
        '(in the constructor, or in a method marked @jit.ignore) and use its result there'
      : e.reason;
    const outer = caller.src.error(at, reason);
    throw new ScriptError(outer.reason, outer.file, outer.line, outer.col, outer.frame, [...e.notes, note]);
  }
}

function inlineBody(ctx: ScriptContext, f: Frame, decl: FunctionLike, args: SValue[], at: TsNode, caller: Frame, outer?: Env): SValue {
  if (decl.isAsync()) throw f.src.error(decl, "async functions are not supported by jit.script: compiled code is synchronous; make the method synchronous or mark it @jit.ignore");
  if (tsm().Node.isFunctionDeclaration(decl) || tsm().Node.isMethodDeclaration(decl) || tsm().Node.isFunctionExpression(decl)) {
    if (decl.isGenerator()) throw f.src.error(decl, 'generator functions are not supported by jit.script; return an array of the results instead');
  }
  if (caller.stack.length > MAX_DEPTH) {
    throw caller.src.error(at, `calls nest more than ${MAX_DEPTH} deep when compiling; jit.script inlines every call, so recursion must end within that depth on values known when compiling`);
  }
  // A callee's early returns end the callee, whatever loop the call sits in.
  f = { ...f, inLoop: false };
  // A closure's body sees the variables it captures (closures.ts); any other function only its parameters.
  const env = new Env(outer);
  decl.getParameters().forEach((p, i) => {
    if (p.isRestParameter()) throw f.src.error(p, 'rest parameters are not supported by jit.script; pass an array');
    let v = args[i];
    if (v === undefined || (v.k === 'static' && v.value === undefined)) {
      const init = p.getInitializer();
      v = init ? lowerExpr(ctx, f, env, init) : stat(undefined);
    }
    const nameNode = p.getNameNode();
    if (!tsm().Node.isIdentifier(nameNode)) throw f.src.error(p, 'destructured parameters are not supported by jit.script; take the object or array as one parameter and destructure it in the body');
    env.declare(nameNode.getText(), v, true);
  });
  const body = decl.getBody();
  if (!body) throw f.src.error(decl, 'this function has no body');
  if (!tsm().Node.isBlock(body)) return lowerExpr(ctx, f, env, body);
  const r = lowerStatements(ctx, f, env, body.getStatements());
  if (r.kind === 'break' || r.kind === 'continue') throw f.src.error(body, `'${r.kind}' outside a loop`);
  return r.kind === 'return' ? r.value : stat(undefined);
}

function library(ctx: ScriptContext, f: Frame, name: string, args: SValue[], at: TsNode): SValue {
  if (!ctx.host.hasFunction(name)) {
    throw f.src.error(at, `'${name}' is not a Kiln function jit.script knows; use the tensor methods, F.*, or a function declared in this file` +
      (f.src.typed ? ' or imported from another of your .ts files' : `. If '${name}' is imported from another of your files, pass { sourceFile } to jit.script so that it can read the imports`));
  }
  return record(ctx, f, { kind: 'function', name }, args, '', at);
}

/** A traced submodule's graph, inlined with its inputs bound to `args` (its symbols renamed to ours). */
function inlineTraced(ctx: ScriptContext, f: Frame, g: Graph, path: string, args: SValue[], at: TsNode): SValue {
  const inputs = g.inputs.filter((i) => i.kind === 'input');
  if (args.length !== inputs.length || args.some((a) => a.k !== 'tensor')) {
    throw f.src.error(at, `the traced module takes ${inputs.length} tensor argument(s); got ${args.map(describe).join(', ') || 'none'}`);
  }
  const renames = new Map<string, string>();
  const values = args.map((a, k) => {
    const v = (a as { v: Value }).v, want = inputs[k].value.type as TensorIRType, got = v.type as TensorIRType;
    const fail = () => f.src.error(at, `argument ${k} has type ${typeToString(got)} but the traced module was recorded for ${typeToString(want)}`);
    if (got.kind !== 'tensor' || got.dtype !== want.dtype || got.shape.length !== want.shape.length) throw fail();
    want.shape.forEach((d, j) => {
      const mine = got.shape[j];
      if (typeof d === 'number') { if (mine !== d) throw fail(); return; }
      const known = renames.get(d);
      if (known !== undefined && known !== String(mine)) throw fail();
      renames.set(d, String(mine));
    });
    return v;
  });
  const outs = ctx.inlineGraph(g, values, path, renames);
  return outs.length === 1 ? { k: 'tensor', v: outs[0] } : { k: 'list', items: outs.map((v) => ({ k: 'tensor', v }) as SValue) };
}

/** The symbols of the tensors among `args` (nested in lists and objects too). */
function tensorSymbols(args: readonly SValue[]): Set<string> {
  const out = new Set<string>();
  const walk = (v: SValue) => {
    if (v.k === 'tensor') for (const d of (v.v.type as TensorIRType).shape) if (typeof d === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(d)) out.add(d);
    if (v.k === 'list') v.items.forEach(walk);
    if (v.k === 'object') Object.values(v.entries).forEach(walk);
  };
  args.forEach(walk);
  return out;
}

/**
 * Records one eager call through the host and inlines it. A run-time number argument is a size
 * when it stands for a dim of the call's own tensors (`x.reshape(x.shape[0], -1)`, traced
 * shape-generic); any other one (`x.add(n)`, `x.sum().div(x.shape[0])`) becomes a 0-d tensor
 * (`to_tensor`) passed where eager passes the number, so the op broadcasts it.
 */
export function record(ctx: ScriptContext, f: Frame, target: Parameters<ScriptContext['inlineCall']>[0], args: SValue[], prefix: string, at: TsNode): SValue {
  const tensors: Value[] = [];
  const symbols = tensorSymbols(args);
  const dims: { d: Dim; at: TsNode }[] = [];
  let runtimeNumbers = 0;
  const tensorArg = (v: Value): TraceArg => {
    const k = tensors.indexOf(v);
    if (k >= 0) return { kind: 'tensor', index: k };
    tensors.push(v);
    return { kind: 'tensor', index: tensors.length - 1 };
  };
  const conv = (v: SValue): TraceArg => {
    switch (v.k) {
      case 'tensor': return tensorArg(v.v);
      case 'static': return { kind: 'static', value: v.value };
      case 'list': return { kind: 'list', items: v.items.map(conv) };
      case 'object': return { kind: 'object', entries: Object.fromEntries(Object.entries(v.entries).map(([k, x]) => [k, conv(x)])) };
      case 'scalar': {
        if (typeof v.dim === 'number') return { kind: 'static', value: v.dim };
        const atoms = v.dim === undefined ? [] : String(v.dim).match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [];
        if (v.dim !== undefined && atoms.every((s) => symbols.has(s))) return { kind: 'size', dim: v.dim };
        runtimeNumbers++;
        const dtype = v.v.type.kind === 'scalar' ? v.v.type.dtype : 'float32';
        return tensorArg(ctx.b.op('to_tensor', [v.v], { dtype })[0]);
      }
      case 'shape': {
        const t = v.of.type as TensorIRType;
        return { kind: 'list', items: t.shape.map((d): TraceArg => {
          if (typeof d === 'number') return { kind: 'static', value: d };
          dims.push({ d, at });
          return { kind: 'size', dim: d };
        }) };
      }
      default: throw f.src.error(at, `${describe(v)} cannot be passed to a tensor operation`);
    }
  };
  const traceArgs = args.map(conv);
  for (const { d } of dims) {
    for (const s of String(d).match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) {
      if (!symbols.has(s)) {
        throw f.src.error(at, `this call takes the size '${d}' but none of its tensor arguments has the dim '${s}' itself, so the size cannot stay symbolic; ` +
          'derive it from a tensor passed to the same call (e.g. y.reshape(y.shape[0], -1)) or use a static size');
      }
    }
  }
  const hint = runtimeNumbers ? ' (a run-time number argument is passed as a 0-d tensor; where the operation needs a number known when compiling, ' +
    'compute it from static values or tensor sizes, or keep the computation in tensor ops)' : '';
  return ctx.inlineCall(target, tensors, traceArgs, prefix, at, f.src, hint);
}

