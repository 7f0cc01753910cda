// Methods of arrays whose length is known when compiling (array literals, arrays of modules,
// arrays built by push in unrolled loops, tensor shapes): map, forEach, filter, reduce,
// reduceRight, some, every, find and findIndex. Each is unrolled: the callback (an arrow function, a function
// expression or a function of the file) is inlined once per element, with the element, its
// index and the array, as JavaScript passes them. Invariant: the result has the structure the
// eager call returns; a predicate that only run-time data decides is a located error.

import type { Node as TsNode, SyntaxKind, IterationStatement } from 'ts-morph';
import { tsm } from './ts-morph.js';
import type { TensorIRType } from '@kiln/ir-spec';
import type { Frame, ScriptContext } from './context.js';
import { callFunction } from './closures.js';
import { condition } from './scalars.js';
import { describe, stat, type Env, type SValue } from './values.js';

export const ARRAY_METHODS = new Set(['map', 'forEach', 'filter', 'reduce', 'reduceRight', 'some', 'every', 'find', 'findIndex']);

type ListValue = Extract<SValue, { k: 'list' }>;
type ShapeValue = Extract<SValue, { k: 'shape' }>;

/** `list.name(args)` for one of ARRAY_METHODS (a shape is the array of its sizes). */
export function arrayMethod(ctx: ScriptContext, f: Frame, env: Env, array: ListValue | ShapeValue, name: string, args: SValue[], at: TsNode): SValue {
  const list = array.k === 'list' ? array : sizes(ctx, array);
  const cb = args[0];
  if (!cb || cb.k !== 'fn') {
    const hint = cb?.k === 'ns' ? `; write an arrow function such as .${name}((t) => ${cb.name}(t)) (passed directly, it would also receive the index and the array, as in JavaScript)` : '';
    throw f.src.error(at, `.${name}() needs a function (an arrow function, a function expression or a function of this file) as its first argument, got ${cb ? describe(cb) : 'nothing'}${hint}`);
  }
  const call = (...xs: SValue[]) => callFunction(ctx, f, env, cb, xs, at);
  const items = list.items;
  /** The predicate's answer for element i, which must be known when compiling. */
  const test = (i: number): boolean => {
    const c = condition(ctx, f.src, at, call(items[i], stat(i), list));
    if (typeof c === 'boolean') return c;
    throw f.src.error(at, `the callback of .${name}() gives a run-time value for element ${i}, so ${name === 'filter' ? 'the length of the result' : 'its result'} would only be known at run time; ` +
      'jit.script needs it when compiling. Test values known when compiling (shapes, module fields), or select with tensor ops (where, maskedFill)');
  };
  switch (name) {
    case 'map': return { k: 'list', items: items.map((x, i) => call(x, stat(i), list)) };
    case 'forEach': items.forEach((x, i) => call(x, stat(i), list)); return stat(undefined);
    case 'filter': return { k: 'list', items: items.filter((_, i) => test(i)) };
    case 'some': return stat(items.some((_, i) => test(i)));
    case 'every': return stat(items.every((_, i) => test(i)));
    case 'find': { const i = items.findIndex((_, k) => test(k)); return i < 0 ? stat(undefined) : items[i]; }
    case 'findIndex': return stat(items.findIndex((_, i) => test(i)));
    case 'reduce': case 'reduceRight': {
      const order = items.map((_, i) => i);
      if (name === 'reduceRight') order.reverse();
      let acc: SValue;
      if (args.length >= 2) acc = args[1];
      else {
        if (!order.length) throw f.src.error(at, `.${name}() of an empty array with no initial value throws in JavaScript; pass an initial value`);
        acc = items[order.shift()!];
      }
      for (const i of order) acc = call(acc, items[i], stat(i), list);
      return acc;
    }
  }
  throw f.src.error(at, `the array method .${name}() is not supported by jit.script`);
}

/** A tensor's shape as an array: static sizes, and `dim` nodes for symbolic ones. */
function sizes(ctx: ScriptContext, s: ShapeValue): ListValue {
  const shape = (s.of.type as TensorIRType).shape;
  return { k: 'list', items: shape.map((d, index): SValue => (typeof d === 'number' ? stat(d) : { k: 'scalar', v: ctx.b.op('dim', [s.of], { index })[0], dim: d })) };
}

/**
 * An array pushed to in a loop region (a run-time trip count or condition) would need a length
 * known only at run time; the IR has no growable lists, so the push is refused where it is.
 */
export function refuseGrowingArrays(f: Frame, env: Env, s: IterationStatement, carried: readonly string[]): void {
  for (const call of s.getStatement().getDescendantsOfKind(tsm().SyntaxKind.CallExpression)) {
    const callee = call.getExpression();
    if (!tsm().Node.isPropertyAccessExpression(callee) || callee.getName() !== 'push') continue;
    const name = callee.getExpression().getText();
    if (!carried.includes(name) || env.lookup(name)?.k !== 'list') continue;
    throw f.src.error(call, `'${name}.push(...)' grows the array '${name}' in a loop whose trip count is only known at run time (a loop region), ` +
      'so its length would only be known at run time; jit.script needs the length of every array when compiling (the IR has no growable lists). ' +
      'Give the loop a trip count known when compiling (it is then unrolled), or combine the per-step results as you go (acc = acc.add(y))');
  }
}
