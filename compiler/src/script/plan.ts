// Plans: how a scripter value crosses a region boundary (an `if`'s yields, a `loop`'s carried
// values). A plan is the join of what each side holds: equal statics stay static (no yield),
// numbers that differ become a run-time scalar of the joined dtype, tensors and lists and
// objects of them are yielded element by element (objects key by key, the keys must agree).
// Invariant: flatten(v, p) and unflatten(p, values) are inverse, and both sides of a region
// boundary flatten with the same plan.

import { typeToString, type DType, type Value } from '@kiln/ir-spec';
import type { ScriptContext } from './context.js';
import { describe, type StaticValue, type SValue } from './values.js';

export type Plan =
  | { readonly k: 'static'; readonly value: StaticValue }
  | { readonly k: 'scalar'; readonly dtype: DType }
  | { readonly k: 'tensor'; readonly type: string }
  | { readonly k: 'list'; readonly items: readonly Plan[] }
  /** An object literal: its keys, in order, and a plan per value. */
  | { readonly k: 'object'; readonly keys: readonly string[]; readonly items: readonly Plan[] }
  /** A compile-time object (module, namespace, ...) that must be the same on both sides. */
  | { readonly k: 'same'; readonly v: SValue };

/** Thrown when two sides cannot be joined; `why` is completed with the variable's name. */
export class PlanMismatch extends Error {
  constructor(readonly why: string) { super(why); }
}

/** The plan that keeps `v` as it is. */
export function naturalPlan(v: SValue): Plan {
  switch (v.k) {
    case 'static': return { k: 'static', value: v.value };
    case 'scalar': return { k: 'scalar', dtype: v.v.type.kind === 'scalar' ? v.v.type.dtype : 'float32' };
    case 'tensor': return { k: 'tensor', type: typeToString(v.v.type) };
    case 'list': return { k: 'list', items: v.items.map(naturalPlan) };
    case 'object': return { k: 'object', keys: Object.keys(v.entries), items: Object.values(v.entries).map(naturalPlan) };
    default: return { k: 'same', v };
  }
}

/** A plan in which every static number or boolean becomes a run-time scalar (loop-carried). */
export function dynamicPlan(p: Plan): Plan {
  if (p.k === 'static' && (typeof p.value === 'number' || typeof p.value === 'boolean')) {
    return { k: 'scalar', dtype: typeof p.value === 'boolean' ? 'bool' : Number.isInteger(p.value) ? 'int32' : 'float32' };
  }
  if (p.k === 'list') return { k: 'list', items: p.items.map(dynamicPlan) };
  if (p.k === 'object') return { ...p, items: p.items.map(dynamicPlan) };
  return p;
}

function joinDType(a: DType, b: DType): DType {
  if (a === b) return a;
  if (a === 'bool' || b === 'bool') throw new PlanMismatch(`a boolean on one side and a number on the other`);
  return 'float32';
}

function asScalar(p: Plan): DType | undefined {
  if (p.k === 'scalar') return p.dtype;
  if (p.k === 'static' && typeof p.value === 'boolean') return 'bool';
  if (p.k === 'static' && typeof p.value === 'number') return Number.isInteger(p.value) ? 'int32' : 'float32';
  return undefined;
}

export function joinPlans(a: Plan, b: Plan): Plan {
  if (a.k === 'static' && b.k === 'static' && Object.is(a.value, b.value)) return a;
  const sa = asScalar(a), sb = asScalar(b);
  if (sa && sb) return { k: 'scalar', dtype: joinDType(sa, sb) };
  if (a.k === 'tensor' && b.k === 'tensor') {
    if (a.type !== b.type) throw new PlanMismatch(`a tensor of type ${a.type} on one side and ${b.type} on the other`);
    return a;
  }
  if (a.k === 'list' && b.k === 'list') {
    if (a.items.length !== b.items.length) throw new PlanMismatch(`arrays of different lengths (${a.items.length} and ${b.items.length})`);
    return { k: 'list', items: a.items.map((x, i) => joinPlans(x, b.items[i])) };
  }
  if (a.k === 'object' && b.k === 'object') {
    if (a.keys.join('\0') !== b.keys.join('\0')) throw new PlanMismatch(`objects with different keys ({ ${a.keys.join(', ')} } and { ${b.keys.join(', ')} })`);
    return { ...a, items: a.items.map((x, i) => joinPlans(x, b.items[i])) };
  }
  if (a.k === 'same' && b.k === 'same' && sameValue(a.v, b.v)) return a;
  throw new PlanMismatch(`${planText(a)} on one side and ${planText(b)} on the other`);
}

function sameValue(a: SValue, b: SValue): boolean {
  if (a === b) return true;
  if (a.k === 'module' && b.k === 'module') return a.mod === b.mod;
  if (a.k === 'ns' && b.k === 'ns') return a.name === b.name;
  if (a.k === 'fn' && b.k === 'fn') return a.decl === b.decl && a.closure?.env === b.closure?.env;
  if (a.k === 'shape' && b.k === 'shape') return a.of === b.of;
  return false;
}

function planText(p: Plan): string {
  if (p.k === 'static') return JSON.stringify(p.value) ?? 'undefined';
  if (p.k === 'scalar') return `a run-time ${p.dtype} number`;
  if (p.k === 'tensor') return `a tensor ${p.type}`;
  if (p.k === 'list') return `an array of ${p.items.length}`;
  if (p.k === 'object') return `an object { ${p.keys.join(', ')} }`;
  return describe(p.v);
}

export function plansEqual(a: Plan, b: Plan): boolean {
  if (a.k !== b.k) return false;
  if (a.k === 'static' && b.k === 'static') return Object.is(a.value, b.value);
  if (a.k === 'scalar' && b.k === 'scalar') return a.dtype === b.dtype;
  if (a.k === 'tensor' && b.k === 'tensor') return a.type === b.type;
  if (a.k === 'list' && b.k === 'list') return a.items.length === b.items.length && a.items.every((x, i) => plansEqual(x, b.items[i]));
  if (a.k === 'object' && b.k === 'object') return a.keys.join('\0') === b.keys.join('\0') && a.items.every((x, i) => plansEqual(x, b.items[i]));
  if (a.k === 'same' && b.k === 'same') return sameValue(a.v, b.v);
  return false;
}

/** The values that carry `v` across a boundary under plan `p` (emits conversions as needed). */
export function flatten(ctx: ScriptContext, v: SValue, p: Plan): Value[] {
  switch (p.k) {
    case 'static': case 'same': return [];
    case 'tensor': return v.k === 'tensor' ? [v.v] : mismatch(v, p);
    case 'scalar': {
      if (v.k === 'static' && (typeof v.value === 'number' || typeof v.value === 'boolean')) return [ctx.scalar(v.value, p.dtype)];
      if (v.k !== 'scalar') return mismatch(v, p);
      const dt = v.v.type.kind === 'scalar' ? v.v.type.dtype : 'float32';
      if (dt === p.dtype) return [v.v];
      if (p.dtype === 'float32' && dt === 'int32') return [ctx.b.op('scalar_op', [v.v, ctx.scalar(0, 'float32')], { fn: 'add' })[0]];
      return mismatch(v, p);
    }
    case 'list':
      if (v.k !== 'list' || v.items.length !== p.items.length) return mismatch(v, p);
      return p.items.flatMap((ip, i) => flatten(ctx, v.items[i], ip));
    case 'object':
      if (v.k !== 'object' || Object.keys(v.entries).join('\0') !== p.keys.join('\0')) return mismatch(v, p);
      return p.items.flatMap((ip, i) => flatten(ctx, v.entries[p.keys[i]], ip));
  }
}

function mismatch(v: SValue, p: Plan): never {
  throw new PlanMismatch(`${describe(v)} where ${planText(p)} was expected`);
}

/** Rebuilds a value from the boundary values; returns it and how many values it used. */
export function unflatten(p: Plan, values: readonly Value[], at = 0): { v: SValue; used: number } {
  switch (p.k) {
    case 'static': return { v: { k: 'static', value: p.value }, used: 0 };
    case 'same': return { v: p.v, used: 0 };
    case 'tensor': return { v: { k: 'tensor', v: values[at] }, used: 1 };
    case 'scalar': return { v: { k: 'scalar', v: values[at] }, used: 1 };
    case 'list': case 'object': {
      let used = 0;
      const items = p.items.map((ip) => {
        const r = unflatten(ip, values, at + used);
        used += r.used;
        return r.v;
      });
      if (p.k === 'list') return { v: { k: 'list', items }, used };
      return { v: { k: 'object', entries: Object.fromEntries(p.keys.map((key, i) => [key, items[i]])) }, used };
    }
  }
}
