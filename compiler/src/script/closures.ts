// Arrow functions and function expressions. A closure is a compile-time value: its declaration
// plus the frame and environment it was created in. Calling one inlines its body (like a
// function of the file) in a CapturedScope, which resolves the variables it captures
// lexically but reads their values where it is called, as JavaScript does (a `let` reassigned
// after the closure was created, or inside a branch, is seen with its current value). A closure
// may assign a captured variable only where no data-dependent region lies between the call and
// the variable's declaration (the `if`/loop merges only see assignments written in their own
// text); elsewhere the call is refused. Invariant: a closure call computes what the eager
// closure computes at that point, or it is a located ScriptError.

import type { Node as TsNode, SyntaxKind, ArrowFunction, FunctionExpression } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { Frame, ScriptContext } from './context.js';
import { inlineFunction } from './calls.js';
import { sourceOf } from './source.js';
import { activation } from './recursion.js';
import { assignedNames } from './stmt.js';
import { Env, type SValue } from './values.js';

type FnValue = Extract<SValue, { k: 'fn' }>;

const ANONYMOUS = '(anonymous)';

/** The value of an arrow function or function expression met at `e`. */
export function makeClosure(f: Frame, env: Env, e: ArrowFunction | FunctionExpression): SValue {
  const parent = e.getParent();
  const name = (tsm().Node.isFunctionExpression(e) ? e.getName() : undefined)
    ?? (parent && tsm().Node.isVariableDeclaration(parent) ? parent.getName() : undefined) ?? ANONYMOUS;
  return { k: 'fn', name, decl: e, closure: { frame: f, env } };
}

/** Calls a function value (a closure, or a function declared in the file) with `args`. */
export function callFunction(ctx: ScriptContext, caller: Frame, env: Env, fn: FnValue, args: SValue[], at: TsNode): SValue {
  const { line, column } = fn.decl.getSourceFile().getLineAndColumnAtPos(fn.decl.getStart());
  const key = `fn:${fn.decl.getSourceFile().getFilePath()}:${line}:${column}`;
  if (!fn.closure) {
    return activation(ctx, caller, key, `the function ${fn.name}`, at,
      // A function imported from another file is read (and its errors located) in that file.
      () => inlineFunction(ctx, { ...caller, src: sourceOf(fn.decl, caller.src), stack: [...caller.stack, fn.name] }, fn.decl, undefined, args, at));
  }
  const decl = fn.decl as ArrowFunction | FunctionExpression;
  const { frame: def, env: defEnv } = fn.closure;
  const reaches = dynamicChainReaches(env, defEnv);
  const kind = tsm().Node.isArrowFunction(decl) ? 'the arrow function' : 'the function expression';
  const where = `${fn.name === ANONYMOUS ? kind : `'${fn.name}'`} (declared at ${def.src.display}:${line - def.src.lineOffset}:${column})`;
  // Captured variables the closure assigns must be assignable from the call site.
  for (const name of capturedAssignments(decl)) {
    const owner = lexicalOwner(defEnv, name);
    if (!owner) continue;
    if (!reaches) {
      throw caller.src.error(at, `${where} assigns '${name}', a variable outside it, but is called from another function or method; ` +
        `jit.script only inlines such a closure in the function that declares it. Return the new value instead (${name} = f(${name}))`);
    }
    if (isolatedBetween(env, owner)) {
      throw caller.src.error(at, `${where} assigns '${name}', a variable declared outside it, and is called inside a data-dependent 'if' or a loop with a run-time bound; ` +
        `jit.script cannot merge that assignment out of the region. Return the new value and assign it at the call (${name} = f(${name}))`);
    }
  }
  if (!reaches) {
    // Called from another function: captured variables are read where the closure was created,
    // which is only right for variables that are never reassigned.
    for (const id of decl.getDescendantsOfKind(tsm().SyntaxKind.Identifier)) {
      const parent = id.getParent();
      if (parent && tsm().Node.isPropertyAccessExpression(parent) && parent.getNameNode() === id) continue;
      const name = id.getText();
      const owner = lexicalOwner(defEnv, name);
      if (owner && owner.isMutable(name) && !isLocal(decl, name) && isReassigned(decl, name)) {
        throw caller.src.error(at, `${where} reads '${name}', a variable that is reassigned in the function that declares it, but is called from another function or method, ` +
          `where jit.script cannot tell which value '${name}' has. Copy it into a const before creating the closure, or pass it as an argument`);
      }
    }
  }
  const scope = new CapturedScope(defEnv, reaches ? env : undefined);
  // An arrow function keeps the `this` of its definition; a function expression has none.
  const frame: Frame = { ...def, mod: tsm().Node.isArrowFunction(decl) ? def.mod : undefined, stack: [...caller.stack, fn.name], inLoop: false };
  return activation(ctx, caller, key, where, at, () => inlineFunction(ctx, frame, decl, frame.mod, args, at, caller, scope));
}

/**
 * The variables a closure captures: declared in its defining environment, looked up where it is
 * called. Hidden names (`#break`) stay with the closure's own body, never the caller's loop.
 */
export class CapturedScope extends Env {
  constructor(private readonly def: Env, private readonly call: Env | undefined) { super(undefined, false); }

  /** Where the closure is called, when that is inside the environment that created it. */
  get callSite(): Env | undefined { return this.call; }

  /** The environment that declares `name`, following the definitions of enclosing closures. */
  owner(name: string): Env | undefined { return name.startsWith('#') ? undefined : lexicalOwner(this.def, name); }

  override lookup(name: string): SValue | undefined {
    const owner = this.owner(name);
    if (!owner) return undefined;
    if (!this.call) return owner.lookup(name);
    // The nearest value assigned in a region between the call and the declaration (an `if`
    // branch, a loop body), skipping regions where a same-named variable shadows it.
    let found: SValue | undefined;
    for (let e: Env | undefined = this.call; e && e !== owner; e = dynamicParent(e)) {
      if (e.declaresHere(name)) { found = undefined; continue; }
      if (found === undefined && e.overrides().has(name)) found = e.overrides().get(name);
    }
    return found ?? owner.lookup(name);
  }

  override has(name: string): boolean { return !!this.owner(name); }
  override declaresHere(): boolean { return false; }
  override isMutable(name: string): boolean { return !!this.owner(name)?.isMutable(name); }
  override declare(name: string): void { throw new Error(`internal: '${name}' declared in a captured scope`); }

  override assign(name: string, v: SValue): void {
    const owner = this.owner(name);
    // callFunction refused calls where a region lies between: the owner's own binding is the variable.
    if (!owner || !this.call || isolatedBetween(this.call, owner)) throw new Error(`internal: '${name}' assigned from a closure where it cannot be`);
    owner.assign(name, v);
  }
}

/** The next environment up where code runs: a closure's body continues where it is called. */
function dynamicParent(e: Env): Env | undefined {
  return e instanceof CapturedScope ? e.callSite : e.parent;
}

function dynamicChainReaches(from: Env, target: Env): boolean {
  for (let e: Env | undefined = from; e; e = dynamicParent(e)) if (e === target) return true;
  return false;
}

function lexicalOwner(env: Env, name: string): Env | undefined {
  for (let e: Env | undefined = env; e; e = e.parent) {
    if (e instanceof CapturedScope) return e.owner(name);
    if (e.declaresHere(name)) return e;
  }
  return undefined;
}

/** Whether a data-dependent region (an isolated environment) lies between `from` and `owner`. */
function isolatedBetween(from: Env, owner: Env): boolean {
  for (let e: Env | undefined = from; e && e !== owner; e = dynamicParent(e)) if (e.isolated) return true;
  return false;
}

/** Names the closure assigns that it does not declare itself. */
function capturedAssignments(decl: ArrowFunction | FunctionExpression): string[] {
  return assignedNames(decl).filter((n) => !isLocal(decl, n));
}

/** Whether `name` is a parameter or a variable declared in `decl` (not in a nested function). */
function isLocal(decl: ArrowFunction | FunctionExpression, name: string): boolean {
  if (decl.getParameters().some((p) => p.getName() === name)) return true;
  return decl.getDescendantsOfKind(tsm().SyntaxKind.VariableDeclaration)
    .some((v) => v.getName() === name && v.getFirstAncestor((a) => tsm().Node.isFunctionLikeDeclaration(a)) === decl);
}

/**
 * Whether the variable `name` that the closure `decl` captures is assigned anywhere in the
 * function declaring it (nested functions included). Conservative: true when not found.
 */
function isReassigned(decl: TsNode, name: string): boolean {
  for (let a = decl.getParent(); a; a = a.getParent()) {
    if (!tsm().Node.isFunctionLikeDeclaration(a)) continue;
    const declares = a.getParameters().some((p) => p.getName() === name)
      || a.getDescendantsOfKind(tsm().SyntaxKind.VariableDeclaration).some((v) => v.getName() === name && v.getFirstAncestor((x) => tsm().Node.isFunctionLikeDeclaration(x)) === a);
    if (!declares) continue;
    let found = false;
    a.forEachDescendant((d, t) => {
      if (tsm().Node.isBinaryExpression(d)) {
        const op = d.getOperatorToken().getKind();
        if (op >= tsm().SyntaxKind.FirstAssignment && op <= tsm().SyntaxKind.LastAssignment && d.getLeft().getText() === name) found = true;
      } else if ((tsm().Node.isPrefixUnaryExpression(d) || tsm().Node.isPostfixUnaryExpression(d)) && d.getOperand().getText() === name) {
        const op = d.getOperatorToken();
        if (op === tsm().SyntaxKind.PlusPlusToken || op === tsm().SyntaxKind.MinusMinusToken) found = true;
      } else if (tsm().Node.isCallExpression(d) && d.getExpression().getText() === `${name}.push`) found = true;
      if (found) t.stop();
    });
    return found;
  }
  return true;
}
