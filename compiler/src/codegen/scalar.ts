// Compiles an elementwise entry's scalar (ir-spec/src/scalar.ts) to WGSL. A primitive entry
// goes through its template (codegen/ops/<family>.ts); a formula is compiled from its
// expression tree: a subexpression used twice becomes a `let`, and a call of an
// attribute-free composite (inside another formula, or as an epilogue activation) becomes a
// generated helper function `fn k_<op>(a0: f32) -> f32 { … }`. Invariant: the WGSL of an op is
// derived from its entry alone; no op's formula is written here.

import { getOp, argsOf, type Expr, type Prim } from '@kiln/ir-spec';
import { literal } from './shell.js';
import { NAN, TEMPLATES, type Wt } from './ops/index.js';

/** A rendered value: its code, and whether it is a WGSL `bool` (a comparison). */
export interface Rendered { readonly code: string; readonly bool: boolean }

const NAN_MAX = `${NAN}
fn k_max(a: f32, b: f32) -> f32 { if (a != a || b != b) { return k_nan(); } return max(a, b); }
fn k_min(a: f32, b: f32) -> f32 { if (a != a || b != b) { return k_nan(); } return min(a, b); }`;

const INFIX: Partial<Record<Prim, string>> = { add: '+', sub: '-', mul: '*', div: '/', eq: '==', ne: '!=', lt: '<', le: '<=', gt: '>', ge: '>=' };

/** Whether `code` needs no parentheses as an operand: a name, an index, a literal or one call. */
function isAtom(code: string): boolean {
  if (/^[\w.]+(\[[\w.]+\])?$/.test(code)) return true;
  const m = /^[\w<>]+\(/.exec(code);
  if (!m || !code.endsWith(')')) return false;
  let depth = 0;
  for (let i = m[0].length - 1; i < code.length; i++) {
    if (code[i] === '(') depth++;
    else if (code[i] === ')' && --depth === 0) return i === code.length - 1;
  }
  return false;
}
const paren = (code: string) => (isAtom(code) ? code : `(${code})`);
/** Whether `code` may be repeated instead of bound to a `let`: a name, an index or a literal. */
const isCheap = (code: string) => /^[\w.]+(\[[\w.]+\])?$/.test(code) || /^f32\([-\d.e]+\)$/.test(code) || /^i32\(-?\d+\)$/.test(code);

/** Where a formula's statements go and how its fresh names are made. */
interface Scope { readonly lines: string[]; readonly prefix: string; next: number }

/** One kernel's scalar code generator: it collects the helper functions its expressions call. */
export class WgslScalars {
  private readonly decls: string[] = [];

  /** The helper functions needed so far, each once, in the order first needed. */
  helpers(): string { return this.decls.join('\n'); }

  /**
   * `op` applied to operand expressions of type `t`; statements the formula needs are appended
   * to `lines` (their names start with `prefix`).
   */
  apply(op: string, args: readonly string[], attrs: Readonly<Record<string, unknown>>, t: Wt, lines: string[], prefix = 'v'): Rendered {
    const scope: Scope = { lines, prefix, next: 0 };
    return this.call(op, args.map((code) => ({ code, bool: false })), attrs, t, scope, false);
  }

  /** The f32 expression of epilogue activation `act` applied to `e` ('none' leaves it). */
  activation(act: string, e: string): string {
    if (act === 'none') return e;
    const s = getOp(act).scalar;
    const tpl = s && 'primitive' in s ? TEMPLATES.get(act) : undefined;
    if (tpl) {
      this.need(tpl.helpers ?? '');
      return tpl.expr([`(${e})`], {}, 'f32');
    }
    return this.helperCall(act, [e], 'f32').code;
  }

  private need(chunk: string): void {
    for (const h of chunk.split(/\n(?=fn )/)) if (h && !this.decls.includes(h)) this.decls.push(h);
  }

  /** Entry `op` on `args`; `helper`: an attribute-free formula becomes a helper function call. */
  private call(op: string, args: readonly Rendered[], attrs: Readonly<Record<string, unknown>>, t: Wt, scope: Scope, helper: boolean): Rendered {
    const def = getOp(op), s = def.scalar;
    if (!s) throw new Error(`op '${op}' has no scalar formula (its ir-spec entry's 'scalar'), so it has no elementwise WGSL`);
    const nums = args.map((a) => this.num(a, t));
    if ('primitive' in s) {
      const tpl = TEMPLATES.get(op);
      if (!tpl) throw new Error(`op '${op}' has a primitive scalar but no WGSL template; add one in compiler/src/codegen/ops/<family>.ts`);
      this.need(tpl.helpers ?? '');
      return { code: tpl.expr(nums.map(paren), attrs, t), bool: false };
    }
    const parsed = def.attrs.parse(attrs) as Record<string, unknown>;
    if (helper && Object.keys(parsed).length === 0) return this.helperCall(op, nums, t);
    return this.expand(s.formula(argsOf(def.inputs.length), parsed), args, t, scope);
  }

  /** `k_<op>(args)`, declaring the helper function on first use. */
  private helperCall(op: string, args: readonly string[], t: Wt): Rendered {
    const def = getOp(op), s = def.scalar as { formula: (xs: readonly Expr[], attrs: unknown) => Expr };
    const name = `k_${op}${t === 'f32' ? '' : `_${t}`}`;
    const params = argsOf(def.inputs.length).map((_, i) => `a${i}`);
    const scope: Scope = { lines: [], prefix: 'v', next: 0 };
    const r = this.expand(s.formula(argsOf(params.length), def.attrs.parse({})), params.map((code) => ({ code, bool: false })), t, scope);
    const decl = [`fn ${name}(${params.map((p) => `${p}: ${t}`).join(', ')}) -> ${r.bool ? 'bool' : t} {`, ...scope.lines.map((l) => `  ${l}`), `  return ${r.code};`, '}'].join('\n');
    if (!this.decls.includes(decl)) this.decls.push(decl);
    return { code: `${name}(${args.join(', ')})`, bool: r.bool };
  }

  /** A formula over `args`: shared compound subexpressions become `let`s in the scope. */
  private expand(e: Expr, args: readonly Rendered[], t: Wt, scope: Scope): Rendered {
    const refs = new Map<Expr, number>();
    const count = (x: Expr) => {
      refs.set(x, (refs.get(x) ?? 0) + 1);
      if (refs.get(x) === 1 && (x.kind === 'prim' || x.kind === 'call')) x.args.forEach(count);
    };
    count(e);
    const memo = new Map<Expr, Rendered>();
    const rec = (x: Expr): Rendered => {
      const hit = memo.get(x);
      if (hit) return hit;
      let r = this.node(x, args, t, scope, rec);
      if ((refs.get(x) ?? 0) > 1 && !isCheap(r.code)) {
        const name = `${scope.prefix}${scope.next++}`;
        scope.lines.push(`let ${name} = ${r.code};`);
        r = { code: name, bool: r.bool };
      }
      memo.set(x, r);
      return r;
    };
    return rec(e);
  }

  private node(x: Expr, args: readonly Rendered[], t: Wt, scope: Scope, rec: (x: Expr) => Rendered): Rendered {
    switch (x.kind) {
      case 'arg': return args[x.index];
      case 'num': return { code: literal(x.value, t), bool: false };
      case 'call': return this.call(x.op, x.args.map(rec), x.attrs, t, scope, true);
      case 'prim': {
        const a = x.args.map(rec);
        const n = (i: number) => this.num(a[i], t);
        const infix = INFIX[x.prim];
        if (infix) return { code: `${paren(n(0))} ${infix} ${paren(n(1))}`, bool: !['+', '-', '*', '/'].includes(infix) };
        switch (x.prim) {
          case 'neg': return { code: `-${paren(n(0))}`, bool: false };
          case 'min':
          case 'max':
            if (t !== 'f32') return { code: `${x.prim}(${n(0)}, ${n(1)})`, bool: false };
            this.need(NAN_MAX);
            return { code: `k_${x.prim}(${n(0)}, ${n(1)})`, bool: false };
          case 'select': {
            const c = a[0].bool ? a[0].code : `${paren(a[0].code)} != ${literal(0, t)}`;
            return { code: `select(${n(2)}, ${n(1)}, ${c})`, bool: false };
          }
          default: throw new Error(`scalar primitive '${x.prim}' has no WGSL`);
        }
      }
    }
  }

  /** A value as a number of type `t` (a comparison becomes 0 or 1). */
  private num(r: Rendered, t: Wt): string {
    return r.bool ? `select(${literal(0, t)}, ${literal(1, t)}, ${r.code})` : r.code;
  }
}
