// The pattern-rewrite layer every rule-based pass uses: matchers that read like the IR they
// match, named rules `{ name, pattern, rewrite }`, and ONE driver, `applyRules`, that sweeps the
// graph in program order, rule table against every live node, until a sweep changes nothing or
// `maxRounds` sweeps have run.
//
//   op('relu', op('conv2d', any('x'), constant('w'), maybe(constant('b'))).as('conv').oneUse())
//
// Invariants: a pattern matches fully (every operand, every `.where`) before its rule's rewrite
// runs, and a failed alternative (the other order of a `.commutative()` op) leaves no capture
// behind; an operand's producer is matched only in the block of the node being visited unless
// the pattern says `.outer()` (constants and splats may always be read from enclosing blocks:
// reading data absorbs nothing), so no rule pulls a node into a loop body by accident; nodes
// whose results no live node reads are not matched (the pipeline sweeps them), and `.oneUse()`
// counts only live uses. Under KILN_DEBUG=rewrites every run prints its rule counters to stderr.

import { hasEffects, typeEquals, type Graph, type Node, type TensorData, type Value } from '@kiln/ir-spec';
import { countLiveUses, rewriteGraph, type RewriteContext } from './rewrite.js';

/** What a rule's rewrite (and a `.where`) sees: the matched root and the captures. */
export interface Match {
  /** The node the rule's pattern matched (the one the rewrite replaces). */
  readonly root: Node;
  readonly ctx: RewriteContext;
  /** The value captured as `name` (throws when there is none, or it is an absent operand). */
  value(name: string): Value;
  /** The value captured as `name`, or null for an absent optional operand (`maybe`, `any`). */
  optional(name: string): Value | null;
  /** The node captured with `.as(name)`. */
  node(name: string): Node;
  /** The tensor of the constant captured as `name` (`constant`, `splat`). */
  data(name: string): TensorData;
  /** Whether anything (an absent operand included) was captured as `name`. */
  has(name: string): boolean;
  /** Live uses of `v` when the sweep began (0 for a value this sweep created). */
  uses(v: Value): number;
}

/** The driver's Match: captures with an undo trail, so an alternative that fails leaves nothing behind. */
export class MatchState implements Match {
  private readonly values = new Map<string, Value | null>();
  private readonly nodes = new Map<string, Node>();
  private readonly datas = new Map<string, TensorData>();
  private readonly trail: (() => void)[] = [];

  constructor(readonly root: Node, readonly ctx: RewriteContext, private readonly liveUses: ReadonlyMap<Value, number>) {}

  uses(v: Value): number { return this.liveUses.get(v) ?? 0; }

  mark(): number { return this.trail.length; }
  undo(mark: number): void { while (this.trail.length > mark) this.trail.pop()!(); }

  /** Binds `name` to `v`; a name bound twice must see the same value (`mul(any('x'), any('x'))`). */
  bindValue(name: string, v: Value | null): boolean {
    if (this.values.has(name)) return this.values.get(name) === v;
    this.values.set(name, v);
    this.trail.push(() => this.values.delete(name));
    return true;
  }
  bindNode(name: string, n: Node): boolean {
    if (this.nodes.has(name)) return this.nodes.get(name) === n;
    this.nodes.set(name, n);
    this.trail.push(() => this.nodes.delete(name));
    return true;
  }
  bindData(name: string, d: TensorData): void {
    if (this.datas.has(name)) return;
    this.datas.set(name, d);
    this.trail.push(() => this.datas.delete(name));
  }

  value(name: string): Value {
    const v = this.values.get(name);
    if (!v) throw new Error(`pattern: no value captured as '${name}'${this.values.has(name) ? ' (the operand is absent; read it with optional())' : ''}`);
    return v;
  }
  optional(name: string): Value | null {
    if (!this.values.has(name)) throw new Error(`pattern: nothing captured as '${name}'`);
    return this.values.get(name)!;
  }
  node(name: string): Node {
    const n = this.nodes.get(name);
    if (!n) throw new Error(`pattern: no node captured as '${name}' (capture one with .as('${name}'))`);
    return n;
  }
  data(name: string): TensorData {
    const d = this.datas.get(name);
    if (!d) throw new Error(`pattern: no constant captured as '${name}' (use constant('${name}') or splat)`);
    return d;
  }
  has(name: string): boolean { return this.values.has(name) || this.nodes.has(name); }
}

/** A matcher of one operand (a value, or null for an absent optional input). */
export abstract class Pattern {
  protected readonly predicates: ((m: Match) => boolean)[] = [];
  /** The name this pattern captures its operand value under, if any (`maybe` binds it to null). */
  get valueName(): string | undefined { return undefined; }

  /** Adds a condition, checked after this pattern (and its operands) matched. */
  where(pred: (m: Match) => boolean): this {
    this.predicates.push(pred);
    return this;
  }

  /** Whether `v` matches; on false, `s` holds no capture made by this call. */
  matchValue(v: Value | null, s: MatchState): boolean {
    const mark = s.mark();
    if (this.matchOperand(v, s) && this.predicates.every((p) => p(s))) return true;
    s.undo(mark);
    return false;
  }

  protected abstract matchOperand(v: Value | null, s: MatchState): boolean;
}

class AnyPattern extends Pattern {
  constructor(private readonly name?: string) { super(); }
  override get valueName(): string | undefined { return this.name; }
  protected matchOperand(v: Value | null, s: MatchState): boolean {
    return this.valueName === undefined || s.bindValue(this.valueName, v);
  }
}

class ConstantPattern extends Pattern {
  constructor(private readonly name?: string, private readonly splatOf?: number) { super(); }
  override get valueName(): string | undefined { return this.name; }
  protected matchOperand(v: Value | null, s: MatchState): boolean {
    const d = s.ctx.constantData(v);
    if (!v || !d) return false;
    if (this.splatOf !== undefined) {
      if (d.data.length === 0) return false;
      for (let i = 0; i < d.data.length; i++) if (Number(d.data[i]) !== this.splatOf) return false;
    }
    if (this.valueName === undefined) return true;
    if (!s.bindValue(this.valueName, v)) return false;
    s.bindData(this.valueName, d);
    return true;
  }
}

class MaybePattern extends Pattern {
  constructor(private readonly inner: Pattern) { super(); }
  protected matchOperand(v: Value | null, s: MatchState): boolean {
    if (v) return this.inner.matchValue(v, s);
    const name = this.inner.valueName;
    return name === undefined || s.bindValue(name, null);
  }
}

/** Matches a node by op name(s) and operands; as an operand, the node producing that value. */
export class OpPattern extends Pattern {
  private captureAs?: string;
  private single = false;
  private swap = false;
  private seeOuter = false;

  constructor(private readonly ops: ReadonlySet<string> | null, private readonly operands: readonly Pattern[]) { super(); }

  /** The op names this pattern can match at the root (null: any op). */
  get rootOps(): ReadonlySet<string> | null { return this.ops; }

  /** Captures the matched node as `name` (`m.node(name)`). */
  as(name: string): this { this.captureAs = name; return this; }
  /** Its first result has exactly one live use and its other results none (it can be absorbed). */
  oneUse(): this { this.single = true; return this; }
  /** Also tries the two operands the other way round (`add`, `mul`). */
  commutative(): this {
    if (this.operands.length !== 2) throw new Error('pattern: commutative() needs exactly two operands');
    this.swap = true;
    return this;
  }
  /**
   * As an operand, also matches a producer in an enclosing block (outside the `loop`/`if` the
   * root sits in). Only for rewrites that compute no more per trip than before (the producer is
   * read, not recomputed, or the rewrite replaces one op with one op).
   */
  outer(): this { this.seeOuter = true; return this; }

  protected matchOperand(v: Value | null, s: MatchState): boolean {
    const n = s.ctx.def(v, { outer: this.seeOuter });
    return !!n && n.outputs[0] === s.ctx.resolve(v!) && this.matchNode(n, s);
  }

  /** Whether node `n` (the root, or an operand's producer) matches, operands included. */
  matchNode(n: Node, s: MatchState): boolean {
    if (this.ops && !this.ops.has(n.op)) return false;
    if (this.single && !n.outputs.every((o, i) => s.uses(o) === (i === 0 ? 1 : 0))) return false;
    const orders = this.swap ? [[0, 1], [1, 0]] : [this.operands.map((_, i) => i)];
    for (const order of orders) {
      const mark = s.mark();
      const ok = (this.captureAs === undefined || s.bindNode(this.captureAs, n))
        && this.operands.every((p, i) => p.matchValue(n.inputs[order[i]] ?? null, s))
        && this.predicates.every((p) => p(s));
      if (ok) return true;
      s.undo(mark);
    }
    return false;
  }

  // As an operand the node's own predicates already ran in matchNode (per operand order).
  override matchValue(v: Value | null, s: MatchState): boolean {
    const mark = s.mark();
    if (this.matchOperand(v, s)) return true;
    s.undo(mark);
    return false;
  }
}

/**
 * A node of op `name` (or any of `names`) whose first inputs match `operands` (inputs past them
 * are not checked; an absent optional input is null).
 */
export function op(name: string | readonly string[], ...operands: Pattern[]): OpPattern {
  return new OpPattern(new Set(typeof name === 'string' ? [name] : name), operands);
}
/** A node of any op (its inputs unchecked unless `operands` are given). */
export function anyOp(...operands: Pattern[]): OpPattern { return new OpPattern(null, operands); }
/** Any operand, an absent optional one included; captured as `name`. */
export function any(name?: string): Pattern { return new AnyPattern(name); }
/** A constant operand (named or literal, this block or an enclosing one); `m.data(name)` is its tensor. */
export function constant(name?: string): Pattern { return new ConstantPattern(name); }
/** A constant operand whose every element equals `k` (at least one element). */
export function splat(k: number, name?: string): Pattern { return new ConstantPattern(name, k); }
/** An absent optional operand (then `p`'s capture name holds null), or one matching `p`. */
export function maybe(p: Pattern): Pattern { return new MaybePattern(p); }

/** Whether value `a` has exactly value `b`'s type (no broadcasting lost). */
export const sameType = (a: Value | null, b: Value | null): boolean => !!a && !!b && typeEquals(a.type, b.type);

/** A named local rewrite: `pattern` matched at a node, then `rewrite` gives what replaces it. */
export interface Rule {
  /** Kebab-case, unique in its table (the debug counters are keyed by it). */
  readonly name: string;
  readonly pattern: OpPattern;
  /**
   * The nodes to emit in place of `m.root` (`[]` after `ctx.replace` of its results), or null to
   * decline, when the next rule is tried. Builds nothing before deciding.
   */
  readonly rewrite: (m: Match, ctx: RewriteContext) => Node[] | null;
}

export interface ApplyOptions {
  /** Sweeps before the driver stops even if rules still fire (a rule set that cycles ends here; default 8). */
  readonly maxRounds?: number;
  /** The pass name printed with the counters under KILN_DEBUG=rewrites. */
  readonly label?: string;
}

export interface ApplyResult {
  /** The rewritten graph (the input itself when no rule fired). */
  readonly graph: Graph;
  /** How many times each rule fired, by name (rules that never fired are absent). */
  readonly fired: Readonly<Record<string, number>>;
  /** Sweeps run, the last one (which changed nothing, unless capped) included. */
  readonly rounds: number;
  /** Whether the driver stopped at maxRounds with rules still firing. */
  readonly capped: boolean;
}

export const DEFAULT_MAX_ROUNDS = 8;

/** A writer for the counters when KILN_DEBUG lists `rewrites` (Node only). */
function debugRewrites(): ((text: string) => void) | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined>; stderr?: { write(s: string): void } } }).process;
  const flags = proc?.env?.KILN_DEBUG?.split(',').map((f) => f.trim()) ?? [];
  return flags.includes('rewrites') && proc?.stderr ? (t) => proc.stderr!.write(`${t}\n`) : undefined;
}

/**
 * Applies `rules` to `g` until a sweep changes nothing (or `maxRounds` sweeps). In one sweep,
 * each live node is offered to the rules in table order and the first that matches and does
 * not decline replaces it; a replacement that keeps the root's result values is seen by the
 * nodes after it in the same sweep, so chains rewrite in one sweep.
 *
 * @example
 * const { graph, fired } = applyRules(g, [{
 *   name: 'relu-relu', // relu(relu(x)) → relu(x)
 *   pattern: op('relu', op('relu').as('inner')),
 *   rewrite: (m, ctx) => { ctx.replace(m.root.outputs[0], m.node('inner').outputs[0]); return []; },
 * }]);
 * fired['relu-relu']; // how many relu(relu(x)) went
 */
export function applyRules(g: Graph, rules: readonly Rule[], opts: ApplyOptions = {}): ApplyResult {
  const maxRounds = opts.maxRounds ?? DEFAULT_MAX_ROUNDS;
  if (!Number.isInteger(maxRounds) || maxRounds < 1) throw new RangeError(`applyRules: maxRounds must be an integer >= 1, got ${maxRounds}`);
  // Rules by root op, keeping table order; rules rooted at any op are offered every node.
  const byOp = new Map<string, Rule[]>();
  const candidates = (opName: string): readonly Rule[] => {
    let list = byOp.get(opName);
    if (!list) {
      list = rules.filter((r) => !r.pattern.rootOps || r.pattern.rootOps.has(opName));
      byOp.set(opName, list);
    }
    return list;
  };
  const fired: Record<string, number> = {};
  let cur = g, rounds = 0, capped = false;
  while (rounds < maxRounds) {
    rounds++;
    const uses = countLiveUses(cur);
    const next = rewriteGraph(cur, (node, ctx) => {
      // A dead node is left for the pipeline's sweep: rewriting it would only add garbage.
      if (node.outputs.length && !hasEffects(node) && node.outputs.every((o) => (uses.get(o) ?? 0) === 0)) return [node];
      for (const rule of candidates(node.op)) {
        const m = new MatchState(node, ctx, uses);
        if (!rule.pattern.matchNode(node, m)) continue;
        const out = rule.rewrite(m, ctx);
        if (!out) continue;
        fired[rule.name] = (fired[rule.name] ?? 0) + 1;
        return out;
      }
      return [node];
    });
    if (next === cur) break;
    cur = next;
    if (rounds === maxRounds) capped = true;
  }
  const debug = debugRewrites();
  if (debug) {
    const counts = Object.entries(fired).map(([k, n]) => `${k}×${n}`).join(' ') || 'nothing fired';
    debug(`// rewrites ${opts.label ?? 'applyRules'}: ${counts} (${rounds} round${rounds > 1 ? 's' : ''}${capped ? ', stopped at maxRounds' : ''})`);
  }
  return { graph: cur, fired, rounds, capped };
}
