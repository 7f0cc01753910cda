// Statements → SSA. Straight-line code updates the environment; `if` on a run-time condition
// becomes an `if` node yielding the variables its branches assign (or, when a branch returns,
// the function's result, with the statements after the `if` lowered into both branches);
// static conditions are folded; loops are lowered in loops.ts, `switch` in switch.ts. Inside a
// loop, a `break`/`continue` under a data-dependent condition sets a hidden flag and the rest
// of the trip is guarded by it (BREAK). Invariant: a Completion other than `normal` is only
// produced where control flow is static.

import type { Node as TsNode, SyntaxKind, Statement } from 'ts-morph';
import { tsm } from './ts-morph.js';
import { RetryWithDTypes, type Frame, type ScriptContext } from './context.js';
import { condition } from './scalars.js';
import { lowerExpr, bindPattern } from './expr.js';
import { flatten, joinPlans, naturalPlan, plansEqual, PlanMismatch, unflatten, type Plan } from './plan.js';
import { doLoop, forLoop, forOf, whileLoop } from './loops.js';
import { lowerSwitch } from './switch.js';
import { Env, stat, type SValue } from './values.js';
import { ScriptError } from './errors.js';
import { unsupportedConstruct } from './construct-names.js';
import type { Value } from '@kiln/ir-spec';

export type Completion =
  | { readonly kind: 'normal' }
  | { readonly kind: 'return'; readonly value: SValue }
  | { readonly kind: 'break' }
  | { readonly kind: 'continue' };

export const NORMAL: Completion = { kind: 'normal' };

/** Lowers `stmts` in order; stops at the first non-normal completion. */
export function lowerStatements(ctx: ScriptContext, f: Frame, env: Env, stmts: readonly Statement[], rest: readonly Statement[] = []): Completion {
  for (let i = 0; i < stmts.length; i++) {
    const s = stmts[i];
    ctx.b.meta = meta(f, s);
    // What runs after this statement up to the end of the function (for early returns).
    const after = () => [...stmts.slice(i + 1), ...rest];
    if (tsm().Node.isIfStatement(s)) {
      const c = located(f, s, () => condition(ctx, f.src, s.getExpression(), lowerExpr(ctx, f, env, s.getExpression())));
      const thenS = blockOf(s.getThenStatement()), elseNode = s.getElseStatement(), elseS = elseNode ? blockOf(elseNode) : [];
      if (typeof c === 'boolean') {
        const r = lowerStatements(ctx, f, new Env(env), c ? thenS : elseS, after());
        if (r.kind !== 'normal') return r;
      } else if (mayExit(s, tsm().SyntaxKind.ReturnStatement)) {
        if (f.inLoop) throw f.src.error(s, "'return' inside a data-dependent 'if' within a loop is not supported; assign the result to a variable and return after the loop");
        return { kind: 'return', value: ifReturning(ctx, f, env, s, c, [...thenS, ...after()], [...elseS, ...after()]) };
      } else {
        const exits = mayExit(s, tsm().SyntaxKind.BreakStatement) || mayExit(s, tsm().SyntaxKind.ContinueStatement);
        if (exits && !env.has(BREAK)) {
          throw f.src.error(s, "'break' or 'continue' under a data-dependent condition is not supported here; " +
            "use a 'while' loop whose condition tests the same value, or compute a mask with tensor ops");
        }
        ifAssigning(ctx, f, env, s, c, thenS, elseS, exits);
      }
    } else {
      const r = tsm().Node.isBlock(s) ? lowerStatements(ctx, f, new Env(env), s.getStatements(), after())
        : tsm().Node.isSwitchStatement(s) ? located(f, s, () => lowerSwitch(ctx, f, env, s, after()))
          : located(f, s, () => lowerStatement(ctx, f, env, s));
      if (r.kind !== 'normal') return r;
    }
    // After a data-dependent break or continue, the rest of the body runs only when neither happened.
    if (i + 1 < stmts.length && exitedAtRunTime(env)) return guardRest(ctx, f, env, s, stmts.slice(i + 1), rest);
  }
  return NORMAL;
}

/**
 * Hidden variables of a run-time loop body: whether a `break` or a `continue` has run in this
 * trip. A data-dependent one makes them run-time booleans; the statements after it are then
 * guarded by `if (!(break || continue))`, and the loop's continue condition includes `!break`.
 */
export const BREAK = '#break', CONTINUE = '#continue';

function exitedAtRunTime(env: Env): boolean {
  if (!env.has(BREAK)) return false;
  return env.lookup(BREAK)?.k === 'scalar' || env.lookup(CONTINUE)?.k === 'scalar';
}

/** `!(break || continue)` for the current trip, as a run-time bool. */
function stillRunning(ctx: ScriptContext, env: Env): Value {
  const flag = (name: string): Value => {
    const v = env.lookup(name)!;
    return v.k === 'scalar' ? v.v : ctx.scalar(!!(v.k === 'static' && v.value), 'bool');
  };
  const either = ctx.b.op('scalar_op', [flag(BREAK), flag(CONTINUE)], { fn: 'or' })[0];
  return ctx.b.op('scalar_op', [either], { fn: 'not' })[0];
}

/** Lowers `rest` under `if (!(break || continue))`, merging the variables it assigns. */
function guardRest(ctx: ScriptContext, f: Frame, env: Env, s: TsNode, rest: readonly Statement[], tail: readonly Statement[]): Completion {
  const names = [...new Set([...rest.flatMap((r) => assignedNames(r)), BREAK, CONTINUE])].filter((n) => env.has(n));
  const cond = stillRunning(ctx, env);
  const label = `one of the variables ${names.filter((n) => !n.startsWith('#')).map((n) => `'${n}'`).join(', ') || '(none)'}`;
  const merged = buildIf(ctx, f, s, cond, label, () => {
    const e = new Env(env, true);
    // Inside the guard neither has happened yet in this trip.
    e.assign(BREAK, stat(false));
    e.assign(CONTINUE, stat(false));
    const r = lowerStatements(ctx, f, e, rest, tail);
    if (r.kind === 'return') throw f.src.error(s, "'return' after a data-dependent 'break' or 'continue' in a loop is not supported; assign the result to a variable and return after the loop");
    return { k: 'list', items: names.map((n) => e.lookup(n) ?? stat(undefined)) } as SValue;
  }, () => ({ k: 'list', items: names.map((n) => env.lookup(n) ?? stat(undefined)) }));
  if (merged.k === 'list') names.forEach((n, i) => env.assign(n, merged.items[i]));
  return NORMAL;
}

/** Runs `fn`; an error that carries no source location (a shape rule, the builder) is located at `s`. */
function located<T>(f: Frame, s: TsNode, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof ScriptError || e instanceof RetryWithDTypes || e instanceof PlanMismatch || !(e instanceof Error)) throw e;
    throw f.src.error(s, `${e.message}`);
  }
}

function meta(f: Frame, n: TsNode): { scope?: string; loc?: string } {
  const { line, column } = f.src.file.getLineAndColumnAtPos(n.getStart());
  return { ...(f.path ? { scope: f.path } : {}), loc: `${f.src.display}:${line - f.src.lineOffset}:${column}` };
}

export function blockOf(s: Statement): Statement[] {
  return tsm().Node.isBlock(s) ? s.getStatements() : [s];
}

/** Whether `n` contains a `kind` statement that leaves it (not inside a nested function/loop). */
export function mayExit(n: TsNode, kind: SyntaxKind): boolean {
  let found = false;
  n.forEachDescendant((d, t) => {
    if (tsm().Node.isFunctionLikeDeclaration(d) || tsm().Node.isClassDeclaration(d) || tsm().Node.isClassExpression(d)) { t.skip(); return; }
    if (kind !== tsm().SyntaxKind.ReturnStatement && (tsm().Node.isIterationStatement(d))) { t.skip(); return; }
    if (d.getKind() === kind) { found = true; t.stop(); }
  });
  return found;
}

/** Names assigned in `n` (`x = `, `x += `, `x++`, `x.push(...)`), not counting nested functions. */
export function assignedNames(n: TsNode): string[] {
  const out = new Set<string>();
  n.forEachDescendant((d, t) => {
    if (tsm().Node.isFunctionLikeDeclaration(d)) { t.skip(); return; }
    if (tsm().Node.isBinaryExpression(d)) {
      const op = d.getOperatorToken().getKind();
      if (op >= tsm().SyntaxKind.FirstAssignment && op <= tsm().SyntaxKind.LastAssignment) collectTargets(d.getLeft(), out);
    } else if ((tsm().Node.isPrefixUnaryExpression(d) || tsm().Node.isPostfixUnaryExpression(d))) {
      const op = d.getOperatorToken();
      if (op === tsm().SyntaxKind.PlusPlusToken || op === tsm().SyntaxKind.MinusMinusToken) collectTargets(d.getOperand(), out);
    } else if (tsm().Node.isCallExpression(d)) {
      const callee = d.getExpression();
      if (tsm().Node.isPropertyAccessExpression(callee) && callee.getName() === 'push' && tsm().Node.isIdentifier(callee.getExpression())) out.add(callee.getExpression().getText());
    }
  });
  return [...out];
}

function collectTargets(n: TsNode, out: Set<string>): void {
  if (tsm().Node.isIdentifier(n)) out.add(n.getText());
  else if (tsm().Node.isArrayLiteralExpression(n)) n.getElements().forEach((e) => collectTargets(e, out));
  else if (tsm().Node.isParenthesizedExpression(n)) collectTargets(n.getExpression(), out);
}

/**
 * Builds an `if` node whose regions run `thenFn`/`elseFn` and yield what they produce under a
 * joined plan. The first attempt uses each side's own plan; a mismatch of number kinds
 * (static vs run-time, int vs float) is fixed by one retry with the joined plan.
 */
export function buildIf(ctx: ScriptContext, f: Frame, at: TsNode, cond: Value, what: string,
  thenFn: () => SValue, elseFn: () => SValue): SValue {
  let plan: Plan | undefined;
  const meta = ctx.b.meta;
  for (let attempt = 0; attempt < 3; attempt++) {
    let thenPlan: Plan | undefined;
    let retry: Plan | undefined;
    try {
      const outs = ctx.b.if(cond, () => {
        const v = thenFn();
        thenPlan = plan ?? naturalPlan(v);
        return flatten(ctx, v, thenPlan);
      }, () => {
        const v = elseFn();
        const joined = joinPlans(thenPlan!, naturalPlan(v));
        if (!plansEqual(joined, thenPlan!)) { retry = joined; throw new RetryWithDTypes(new Map()); }
        const ys = flatten(ctx, v, joined);
        ctx.b.meta = meta;
        return ys;
      });
      return unflatten(thenPlan!, outs).v;
    } catch (e) {
      if (e instanceof RetryWithDTypes && retry) { plan = retry; continue; }
      if (e instanceof PlanMismatch) throw f.src.error(at, `${what} holds ${e.why} of this data-dependent 'if'; both branches must give the same kind and type`);
      throw e;
    }
  }
  throw f.src.error(at, `${what}: the branches of this 'if' do not settle on one type (internal limit)`);
}

function ifAssigning(ctx: ScriptContext, f: Frame, env: Env, s: TsNode, cond: Value, thenS: Statement[], elseS: Statement[], exits = false): void {
  const names = [...assignedNames(s), ...(exits ? [BREAK, CONTINUE] : [])].filter((n) => env.has(n));
  const branch = (stmts: Statement[]) => () => {
    const e = new Env(env, true);
    const r = lowerStatements(ctx, f, e, stmts);
    // A break/continue has set its flag in `e` (see BREAK); the merge carries it out.
    if (r.kind !== 'normal' && !(exits && (r.kind === 'break' || r.kind === 'continue'))) {
      throw f.src.error(s, `'${r.kind}' under a data-dependent condition is not supported here`);
    }
    return { k: 'list', items: names.map((n) => e.lookup(n) ?? stat(undefined)) } as SValue;
  };
  const shown = names.filter((n) => !n.startsWith('#'));
  const label = shown.length === 1 ? `the variable '${shown[0]}'` : `one of the variables ${shown.map((n) => `'${n}'`).join(', ')}`;
  const merged = buildIf(ctx, f, s, cond, label, branch(thenS), branch(elseS));
  if (merged.k === 'list') names.forEach((n, i) => env.assign(n, merged.items[i]));
}

function ifReturning(ctx: ScriptContext, f: Frame, env: Env, s: TsNode, cond: Value, thenS: Statement[], elseS: Statement[]): SValue {
  const branch = (stmts: Statement[]) => () => {
    const r = lowerStatements(ctx, f, new Env(env, true), stmts);
    if (r.kind === 'break' || r.kind === 'continue') throw f.src.error(s, `'${r.kind}' is not supported here`);
    return r.kind === 'return' ? r.value : stat(undefined);
  };
  return buildIf(ctx, f, s, cond, 'the returned value', branch(thenS), branch(elseS));
}

function lowerStatement(ctx: ScriptContext, f: Frame, env: Env, s: Statement): Completion {
  if (tsm().Node.isVariableStatement(s)) {
    const mutable = s.getDeclarationKind() !== 'const';
    for (const d of s.getDeclarations()) {
      const init = d.getInitializer();
      const v = init ? lowerExpr(ctx, f, env, init) : stat(undefined);
      bindPattern(f, env, d.getNameNode(), v, mutable);
    }
    return NORMAL;
  }
  if (tsm().Node.isExpressionStatement(s)) { lowerExpr(ctx, f, env, s.getExpression()); return NORMAL; }
  if (tsm().Node.isReturnStatement(s)) {
    const e = s.getExpression();
    return { kind: 'return', value: e ? lowerExpr(ctx, f, env, e) : stat(undefined) };
  }
  if (tsm().Node.isBlock(s)) return lowerStatements(ctx, f, new Env(env), s.getStatements());
  if (tsm().Node.isBreakStatement(s) || tsm().Node.isContinueStatement(s)) {
    if (s.getLabel()) throw f.src.error(s, 'labelled break/continue is not supported by jit.script; restructure the loop');
    const kind = tsm().Node.isBreakStatement(s) ? 'break' : 'continue';
    if (env.has(BREAK)) env.assign(kind === 'break' ? BREAK : CONTINUE, stat(true));
    return { kind };
  }
  if (tsm().Node.isEmptyStatement(s)) return NORMAL;
  if (tsm().Node.isForStatement(s)) return forLoop(ctx, f, env, s);
  if (tsm().Node.isWhileStatement(s)) return whileLoop(ctx, f, env, s);
  if (tsm().Node.isDoStatement(s)) return doLoop(ctx, f, env, s);
  if (tsm().Node.isForOfStatement(s)) return forOf(ctx, f, env, s);
  throw f.src.error(s, unsupportedConstruct(s));
}

