// Loops → SSA. `for...of` over arrays, ModuleLists and ModuleDicts (their keys; modules.ts),
// and `for (let i = a; i < b; i++)` with static bounds (other steps, counting down, other
// updates: for-steps.ts), are unrolled (the body lowered once per iteration, break/continue folded);
// other `for`, `while` and `do ... while` loops become one `loop` node carrying the outer
// variables the body assigns, with a final `if (c) break;` folded into the continue condition.
// A `break`/`continue` under a data-dependent condition sets a hidden flag (stmt.ts BREAK): the
// rest of the trip is guarded by it, a run-time loop stops on `break`, and later unrolled
// iterations are guarded too. Invariant: a loop node's carried values keep one type; a change
// is a ScriptError, never a silent cast.

import type { Node as TsNode, SyntaxKind, DoStatement, ForOfStatement, ForStatement, IterationStatement, Statement, WhileStatement } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { Value } from '@kiln/ir-spec';
import { RetryWithDTypes, type Frame, type ScriptContext } from './context.js';
import { condition } from './scalars.js';
import { lowerExpr, bindPattern } from './expr.js';
import { itemPath } from './calls.js';
import { dynamicPlan, flatten, joinPlans, naturalPlan, plansEqual, PlanMismatch, unflatten, type Plan } from './plan.js';
import { assignedNames, blockOf, BREAK, buildIf, CONTINUE, lowerStatements, mayExit, NORMAL, type Completion } from './stmt.js';
import { Env, stat, type SValue } from './values.js';
import { steppedFor } from './for-steps.js';
import { refuseGrowingArrays } from './arrays.js';
import { dictIteration } from './modules.js';

const MAX_UNROLL = 4096;

/**
 * Lowers a loop body once per static iteration; returns the completion that ends the loop. After
 * a data-dependent `break`, each later iteration runs under `if (!break)`.
 */
export function unrolled(ctx: ScriptContext, f: Frame, env: Env, body: Statement, items: Iterable<(e: Env) => void>): Completion {
  const loopEnv = new Env(env);
  loopEnv.declare(BREAK, stat(false), true);
  const inner: Frame = { ...f, inLoop: true };
  const iteration = (e: Env, bind: (e: Env) => void): Completion => {
    e.declare(CONTINUE, stat(false), true);
    bind(e);
    return lowerStatements(ctx, inner, e, blockOf(body));
  };
  let n = 0;
  for (const bind of items) {
    if (++n > MAX_UNROLL) throw f.src.error(body, `this loop runs more than ${MAX_UNROLL} times at compile time; use a run-time bound (a tensor size or an argument)`);
    const broke = loopEnv.lookup(BREAK)!;
    if (broke.k === 'static' && broke.value) break;
    if (broke.k === 'scalar') {
      guardedIteration(ctx, f, loopEnv, body, broke.v, (e) => iteration(e, bind));
      continue;
    }
    const r = iteration(new Env(loopEnv), bind);
    if (r.kind === 'break') break;
    if (r.kind === 'return') return r;
  }
  return NORMAL;
}

/** One unrolled iteration under `if (!broke)`, merging the variables it assigns and the break flag. */
function guardedIteration(ctx: ScriptContext, f: Frame, loopEnv: Env, body: Statement, broke: Value, run: (e: Env) => Completion): void {
  const names = [...assignedNames(body), BREAK].filter((n) => loopEnv.has(n));
  const go = ctx.b.op('scalar_op', [broke], { fn: 'not' })[0];
  const merged = buildIf(ctx, f, body, go, `a variable assigned in this loop (${names.filter((n) => !n.startsWith('#')).join(', ')})`, () => {
    const e = new Env(loopEnv, true);
    e.assign(BREAK, stat(false));
    const r = run(new Env(e));
    if (r.kind === 'return') throw f.src.error(body, "'return' in a loop after a data-dependent 'break' is not supported; assign the result to a variable and return after the loop");
    return { k: 'list', items: names.map((n) => e.lookup(n)!) };
  }, () => ({ k: 'list', items: names.map((n) => loopEnv.lookup(n)!) }));
  if (merged.k === 'list') names.forEach((n, i) => loopEnv.assign(n, merged.items[i]));
}

export function forOf(ctx: ScriptContext, f: Frame, env: Env, s: ForOfStatement): Completion {
  const it = lowerExpr(ctx, f, env, s.getExpression());
  let items: SValue[];
  if (it.k === 'list') items = [...it.items];
  else if (it.k === 'module' && (it.mod.kind === 'list' || it.mod.kind === 'sequential')) {
    ctx.assume(it.mod, '#items', it.path);
    const mod = it.mod, path = it.path;
    items = mod.items().map((m, i) => ({ k: 'module', mod: m, path: itemPath(mod, path, i) }));
  } else if (it.k === 'module' && it.mod.kind === 'dict') items = dictIteration(ctx, it);
  else throw f.src.error(s.getExpression(), "'for ... of' needs an array, a tuple, a ModuleList or a ModuleDict (or this.children(), dict.items(), ...) whose length is known when compiling");
  const init = s.getInitializer();
  if (!tsm().Node.isVariableDeclarationList(init) || init.getDeclarations().length !== 1) throw f.src.error(init, "declare the loop variable with 'const' (for (const m of this.layers))");
  const decl = init.getDeclarations()[0];
  return unrolled(ctx, f, env, s.getStatement(), items.map((v) => (e: Env) => bindPattern(f, e, decl.getNameNode(), v, false)));
}

export function forLoop(ctx: ScriptContext, f: Frame, env: Env, s: ForStatement): Completion {
  // Counting down, steps other than 1, and bounds the body must not change: for-steps.ts.
  const stepped = steppedFor(ctx, f, env, s);
  if (stepped) return stepped;
  const shape = () => f.src.error(s, "jit.script compiles 'for' loops of the form for (let i = start; i < end; i++): any of <, <=, >, >= and a step i++, i--, i += k or i -= k " +
    "(other updates such as i *= 2 when the start is known when compiling); rewrite the loop in that form or as a 'while' loop");
  const init = s.getInitializer(), cond = s.getCondition(), inc = s.getIncrementor();
  if (!init || !tsm().Node.isVariableDeclarationList(init) || init.getDeclarations().length !== 1 || !cond || !inc) throw shape();
  const decl = init.getDeclarations()[0];
  const name = decl.getName();
  const startExpr = decl.getInitializer();
  if (!startExpr || !tsm().Node.isBinaryExpression(cond) || cond.getLeft().getText() !== name) throw shape();
  const op = cond.getOperatorToken().getText();
  if (op !== '<' && op !== '<=') throw shape();
  const incText = inc.getText().replace(/\s+/g, '');
  if (![`${name}++`, `++${name}`, `${name}+=1`, `${name}=${name}+1`].includes(incText)) throw shape();
  if (assignedNames(s.getStatement()).includes(name)) throw f.src.error(s, `the loop variable '${name}' is assigned inside the loop body; jit.script needs it to step by 1`);
  const start = lowerExpr(ctx, f, env, startExpr);
  const end = lowerExpr(ctx, f, env, cond.getRight());
  if (start.k === 'static' && end.k === 'static' && typeof start.value === 'number' && typeof end.value === 'number') {
    const a = start.value, b = end.value + (op === '<=' ? 1 : 0);
    function* steps() { for (let i = a; i < b; i++) yield (e: Env) => e.declare(name, stat(i), false); }
    return unrolled(ctx, f, env, s.getStatement(), steps());
  }
  const asInt = (v: SValue, what: string): Value => {
    const x = ctx.scalarValue(v, 'int32');
    if (!x || x.type.kind !== 'scalar' || x.type.dtype !== 'int32') throw f.src.error(s, `the loop's ${what} must be an integer (got ${v.k === 'scalar' && v.v.type.kind === 'scalar' ? v.v.type.dtype : v.k})`);
    return x;
  };
  const a = asInt(start, 'start'), bEnd = asInt(end, 'end');
  let trips = ctx.b.op('scalar_op', [bEnd, a], { fn: 'sub' })[0];
  if (op === '<=') trips = ctx.b.op('scalar_op', [trips, ctx.scalar(1, 'int32')], { fn: 'add' })[0];
  return runtimeLoop(ctx, f, env, s, trips, null, (e, i) => {
    const idx = start.k === 'static' && start.value === 0 ? i : ctx.b.op('scalar_op', [a, i], { fn: 'add' })[0];
    e.declare(name, { k: 'scalar', v: idx }, false);
  }, null);
}

export function whileLoop(ctx: ScriptContext, f: Frame, env: Env, s: WhileStatement): Completion {
  const condExpr = s.getExpression();
  const c0 = condition(ctx, f.src, condExpr, lowerExpr(ctx, f, env, condExpr));
  if (c0 === false) return NORMAL;
  const first = c0 === true ? ctx.scalar(true, 'bool') : c0;
  return runtimeLoop(ctx, f, env, s, null, first, () => {}, (e) => nextTrip(ctx, f, e, s, 'while'));
}

/** `do { ... } while (c)`: a loop node whose first trip always runs. */
export function doLoop(ctx: ScriptContext, f: Frame, env: Env, s: DoStatement): Completion {
  return runtimeLoop(ctx, f, env, s, null, ctx.scalar(true, 'bool'), () => {}, (e) => nextTrip(ctx, f, e, s, 'do ... while'));
}

/** The condition checked after each trip of a while/do loop, as a run-time bool. */
function nextTrip(ctx: ScriptContext, f: Frame, e: Env, s: WhileStatement | DoStatement, what: string): Value {
  const condExpr = s.getExpression();
  const c = condition(ctx, f.src, condExpr, lowerExpr(ctx, f, e, condExpr));
  if (typeof c !== 'boolean') return c;
  if (c && !mayExit(s.getStatement(), tsm().SyntaxKind.BreakStatement)) {
    throw f.src.error(condExpr, `this '${what}' condition is always true after the first iteration and the body has no 'break', so the loop would never end. Make the condition depend on a value the body updates`);
  }
  return ctx.scalar(c, 'bool');
}

/** The condition of a body's last statement when it is `if (c) break;`. */
function trailingBreak(stmts: readonly Statement[]): TsNode | undefined {
  const last = stmts[stmts.length - 1];
  if (!last || !tsm().Node.isIfStatement(last) || last.getElseStatement()) return undefined;
  const then = blockOf(last.getThenStatement());
  if (then.length !== 1 || !tsm().Node.isBreakStatement(then[0]) || then[0].getLabel()) return undefined;
  return last.getExpression();
}

/** continue = !c (and the loop's own condition `go`, when there is one). */
function exitTest(ctx: ScriptContext, f: Frame, env: Env, c: TsNode, go: Value | undefined): Value {
  const stop = condition(ctx, f.src, c, lowerExpr(ctx, f, env, c));
  const cont = typeof stop === 'boolean' ? ctx.scalar(!stop, 'bool') : ctx.b.op('scalar_op', [stop], { fn: 'not' })[0];
  return go ? ctx.b.op('scalar_op', [cont, go], { fn: 'and' })[0] : cont;
}

/** A `loop` node carrying the outer variables the body assigns. */
export function runtimeLoop(ctx: ScriptContext, f: Frame, env: Env, s: IterationStatement, trips: Value | null, cond: Value | null,
  bindIndex: (e: Env, i: Value) => void, next: ((e: Env) => Value) | null): Completion {
  const names = assignedNames(s.getStatement()).filter((n) => env.has(n));
  refuseGrowingArrays(f, env, s, names);
  if (tsm().Node.isWhileStatement(s) || tsm().Node.isDoStatement(s)) {
    for (const n of assignedNames(s.getExpression())) if (env.has(n) && !names.includes(n)) names.push(n);
  }
  const initial: SValue = { k: 'list', items: names.map((n) => env.lookup(n)!) };
  let plan = dynamicPlan(naturalPlan(initial));
  const inner: Frame = { ...f, inLoop: true };
  const meta = ctx.b.meta;
  // A final `if (c) break;` becomes part of the loop's continue condition.
  let stmts = blockOf(s.getStatement());
  const exit = trailingBreak(stmts);
  if (exit) stmts = stmts.slice(0, -1);
  for (let attempt = 0; attempt < 4; attempt++) {
    let retry: Plan | undefined;
    try {
      const init = flatten(ctx, initial, plan);
      const outs = ctx.b.loop(trips, cond, init, (i, carried) => {
        const e = new Env(env, true);
        const cur = unflatten(plan, carried).v;
        if (cur.k === 'list') names.forEach((n, k) => e.assign(n, cur.items[k]));
        bindIndex(e, i);
        const body = new Env(e);
        body.declare(BREAK, stat(false), true);
        body.declare(CONTINUE, stat(false), true);
        const r = lowerStatements(ctx, inner, body, stmts);
        if (r.kind === 'return') {
          throw f.src.error(s, "'return' inside a loop with a run-time trip count or condition is not supported; assign the result to a variable and return after the loop");
        }
        const after: SValue = { k: 'list', items: names.map((n) => e.lookup(n)!) };
        const joined = joinPlans(plan, naturalPlan(after));
        if (!plansEqual(joined, plan)) { retry = joined; throw new RetryWithDTypes(new Map()); }
        let go = next ? next(e) : undefined;
        if (exit) go = exitTest(ctx, inner, body, exit, go);
        // A break (static, or a run-time flag) ends the loop after this trip.
        const broke = r.kind === 'break' ? stat(true) : body.lookup(BREAK)!;
        if (broke.k === 'static' && broke.value) go = ctx.scalar(false, 'bool');
        else if (broke.k === 'scalar') {
          const stay = ctx.b.op('scalar_op', [broke.v], { fn: 'not' })[0];
          go = go ? ctx.b.op('scalar_op', [go, stay], { fn: 'and' })[0] : stay;
        }
        const ys = flatten(ctx, after, plan);
        ctx.b.meta = meta;
        return { next: ys, ...(go ? { continue: go } : {}) };
      });
      const res = unflatten(plan, outs).v;
      if (res.k === 'list') names.forEach((n, k) => env.assign(n, res.items[k]));
      return NORMAL;
    } catch (e) {
      if (e instanceof RetryWithDTypes && retry) { plan = retry; continue; }
      if (e instanceof PlanMismatch) {
        throw f.src.error(s, `a variable carried by this loop (${names.join(', ')}) changes kind or type in the body: ${e.why}; ` +
          'a loop-carried tensor must keep its shape (collect per-step results in an array of fixed length, or use a static bound to unroll)');
      }
      throw e;
    }
  }
  throw f.src.error(s, 'the loop-carried variables do not settle on one type (internal limit)');
}
