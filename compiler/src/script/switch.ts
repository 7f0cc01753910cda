// `switch` → an if-chain. The discriminant is lowered once; each case (labels grouped when
// empty cases share a body: `case 1: case 2: ...`) becomes `d === label || ...`, `default`
// the final else. A case's trailing `break` ends it; falling through into the next case, a
// `break` elsewhere in a case and a `default` before other cases are ScriptErrors. Static
// conditions pick their case at compile time. Invariant: the chain runs exactly the case
// JavaScript runs, and assigns (or returns) what that case does.

import type { Node as TsNode, SyntaxKind, Statement, SwitchStatement } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { Value } from '@kiln/ir-spec';
import type { Frame, ScriptContext } from './context.js';
import { lowerExpr } from './expr.js';
import { condition, logical, scalarBinary } from './scalars.js';
import { assignedNames, BREAK, buildIf, CONTINUE, lowerStatements, mayExit, NORMAL, type Completion } from './stmt.js';
import { Env, stat, type SValue } from './values.js';

interface CaseGroup {
  /** The label expressions; empty for `default`. */
  readonly labels: readonly TsNode[];
  readonly body: readonly Statement[];
  readonly at: TsNode;
}

/** Lowers a switch statement; `after` is what follows it up to the end of the function. */
export function lowerSwitch(ctx: ScriptContext, f: Frame, env: Env, s: SwitchStatement, after: readonly Statement[]): Completion {
  const d = lowerExpr(ctx, f, env, s.getExpression());
  const groups = caseGroups(f, s);
  const has = (kind: SyntaxKind) => groups.some((g) => g.body.some((st) => st.isKind(kind) || mayExit(st, kind)));
  const returns = has(tsm().SyntaxKind.ReturnStatement), exits = has(tsm().SyntaxKind.ContinueStatement);
  if (exits && !env.has(BREAK)) throw f.src.error(s, "'continue' inside a switch is only supported in a loop with a run-time bound or condition");
  if (returns && f.inLoop) {
    // A static discriminant still picks one case; a run-time one would need a return inside a loop region.
    const c = groups.length ? matches(ctx, f, env, d, groups[0]) : true;
    if (typeof c !== 'boolean') throw f.src.error(s, "'return' inside a switch on a run-time value within a loop is not supported; assign the result to a variable and return after the loop");
  }
  const names = [...assignedNames(s), ...(exits ? [BREAK, CONTINUE] : [])].filter((n) => env.has(n));

  /** Cases k.. into `e`; with `tail`, each path runs `after` too and the completion is its return. */
  const chain = (k: number, e: Env, tail: boolean): Completion => {
    if (k === groups.length) return tail ? lowerStatements(ctx, f, e, after) : NORMAL;
    const g = groups[k];
    const c = matches(ctx, f, e, d, g);
    if (c === true) return lowerStatements(ctx, f, new Env(e), tail ? [...g.body, ...after] : g.body, tail ? [] : after);
    if (c === false) return chain(k + 1, e, tail);
    if (tail) {
      const value = buildIf(ctx, f, g.at, c, 'the returned value', () => returned(lowerStatements(ctx, f, new Env(e, true), [...g.body, ...after])),
        () => returned(chain(k + 1, new Env(e, true), true)));
      return { kind: 'return', value };
    }
    const label = names.length === 1 ? `the variable '${names[0]}'` : `one of the variables ${names.filter((n) => !n.startsWith('#')).map((n) => `'${n}'`).join(', ')}`;
    const merged = buildIf(ctx, f, g.at, c, label, () => {
      const b = new Env(e, true);
      settled(lowerStatements(ctx, f, b, g.body));
      return { k: 'list', items: names.map((n) => b.lookup(n) ?? stat(undefined)) };
    }, () => {
      const b = new Env(e, true);
      settled(chain(k + 1, b, false));
      return { k: 'list', items: names.map((n) => b.lookup(n) ?? stat(undefined)) };
    });
    if (merged.k === 'list') names.forEach((n, i) => e.assign(n, merged.items[i]));
    return NORMAL;
  };
  const returned = (r: Completion): SValue => {
    if (r.kind === 'break' || r.kind === 'continue') throw f.src.error(s, `'${r.kind}' together with 'return' in a switch on a run-time value is not supported`);
    return r.kind === 'return' ? r.value : stat(undefined);
  };
  const settled = (r: Completion): void => {
    if (r.kind === 'return') throw f.src.error(s, "'return' in only some paths of a switch on a run-time value is not supported here");
  };
  const r = chain(0, env, returns);
  // With returns, every path ran what follows the switch too: the function ends here.
  return returns && r.kind === 'normal' ? { kind: 'return', value: stat(undefined) } : r;
}

/** `d === l1 || d === l2 ...` for a case group (true for default). */
function matches(ctx: ScriptContext, f: Frame, env: Env, d: SValue, g: CaseGroup): boolean | Value {
  if (!g.labels.length) return true;
  let acc: SValue | undefined;
  for (const l of g.labels) {
    const eq = scalarBinary(ctx, f.src, l, '===', d, lowerExpr(ctx, f, env, l));
    acc = acc === undefined ? eq : logical(ctx, f.src, l, '||', acc, () => eq);
  }
  return condition(ctx, f.src, g.at, acc!);
}

/** The case groups of `s`, each body without its trailing `break`; refuses fall-through. */
function caseGroups(f: Frame, s: SwitchStatement): CaseGroup[] {
  const clauses = s.getCaseBlock().getClauses();
  const groups: CaseGroup[] = [];
  let labels: TsNode[] = [];
  clauses.forEach((cl, i) => {
    const isDefault = tsm().Node.isDefaultClause(cl);
    if (isDefault && i !== clauses.length - 1) throw f.src.error(cl, "'default' must be the last clause of a switch for jit.script; move it after the cases");
    if (!isDefault) labels.push(cl.getExpression());
    let body = cl.getStatements().flatMap((st) => (tsm().Node.isBlock(st) ? st.getStatements() : [st]));
    if (!body.length && !isDefault) return; // an empty case shares the next one's body
    const last = body[body.length - 1];
    if (last && tsm().Node.isBreakStatement(last) && !last.getLabel()) body = body.slice(0, -1);
    else if (i !== clauses.length - 1 && !(last && (tsm().Node.isReturnStatement(last) || tsm().Node.isContinueStatement(last) || tsm().Node.isThrowStatement(last)))) {
      throw f.src.error(cl, "this case falls through into the next one; jit.script does not support fall-through. End the case with 'break' " +
        '(or list the labels together: case 1: case 2: ...)');
    }
    for (const st of body) {
      if (st.isKind(tsm().SyntaxKind.BreakStatement) || mayExit(st, tsm().SyntaxKind.BreakStatement)) {
        const brk = st.isKind(tsm().SyntaxKind.BreakStatement) ? st : st.getFirstDescendantByKind(tsm().SyntaxKind.BreakStatement) ?? st;
        throw f.src.error(brk, "a 'break' inside a switch case other than its last statement is not supported by jit.script; use if/else inside the case");
      }
    }
    groups.push({ labels: isDefault ? [] : labels, body, at: cl });
    labels = [];
  });
  if (labels.length) groups.push({ labels, body: [], at: clauses[clauses.length - 1] });
  return groups;
}
