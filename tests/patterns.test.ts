// The pattern-rewrite layer (compiler/src/patterns.ts): what each matcher accepts and captures,
// that a failed alternative leaves no capture, that matching stays in the visited block unless a
// pattern opts in with `.outer()`, and the driver's round cap, dead-node skipping and counters
// (returned, and printed under KILN_DEBUG=rewrites).

import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseGraph, printGraph, type Graph, type Node, type TensorData } from '@kiln/ir-spec';
import {
  any, anyOp, applyRules, constant, maybe, op, splat, type Match, type Rule,
} from '../compiler/src/index.js';
import { countLiveUses, RewriteContext, rewriteGraph } from '../compiler/src/rewrite.js';

const f32 = (shape: number[], values: number[]): TensorData => ({ dtype: 'float32', shape, data: Float32Array.from(values) });

/** Runs one rule whose rewrite records the match (and keeps the node), returning the matches. */
function matches(g: Graph, pattern: Rule['pattern']): Match[] {
  const seen: Match[] = [];
  const r = applyRules(g, [{ name: 'record', pattern, rewrite: (m) => { seen.push(m); return null; } }]);
  expect(r.graph).toBe(g);
  return seen;
}

/** A rule that replaces the root by its captured value `x`. */
const forwardRule = (name: string, pattern: Rule['pattern']): Rule => ({
  name, pattern, rewrite: (m, ctx) => { ctx.replace(m.root.outputs[0], m.value('x')); return []; },
});

const SIMPLE = `graph @g(%x: f32[2,3], %y: f32[2,3]) -> (a: f32[2,3], b: f32[2,3], c: f32[2,3], d: f32[2,3]) {
  %0 = constant() {name="w"} : f32[3]
  %1 = constant() {dtype="float32", value=1} : f32[]
  %2 = mul(%x, %0) : f32[2,3]
  %3 = mul(%1, %y) : f32[2,3]
  %4 = exp(%x) : f32[2,3]
  %5 = relu(%4) : f32[2,3]
  %6 = mul(%x, %x) : f32[2,3]
  %7 = exp(%y) : f32[2,3]
  %8 = add(%7, %7) : f32[2,3]
  %9 = add(%2, %3) : f32[2,3]
  %10 = add(%9, %6) : f32[2,3]
  %11 = add(%10, %8) : f32[2,3]
  return a=%5, b=%11, c=%3, d=%7
}`;
const simple = () => parseGraph(SIMPLE, { tensors: new Map([['w', f32([3], [2, 3, 4])]]) });

describe('matchers', () => {
  it('op and any match by op name and capture operands; as() captures the producer', () => {
    const g = simple();
    const ms = matches(g, op('relu', op('exp', any('x')).as('e')));
    expect(ms.length).toBe(1);
    expect(ms[0].node('e').op).toBe('exp');
    expect(ms[0].value('x')).toBe(g.inputs[0].value);
    expect(matches(g, op(['relu', 'exp'], any())).map((m) => m.root.op)).toEqual(['exp', 'relu', 'exp']);
    expect(matches(g, op('relu', op('neg')))).toEqual([]);
  });

  it('constant captures the tensor (named or literal); splat needs every element equal', () => {
    const g = simple();
    const named = matches(g, op('mul', any('x'), constant('c')));
    expect(named.length).toBe(1);
    expect([...named[0].data('c').data]).toEqual([2, 3, 4]);
    expect(matches(g, op('mul', any(), splat(2)))).toEqual([]);
    expect(matches(g, op('mul', splat(1), any('x'))).length).toBe(1);
    expect(() => named[0].data('x')).toThrow(/no constant captured as 'x'/);
  });

  it('commutative() tries both orders and a failed order leaves no capture', () => {
    const g = simple();
    // mul(%1 = 1, %y): only the swapped order puts the splat second.
    const ms = matches(g, op('mul', any('x'), splat(1, 'one')).commutative());
    expect(ms.length).toBe(1);
    expect(ms[0].value('x')).toBe(g.inputs[1].value);
    // The first order bound x = %1 before failing on %y; that binding must be gone, or the
    // repeated name would not unify with %y.
    const again = matches(g, op('mul', any('x'), splat(1)).commutative().where((m) => m.value('x') === g.inputs[1].value));
    expect(again.length).toBe(1);
    expect(() => op('relu', any()).commutative()).toThrow(/two operands/);
  });

  it('a name bound twice must be the same value (x * x, e + e)', () => {
    const g = simple();
    expect(matches(g, op('mul', any('x'), any('x'))).map((m) => m.root.outputs[0])).toEqual([g.body.nodes[6].outputs[0]]);
    expect(matches(g, op('add', op('exp').as('e'), op('exp').as('e'))).length).toBe(1);
  });

  it('where() filters after the operands matched; oneUse() counts live uses', () => {
    const g = simple();
    expect(matches(g, op('add', any('a'), any('b')).where((m) => m.value('a') === m.value('b'))).length).toBe(1);
    // %4 = exp(%x) is read by relu only; %7 = exp(%y) by add twice and by an output.
    expect(matches(g, op('relu', op('exp').oneUse())).length).toBe(1);
    expect(matches(g, op('add', op('exp').oneUse(), any())).length).toBe(0);
    expect(matches(g, anyOp().oneUse()).map((m) => m.root.op)).toEqual(['constant', 'constant', 'mul', 'exp', 'relu', 'mul', 'add', 'add', 'add', 'add']);
  });

  it('maybe() accepts an absent operand (captured as null) or one matching its pattern', () => {
    const text = `graph @b(%x: f32[2,3]) -> (a: f32[2,4], b: f32[2,4]) {
  %0 = constant() {name="w"} : f32[4,3]
  %1 = constant() {name="bias"} : f32[4]
  %2 = linear(%x, %0, none) : f32[2,4]
  %3 = linear(%x, %0, %1) : f32[2,4]
  return a=%2, b=%3
}`;
    const g = parseGraph(text, { tensors: new Map([['w', f32([4, 3], Array(12).fill(1))], ['bias', f32([4], [1, 2, 3, 4])]]) });
    const ms = matches(g, op('linear', any('x'), constant('w'), maybe(constant('b'))));
    expect(ms.map((m) => m.optional('b'))).toEqual([null, g.body.nodes[1].outputs[0]]);
    expect(() => ms[0].value('b')).toThrow(/absent; read it with optional\(\)/);
    expect(matches(g, op('linear', any(), any(), maybe(splat(0))))).toHaveLength(1);
  });
});

const LOOP = `graph @loop(%x: f32[4]) -> (y: f32[4]) {
  %0 = scalar() {dtype="int32", value=3} : i32
  %1 = exp(%x) : f32[4]
  %2 = loop(%0, none, %x) ({
  ^(%i: i32, %3: f32[4]):
    %4 = relu(%1) : f32[4]
    %5 = exp(%3) : f32[4]
    %6 = relu(%5) : f32[4]
    %7 = add(%4, %6) : f32[4]
    %8 = scalar() {dtype="bool", value=true} : bool
    yield %8, %7
  }) : f32[4]
  return y=%2
}`;

describe('region boundaries', () => {
  /** relu(exp(x)) → exp_relu stand-in: tanh(x) (any rewrite that absorbs the exp). */
  const absorb = (pattern: Rule['pattern']): Rule => ({
    name: 'absorb-exp', pattern, rewrite: (m, ctx) => [ctx.node('tanh', [m.value('x')], {}, m.root.meta, m.root.outputs)],
  });

  it('a rule does not match a producer outside the loop body it sits in', () => {
    const g = parseGraph(LOOP);
    const r = applyRules(g, [absorb(op('relu', op('exp', any('x')).oneUse()))]);
    // Only the relu whose exp is in the body fires; the exp outside the loop stays where it is.
    expect(r.fired).toEqual({ 'absorb-exp': 1 });
    const text = printGraph(r.graph);
    expect(text).toContain('relu(%1)');
    expect(text).toMatch(/tanh\(%3\)/);
  });

  it('.outer() opts in to producers of enclosing blocks', () => {
    const r = applyRules(parseGraph(LOOP), [absorb(op('relu', op('exp', any('x')).outer()))]);
    expect(r.fired).toEqual({ 'absorb-exp': 2 });
  });

  it('RewriteContext.def sees only the visited block unless asked for outer producers', () => {
    const g = parseGraph(LOOP);
    const outerExp = g.body.nodes[1].outputs[0];
    const seen: [string, string | undefined, string | undefined][] = [];
    rewriteGraph(g, (node: Node, ctx: RewriteContext) => {
      if (node.op === 'relu') seen.push([node.inputs[0] === outerExp ? 'outer' : 'inner', ctx.def(node.inputs[0])?.op, ctx.def(node.inputs[0], { outer: true })?.op]);
      return [node];
    });
    expect(seen).toEqual([['outer', undefined, 'exp'], ['inner', 'exp', 'exp']]);
  });
});

describe('applyRules', () => {
  afterEach(() => { vi.unstubAllEnvs(); vi.restoreAllMocks(); });

  it('returns the same graph, after one round, when nothing fires', () => {
    const g = simple();
    const r = applyRules(g, [forwardRule('never', op('neg', any('x')))]);
    expect(r).toEqual({ graph: g, fired: {}, rounds: 1, capped: false });
  });

  it('counts each rule, rewrites chains in one sweep, and confirms the fixpoint in a second', () => {
    const g = parseGraph(`graph @r(%x: f32[4]) -> (y: f32[4], z: f32[4]) {
  %0 = relu(%x) : f32[4]
  %1 = relu(%0) : f32[4]
  %2 = relu(%1) : f32[4]
  %3 = neg(%x) : f32[4]
  %4 = neg(%3) : f32[4]
  return y=%2, z=%4
}`);
    const rules: Rule[] = [
      { name: 'relu-relu', pattern: op('relu', op('relu').as('inner')), rewrite: (m, ctx) => { ctx.replace(m.root.outputs[0], m.node('inner').outputs[0]); return []; } },
      forwardRule('neg-neg', op('neg', op('neg', any('x')))),
    ];
    const r = applyRules(g, rules);
    expect(r.fired).toEqual({ 'relu-relu': 2, 'neg-neg': 1 });
    expect(r.rounds).toBe(2);
    expect(r.capped).toBe(false);
    expect(printGraph(r.graph)).toContain('return y=%0, z=%x');
  });

  it('stops at maxRounds when rules keep firing (a rule set that cycles)', () => {
    const g = parseGraph(`graph @c(%x: f32[4]) -> (y: f32[4]) {
  %0 = sin(%x) : f32[4]
  return y=%0
}`);
    const swap = (from: string, to: string): Rule => ({
      name: `${from}-${to}`, pattern: op(from, any('x')), rewrite: (m, ctx) => [ctx.node(to, [m.value('x')], {}, m.root.meta, m.root.outputs)],
    });
    const r = applyRules(g, [swap('sin', 'cos'), swap('cos', 'sin')], { maxRounds: 3 });
    expect(r.rounds).toBe(3);
    expect(r.capped).toBe(true);
    expect(r.fired).toEqual({ 'sin-cos': 2, 'cos-sin': 1 });
    expect(printGraph(r.graph)).toContain('cos(%x)');
    expect(() => applyRules(g, [], { maxRounds: 0 })).toThrow(/maxRounds must be an integer >= 1/);
  });

  it('does not rewrite dead nodes (the pipeline sweeps them)', () => {
    const g = parseGraph(`graph @d(%x: f32[4]) -> (y: f32[4]) {
  %0 = neg(%x) : f32[4]
  %1 = neg(%0) : f32[4]
  %2 = relu(%x) : f32[4]
  return y=%2
}`);
    const r = applyRules(g, [forwardRule('neg-neg', op('neg', op('neg', any('x'))))]);
    expect(r.graph).toBe(g);
    expect(r.fired).toEqual({});
    const uses = countLiveUses(g);
    expect([0, 1, 2].map((i) => uses.get(g.body.nodes[i].outputs[0]) ?? 0)).toEqual([0, 0, 1]);
    expect(uses.get(g.inputs[0].value)).toBe(1);
  });

  it('a rewrite that returns null declines, and the next rule is tried', () => {
    const g = simple();
    const r = applyRules(g, [
      { name: 'declines', pattern: op('relu', any('x')), rewrite: () => null },
      forwardRule('relu-gone', op('relu', any('x'))),
    ]);
    expect(r.fired).toEqual({ 'relu-gone': 1 });
  });

  it('prints its counters to stderr under KILN_DEBUG=rewrites', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const rules = [forwardRule('relu-gone', op('relu', any('x')))];
    applyRules(simple(), rules, { label: 'my-pass' });
    expect(write).not.toHaveBeenCalled();
    vi.stubEnv('KILN_DEBUG', 'ir,rewrites');
    applyRules(simple(), rules, { label: 'my-pass' });
    expect(write).toHaveBeenCalledWith('// rewrites my-pass: relu-gone×1 (2 rounds)\n');
  });
});
