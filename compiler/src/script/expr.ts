// Expressions → scripter values. Literals and arithmetic on static values fold; `this.*`
// resolves to parameters (graph inputs), submodules and static attributes of the instance;
// `x.shape[i]` becomes a static size or a `dim` node; `?:` on a run-time condition becomes an
// `if` node; calls go to calls.ts. Invariant: anything not handled here is a ScriptError at
// the node, naming the construct and what to do instead.

import type { Node as TsNode, SyntaxKind, Expression } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { TensorIRType } from '@kiln/ir-spec';
import type { Frame, ScriptContext } from './context.js';
import type { ScriptField } from './host.js';
import { condition, logical, scalarBinary, scalarUnary } from './scalars.js';
import { buildIf } from './stmt.js';
import { itemPath, lowerCall } from './calls.js';
import { findFunction } from './source.js';
import { makeClosure } from './closures.js';
import { compareModules, dictIndex, dictProperty } from './modules.js';
import { importedDeclaration } from './imports.js';
import { unsupportedConstruct } from './construct-names.js';
import { describe, stat, type Env, type SValue } from './values.js';

/** Identifiers under which bundlers and test runners rename imports (`__vi_import_0__.F`). */
export const IMPORT_ALIAS = /^(__vi_import_\d+__|__vite_ssr_import_\d+__|import_[A-Za-z0-9_$]+|_[A-Za-z0-9_$]*__WEBPACK_IMPORTED_MODULE_\d+__)$/;

export function lowerExpr(ctx: ScriptContext, f: Frame, env: Env, e: TsNode): SValue {
  if (tsm().Node.isParenthesizedExpression(e) || tsm().Node.isAsExpression(e) || tsm().Node.isNonNullExpression(e) || tsm().Node.isTypeAssertion(e) || tsm().Node.isSatisfiesExpression(e)) {
    return lowerExpr(ctx, f, env, e.getExpression());
  }
  if (tsm().Node.isNumericLiteral(e)) return stat(e.getLiteralValue());
  if (tsm().Node.isStringLiteral(e) || tsm().Node.isNoSubstitutionTemplateLiteral(e)) return stat(e.getLiteralValue());
  switch (e.getKind()) {
    case tsm().SyntaxKind.TrueKeyword: return stat(true);
    case tsm().SyntaxKind.FalseKeyword: return stat(false);
    case tsm().SyntaxKind.NullKeyword: return stat(null);
    case tsm().SyntaxKind.ThisKeyword:
      if (!f.mod) throw f.src.error(e, "'this' is only available in methods of a module; pass the values as arguments");
      return { k: 'module', mod: f.mod, path: f.path };
  }
  if (tsm().Node.isIdentifier(e)) return identifier(ctx, f, env, e);
  if (tsm().Node.isPropertyAccessExpression(e)) return property(ctx, f, env, lowerObject(ctx, f, env, e.getExpression()), e.getName(), e);
  if (tsm().Node.isElementAccessExpression(e)) {
    const obj = lowerExpr(ctx, f, env, e.getExpression());
    const arg = e.getArgumentExpression();
    if (!arg) throw f.src.error(e, 'an index is missing');
    const idx = lowerExpr(ctx, f, env, arg);
    if (obj.k === 'module' && obj.mod.kind === 'dict') return dictIndex(ctx, f, obj, idx, arg);
    if (idx.k !== 'static' || (typeof idx.value !== 'number' && typeof idx.value !== 'string')) {
      throw f.src.error(arg, `the index must be known when compiling (a literal or a loop variable of a loop with static bounds), got ${describe(idx)}`);
    }
    return typeof idx.value === 'string' ? property(ctx, f, env, obj, idx.value, e) : element(ctx, f, obj, idx.value, e);
  }
  if (tsm().Node.isCallExpression(e)) return lowerCall(ctx, f, env, e);
  if (tsm().Node.isBinaryExpression(e)) return binary(ctx, f, env, e);
  if (tsm().Node.isPrefixUnaryExpression(e) || tsm().Node.isPostfixUnaryExpression(e)) {
    const op = e.getOperatorToken();
    if (op === tsm().SyntaxKind.PlusPlusToken || op === tsm().SyntaxKind.MinusMinusToken) {
      const target = e.getOperand();
      const old = lowerExpr(ctx, f, env, target);
      const updated = scalarBinary(ctx, f.src, e, op === tsm().SyntaxKind.PlusPlusToken ? '+' : '-', old, stat(1));
      assign(f, env, target, updated);
      return tsm().Node.isPrefixUnaryExpression(e) ? updated : old;
    }
    const text = op === tsm().SyntaxKind.MinusToken ? '-' : op === tsm().SyntaxKind.PlusToken ? '+' : op === tsm().SyntaxKind.ExclamationToken ? '!' : '';
    if (!text) throw f.src.error(e, `the operator '${e.getText().replace(/[\w\s.$()]/g, '')}' is not supported by jit.script; use the tensor methods or Math functions instead`);
    return scalarUnary(ctx, f.src, e, text, lowerExpr(ctx, f, env, e.getOperand()));
  }
  if (tsm().Node.isConditionalExpression(e)) {
    const c = condition(ctx, f.src, e.getCondition(), lowerExpr(ctx, f, env, e.getCondition()));
    if (typeof c === 'boolean') return lowerExpr(ctx, f, env, c ? e.getWhenTrue() : e.getWhenFalse());
    return buildIf(ctx, f, e, c, 'the value of this conditional expression', () => lowerExpr(ctx, f, env, e.getWhenTrue()), () => lowerExpr(ctx, f, env, e.getWhenFalse()));
  }
  if (tsm().Node.isArrayLiteralExpression(e)) {
    return { k: 'list', items: e.getElements().map((x) => {
      if (tsm().Node.isSpreadElement(x)) {
        throw f.src.error(x, 'spread (...) in an array literal is not supported by jit.script; list the elements');
      }
      return lowerExpr(ctx, f, env, x);
    }) };
  }
  if (tsm().Node.isArrowFunction(e) || tsm().Node.isFunctionExpression(e)) return makeClosure(f, env, e);
  if (tsm().Node.isObjectLiteralExpression(e)) {
    const entries: Record<string, SValue> = {};
    for (const p of e.getProperties()) {
      if (tsm().Node.isPropertyAssignment(p)) entries[p.getName()] = lowerExpr(ctx, f, env, p.getInitializerOrThrow());
      else if (tsm().Node.isShorthandPropertyAssignment(p)) entries[p.getName()] = identifier(ctx, f, env, p.getNameNode());
      else throw f.src.error(p, unsupportedConstruct(p));
    }
    return { k: 'object', entries };
  }
  throw f.src.error(e, unsupportedConstruct(e));
}


export function lowerObject(ctx: ScriptContext, f: Frame, env: Env, e: Expression): SValue {
  if (tsm().Node.isIdentifier(e) && IMPORT_ALIAS.test(e.getText()) && !env.has(e.getText())) return { k: 'ns', name: '' };
  return lowerExpr(ctx, f, env, e);
}

function identifier(ctx: ScriptContext, f: Frame, env: Env, e: TsNode): SValue {
  const name = e.getText();
  const v = env.lookup(name);
  if (v) return v;
  if (name === 'undefined') return stat(undefined);
  if (name === 'Infinity') return stat(Infinity);
  if (name === 'NaN') return stat(NaN);
  if (name === 'Math') return { k: 'ns', name: 'Math' };
  const fn = findFunction(f.src, name);
  if (fn) return { k: 'fn', name, decl: fn };
  const imported = importedDeclaration(f.src, name);
  if (imported?.kind === 'function') return { k: 'fn', name, decl: imported.decl };
  if (imported?.kind === 'namespace') {
    throw f.src.error(e, `namespace imports of your own files (import * as ${name} from '${imported.spec}') are not supported by jit.script; ` +
      `import the functions by name: import { fn } from '${imported.spec}'`);
  }
  if (ctx.host.hasFunction(name)) return { k: 'ns', name };
  const global = ctx.host.readGlobal?.(name);
  if (global !== undefined) return stat(global);
  throw f.src.error(e, `'${name}' is not a local variable, a parameter, a function of this file or a Kiln function; ` +
    'compiled code cannot capture variables from outside the method (they may change after compiling). ' +
    'Pass the value as an argument or store it on the module in the constructor' +
    (f.src.typed ? '' : ". Only the method's runtime text is available, which does not include the file's other functions: pass { sourceFile } to jit.script"));
}

/** `obj.name` */
export function property(ctx: ScriptContext, f: Frame, env: Env, obj: SValue, name: string, at: TsNode): SValue {
  if (obj.k === 'module') {
    if (name === 'training') { ctx.assume(obj.mod, '#training', obj.path); return stat(obj.mod.training); }
    if (obj.mod.kind === 'dict') return dictProperty(ctx, f, obj, name, at);
    const fld = obj.mod.field(name);
    if (fld) {
      ctx.assume(obj.mod, name, obj.path);
      return fieldValue(ctx, fld, obj.path ? `${obj.path}.${name}` : name);
    }
    if (name === 'length' && (obj.mod.kind === 'list' || obj.mod.kind === 'sequential')) { ctx.assume(obj.mod, '#items', obj.path); return stat(obj.mod.items().length); }
    throw f.src.error(at, `${obj.mod.className} has no field '${name}' that jit.script can read (tensors, modules, numbers, booleans, strings and arrays of them are supported)`);
  }
  if (obj.k === 'ns') return { k: 'ns', name: obj.name ? `${obj.name}.${name}` : name };
  if (obj.k === 'tensor') {
    const t = obj.v.type as TensorIRType;
    if (name === 'shape') return { k: 'shape', of: obj.v };
    if (name === 'ndim') return stat(t.shape.length);
    if (name === 'dtype') return stat(t.dtype);
    throw f.src.error(at, `the tensor property '${name}' is not supported by jit.script (shape, ndim and dtype are)`);
  }
  if ((obj.k === 'shape' || obj.k === 'list') && name === 'length') {
    return stat(obj.k === 'list' ? obj.items.length : (obj.of.type as TensorIRType).shape.length);
  }
  if (obj.k === 'object' && name in obj.entries) return obj.entries[name];
  if (obj.k === 'static' && typeof obj.value === 'string' && name === 'length') return stat(obj.value.length);
  throw f.src.error(at, `reading '${name}' of ${describe(obj)} is not supported by jit.script; read fields of the model (this.name), sizes (x.shape[i]) and array elements, or move this code into a method marked @jit.ignore`);
}

function fieldValue(ctx: ScriptContext, fld: ScriptField, path: string): SValue {
  switch (fld.kind) {
    case 'tensor': return { k: 'tensor', v: ctx.param(path, fld.tensor) };
    case 'module': return { k: 'module', mod: fld.module, path };
    case 'static': return stat(fld.value);
    case 'list': return { k: 'list', items: fld.items.map((x, i) => fieldValue(ctx, x, `${path}.${i}`)) };
  }
}

/** `obj[i]` with a static index. */
function element(ctx: ScriptContext, f: Frame, obj: SValue, i: number, at: TsNode): SValue {
  if (obj.k === 'shape') {
    const shape = (obj.of.type as TensorIRType).shape;
    const k = i < 0 ? i + shape.length : i;
    if (k < 0 || k >= shape.length) throw f.src.error(at, `index ${i} is out of range for a shape of rank ${shape.length}`);
    const d = shape[k];
    if (typeof d === 'number') return stat(d);
    return { k: 'scalar', v: ctx.b.op('dim', [obj.of], { index: k })[0], dim: d };
  }
  if (obj.k === 'list') {
    const k = i < 0 ? i + obj.items.length : i;
    if (k < 0 || k >= obj.items.length) throw f.src.error(at, `index ${i} is out of range for an array of ${obj.items.length}`);
    return obj.items[k];
  }
  if (obj.k === 'module' && (obj.mod.kind === 'list' || obj.mod.kind === 'sequential')) {
    const items = obj.mod.items();
    const k = i < 0 ? i + items.length : i;
    if (k < 0 || k >= items.length) throw f.src.error(at, `index ${i} is out of range for a ModuleList of ${items.length}`);
    return { k: 'module', mod: items[k], path: itemPath(obj.mod, obj.path, k) };
  }
  if (obj.k === 'tensor') throw f.src.error(at, 'indexing a tensor with [] is not supported by jit.script; use x.slice(...), x.select(...) or x.indexSelect(...)');
  throw f.src.error(at, `indexing ${describe(obj)} is not supported by jit.script; index arrays, ModuleLists and x.shape with a number known when compiling`);
}

const ASSIGN_OPS: Record<string, string> = { '+=': '+', '-=': '-', '*=': '*', '/=': '/', '**=': '**', '%=': '%' };

function binary(ctx: ScriptContext, f: Frame, env: Env, e: import('ts-morph').BinaryExpression): SValue {
  const op = e.getOperatorToken().getText();
  if (op === '=') {
    const v = lowerExpr(ctx, f, env, e.getRight());
    assign(f, env, e.getLeft(), v);
    return v;
  }
  if (ASSIGN_OPS[op]) {
    const v = scalarBinary(ctx, f.src, e, ASSIGN_OPS[op], lowerExpr(ctx, f, env, e.getLeft()), lowerExpr(ctx, f, env, e.getRight()));
    assign(f, env, e.getLeft(), v);
    return v;
  }
  if (op === '&&' || op === '||') return logical(ctx, f.src, e, op, lowerExpr(ctx, f, env, e.getLeft()), () => lowerExpr(ctx, f, env, e.getRight()));
  if (op === '??') {
    const a = lowerExpr(ctx, f, env, e.getLeft());
    return a.k === 'static' && (a.value === null || a.value === undefined) ? lowerExpr(ctx, f, env, e.getRight()) : a;
  }
  if (op === 'instanceof' || op === 'in' || op === ',') throw f.src.error(e, `the operator '${op}' is not supported by jit.script; ` +
    (op === ',' ? 'write the expressions as separate statements' : 'types and fields are known when compiling: decide outside the model, or use separate methods'));
  const left = lowerExpr(ctx, f, env, e.getLeft()), right = lowerExpr(ctx, f, env, e.getRight());
  return compareModules(op, left, right) ?? scalarBinary(ctx, f.src, e, op, left, right);
}

/** `target = v` for a local variable (or an array pattern of them). */
export function assign(f: Frame, env: Env, target: TsNode, v: SValue): void {
  if (tsm().Node.isParenthesizedExpression(target)) return assign(f, env, target.getExpression(), v);
  if (tsm().Node.isIdentifier(target)) {
    const name = target.getText();
    if (!env.has(name)) throw f.src.error(target, `'${name}' is not a local variable of the compiled code; assigning to outer variables is not supported`);
    if (!env.isMutable(name)) throw f.src.error(target, `'${name}' is a const`);
    env.assign(name, v);
    return;
  }
  if (tsm().Node.isArrayLiteralExpression(target) && v.k === 'list') {
    target.getElements().forEach((el, i) => { if (!tsm().Node.isOmittedExpression(el)) assign(f, env, el, v.items[i] ?? stat(undefined)); });
    return;
  }
  if (tsm().Node.isPropertyAccessExpression(target) && target.getExpression().getKind() === tsm().SyntaxKind.ThisKeyword) {
    throw f.src.error(target, "assigning to a module field inside compiled code is not supported (it would mutate the module at run time); keep the value in a local variable, or update buffers outside the compiled forward");
  }
  throw f.src.error(target, 'jit.script can only assign to local variables (or destructure an array into them)');
}

/** Declares the names of a binding pattern (`x`, `[a, b]`) with the parts of `v`. */
export function bindPattern(f: Frame, env: Env, name: TsNode, v: SValue, mutable: boolean): void {
  if (tsm().Node.isIdentifier(name)) {
    if (env.declaresHere(name.getText())) throw f.src.error(name, `'${name.getText()}' is declared twice in the same block`);
    env.declare(name.getText(), v, mutable);
    return;
  }
  if (tsm().Node.isArrayBindingPattern(name)) {
    if (v.k !== 'list') throw f.src.error(name, `array destructuring needs an array or tuple, got ${describe(v)}`);
    name.getElements().forEach((el, i) => {
      if (tsm().Node.isOmittedExpression(el)) return;
      if (el.getDotDotDotToken() || el.getInitializer()) throw f.src.error(el, 'rest elements and defaults in destructuring are not supported by jit.script; destructure element by element');
      bindPattern(f, env, el.getNameNode(), v.items[i] ?? stat(undefined), mutable);
    });
    return;
  }
  throw f.src.error(name, 'object destructuring is not supported by jit.script; read the fields one by one');
}
