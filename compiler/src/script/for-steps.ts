// `for` loops beyond `for (let i = a; i < b; i++)`: counting down (`i--`, `i -= k`), any step
// (`i += 2`, `i = i + k`), and the tests `<`, `<=`, `>`, `>=` (the loop variable on either side);
// any other update (`s *= 2`) when the start is known when compiling, run on static values.
// With static start, bound and step the loop is unrolled, as the counting-up loop is; otherwise
// it is a `loop` region whose index i gives the loop variable start + i·step: with a static step
// the trip count is computed before the loop (max(0, ⌊(distance + step − 1)/step⌋)), with a
// run-time step the region tests the loop's condition after each trip, exactly as JavaScript
// does. JavaScript evaluates the bound and the step on every trip: a body that assigns a
// variable they read is refused rather than frozen. Invariant: the loop variable takes the
// values, in the order, that the eager loop gives it.

import type { Node as TsNode, SyntaxKind, Expression, ForStatement } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { Value } from '@kiln/ir-spec';
import type { Frame, ScriptContext } from './context.js';
import { lowerExpr } from './expr.js';
import { condition } from './scalars.js';
import { runtimeLoop, unrolled } from './loops.js';
import { assignedNames, type Completion } from './stmt.js';
import { Env, stat, type SValue } from './values.js';

const FLIP: Record<string, string> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/** The parts of a `for` loop over one numeric variable. */
interface Stepped {
  readonly name: string;
  readonly start: Expression;
  /** The test, with the loop variable on the left: `i op bound`. */
  readonly op: '<' | '<=' | '>' | '>=';
  readonly bound: Expression;
  /** The step expression and its sign (`i -= k` steps by -k). */
  readonly step: Expression | 1;
  readonly negate: boolean;
  /** Whether the test was written `bound op i`. */
  readonly flipped: boolean;
}

/**
 * Lowers `s` when it is a counting loop other than the plain `i < b; i++` form (which loops.ts
 * lowers itself), or another loop over a static variable (`s *= 2`, simulated and unrolled);
 * returns undefined for the plain form and for shapes it does not recognise.
 */
export function steppedFor(ctx: ScriptContext, f: Frame, env: Env, s: ForStatement): Completion | undefined {
  const p = parse(s);
  if (!p) return simulated(ctx, f, env, s);
  const body = s.getStatement();
  const assigned = new Set(assignedNames(body));
  if (assigned.has(p.name)) return undefined; // loops.ts reports it
  checkBound(f, env, p.name, assigned, [['bound', p.bound], ['step', p.step]]);
  const plainUp = (p.op === '<' || p.op === '<=') && p.step === 1 && !p.negate && !p.flipped;
  if (plainUp) return undefined;
  const start = lowerExpr(ctx, f, env, p.start);
  const bound = lowerExpr(ctx, f, env, p.bound);
  let step = p.step === 1 ? stat(1) : lowerExpr(ctx, f, env, p.step);
  if (p.negate) step = step.k === 'static' && typeof step.value === 'number' ? stat(-step.value) : negate(ctx, f, p.step as Expression, step);
  const num = (v: SValue): v is { k: 'static'; value: number } => v.k === 'static' && typeof v.value === 'number';
  if (num(step) && step.value === 0) throw f.src.error(s.getIncrementorOrThrow(), 'this loop steps by 0, so it never ends (or never starts); step by a non-zero amount');
  const up = p.op === '<' || p.op === '<=';
  if (num(step) && (step.value > 0) !== up) {
    throw f.src.error(s.getIncrementorOrThrow(), `this loop steps ${step.value > 0 ? 'up' : 'down'} by ${Math.abs(step.value)} but tests '${p.name} ${p.op} ...', so it either never runs or never ends; ` +
      `step ${up ? 'up' : 'down'} (${p.name} ${up ? '+=' : '-='} ...) or test '${p.name} ${FLIP[p.op]} ...'`);
  }
  if (num(start) && num(bound) && num(step)) {
    const a = start.value, b = bound.value, d = step.value, { name, op: test } = p;
    const holds = (i: number) => (test === '<' ? i < b : test === '<=' ? i <= b : test === '>' ? i > b : i >= b);
    function* steps() { for (let i = a; holds(i); i += d) yield (e: Env) => e.declare(name, stat(i), false); }
    return unrolled(ctx, f, env, body, steps());
  }
  const asInt = (v: SValue, what: string): Value => {
    const x = ctx.scalarValue(v, 'int32');
    if (!x || x.type.kind !== 'scalar' || x.type.dtype !== 'int32') {
      throw f.src.error(s, `the loop's ${what} must be an integer when it is not known when compiling (got ${v.k === 'scalar' && v.v.type.kind === 'scalar' ? v.v.type.dtype : describeKind(v)})`);
    }
    return x;
  };
  const op = (fn: string, a: Value, b: Value): Value => ctx.b.op('scalar_op', [a, b], { fn })[0];
  const a = asInt(start, 'start'), b = asInt(bound, 'bound'), d = asInt(step, 'step');
  const at = (e: Env, i: Value): void => { e.declare(p.name, { k: 'scalar', v: op('add', a, op('mul', i, d)) }, false); };
  if (num(step)) {
    // Trips: how many of start, start+step, ... pass the test, from the distance to the bound.
    const size = Math.abs(step.value);
    const dist = up ? op('sub', b, a) : op('sub', a, b);
    const slack = p.op === '<=' || p.op === '>=' ? size : size - 1;
    const count = op('floordiv', op('add', dist, ctx.scalar(slack, 'int32')), ctx.scalar(size, 'int32'));
    const trips = op('max', count, ctx.scalar(0, 'int32'));
    return runtimeLoop(ctx, f, env, s, trips, null, at, null);
  }
  // A run-time step: test the condition before the first trip and after each one.
  const test = (i: Value): Value => op(p.op === '<' ? 'lt' : p.op === '<=' ? 'le' : p.op === '>' ? 'gt' : 'ge', i, b);
  return runtimeLoop(ctx, f, env, s, null, test(a), at, (e) => {
    const cur = e.lookup(p.name);
    if (cur?.k !== 'scalar') throw f.src.error(s, `internal: the loop variable '${p.name}' is not a run-time number`);
    return test(op('add', cur.v, d));
  });
}

/** Refuses a bound or step that reads a variable the loop body assigns (JavaScript re-reads it every trip). */
function checkBound(f: Frame, env: Env, name: string, assigned: ReadonlySet<string>, parts: readonly (readonly [string, TsNode | 1])[]): void {
  for (const [what, e] of parts) {
    if (e === 1) continue;
    // Identifiers that name variables (not the property of `a.b`).
    const ids = [e, ...e.getDescendantsOfKind(tsm().SyntaxKind.Identifier)].filter((n) => {
      const parent = n.getParent();
      return tsm().Node.isIdentifier(n) && !(parent && tsm().Node.isPropertyAccessExpression(parent) && parent.getNameNode() === n);
    });
    const changed = ids.map((n) => n.getText()).find((n) => n !== name && assigned.has(n) && env.has(n));
    if (changed) {
      throw f.src.error(e, `the ${what} of this loop reads '${changed}', which the loop body assigns; JavaScript would re-read it on every trip and jit.script evaluates it once. ` +
        `Copy it into a const before the loop (const ${changed === 'stop' ? 'limit' : 'stop'} = ${changed}), or write a 'while' loop`);
    }
  }
}

/**
 * Any other `for (let v = start; cond; update)` whose start is known when compiling and whose
 * condition and update keep it so (`s *= 2`, `s = s * 2 + 1`): run on static values and unrolled.
 * Undefined when the loop is not of that kind (loops.ts then says which forms it compiles).
 */
function simulated(ctx: ScriptContext, f: Frame, env: Env, s: ForStatement): Completion | undefined {
  const init = s.getInitializer(), cond = s.getCondition(), inc = s.getIncrementor();
  if (!init || !tsm().Node.isVariableDeclarationList(init) || init.getDeclarations().length !== 1 || !cond || !inc) return undefined;
  const decl = init.getDeclarations()[0], startExpr = decl.getInitializer();
  if (!startExpr || !tsm().Node.isIdentifier(decl.getNameNode())) return undefined;
  const name = decl.getName();
  const assigned = new Set(assignedNames(s.getStatement()));
  if (assigned.has(name)) return undefined;
  const start = lowerExpr(ctx, f, env, startExpr);
  if (start.k !== 'static') return undefined;
  checkBound(f, env, name, assigned, [['condition', cond], ['update', inc]]);
  // A private scope holding only the loop variable: the condition and the update run there.
  const scratch = new Env(env);
  scratch.declare(name, start, true);
  const holds = (): boolean => {
    const c = condition(ctx, f.src, cond, lowerExpr(ctx, f, scratch, cond));
    if (typeof c !== 'boolean') {
      throw f.src.error(cond, "the condition of this loop depends on a run-time value; jit.script compiles such a 'for' loop when it steps by addition " +
        "(for (let i = a; i < n; i += k)); rewrite it in that form or as a 'while' loop");
    }
    return c;
  };
  function* steps() {
    while (holds()) {
      const v = scratch.lookup(name)!;
      if (v.k !== 'static') throw f.src.error(inc!, `the update of this loop makes '${name}' a run-time value; write the loop with a step (${name} += k) or as a 'while' loop`);
      yield (e: Env) => e.declare(name, v, false);
      lowerExpr(ctx, f, scratch, inc!);
    }
  }
  return unrolled(ctx, f, env, s.getStatement(), steps());
}

function negate(ctx: ScriptContext, f: Frame, at: TsNode, v: SValue): SValue {
  if (v.k !== 'scalar') throw f.src.error(at, `the step of this loop must be a number, got ${describeKind(v)}`);
  return { k: 'scalar', v: ctx.b.op('scalar_op', [v.v], { fn: 'neg' })[0] };
}

function describeKind(v: SValue): string { return v.k === 'static' ? typeof v.value : v.k; }

/** Recognises `for (let i = start; i op bound | bound op i; step)`; undefined otherwise. */
function parse(s: ForStatement): Stepped | undefined {
  const init = s.getInitializer(), cond = s.getCondition(), inc = s.getIncrementor();
  if (!init || !tsm().Node.isVariableDeclarationList(init) || init.getDeclarations().length !== 1 || !cond || !inc) return undefined;
  const decl = init.getDeclarations()[0];
  const name = decl.getName(), start = decl.getInitializer();
  if (!start || !tsm().Node.isIdentifier(decl.getNameNode()) || !tsm().Node.isBinaryExpression(cond)) return undefined;
  let op = cond.getOperatorToken().getText();
  if (!FLIP[op]) return undefined;
  let bound: Expression;
  if (cond.getLeft().getText() === name) bound = cond.getRight();
  else if (cond.getRight().getText() === name) { bound = cond.getLeft(); op = FLIP[op]; } else return undefined;
  const isName = (n: TsNode) => tsm().Node.isIdentifier(n) && n.getText() === name;
  let step: Expression | 1, negate = false;
  if ((tsm().Node.isPostfixUnaryExpression(inc) || tsm().Node.isPrefixUnaryExpression(inc)) && isName(inc.getOperand())) {
    const t = inc.getOperatorToken();
    if (t !== tsm().SyntaxKind.PlusPlusToken && t !== tsm().SyntaxKind.MinusMinusToken) return undefined;
    step = 1;
    negate = t === tsm().SyntaxKind.MinusMinusToken;
  } else if (tsm().Node.isBinaryExpression(inc) && isName(inc.getLeft())) {
    const t = inc.getOperatorToken().getText();
    const r = inc.getRight();
    if (t === '+=' || t === '-=') { step = r; negate = t === '-='; }
    else if (t === '=' && tsm().Node.isBinaryExpression(r) && isName(r.getLeft()) && ['+', '-'].includes(r.getOperatorToken().getText())) {
      step = r.getRight();
      negate = r.getOperatorToken().getText() === '-';
    } else return undefined;
  } else return undefined;
  if (step !== 1 && tsm().Node.isNumericLiteral(step) && step.getLiteralValue() === 1) step = 1;
  return { name, start, op: op as Stepped['op'], bound, step, negate, flipped: cond.getLeft().getText() !== name };
}
