// Symbolic dims at run time, on top of ir-spec's dim algebra (ir/dims.ts). Invariant: a dim
// evaluates to a number only when every symbol in it is bound; anything that cannot be read
// (an unbound symbol, malformed text) gives `undefined`, never a guess, so callers either skip
// a check or raise an error that names the node.

import { evalDim, type AttrValue, type Attrs, type Dim } from '@kiln/ir-spec';

/** Symbol bindings of one run: `N` → 8. */
export type SymbolEnv = ReadonlyMap<string, number>;

/** The size `d` stands for under `env`, or undefined (ir-spec's evalDim, made total). */
export function sizeOf(d: Dim, env: SymbolEnv): number | undefined {
  if (typeof d === 'number') return d;
  try {
    return evalDim(d, env);
  } catch {
    return undefined; // malformed text (DimError) or overflow: not a size we can know
  }
}

/** Whether any attribute holds a dim list with a symbol (reshape/expand `shape: ['N', 256]`). */
export function hasSymbolicAttrs(attrs: Attrs): boolean {
  for (const k in attrs) {
    const v = Object.hasOwn(attrs, k) ? attrs[k] : undefined;
    if (Array.isArray(v) && v.some((e) => typeof e === 'string')) return true;
  }
  return false;
}

/**
 * `attrs` with every symbolic dim inside an attribute list replaced by its size (in the op set,
 * only dim lists hold strings inside lists). Returns the first dim it cannot evaluate instead.
 */
export function concreteAttrs(attrs: Attrs, env: SymbolEnv): { attrs: Attrs } | { unbound: string; attr: string } {
  const out: Record<string, AttrValue> = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (!Array.isArray(v) || !v.some((e) => typeof e === 'string')) { out[k] = v; continue; }
    const list: AttrValue[] = [];
    for (const e of v as readonly AttrValue[]) {
      if (typeof e !== 'string') { list.push(e); continue; }
      const n = sizeOf(e, env);
      if (n === undefined) return { unbound: e, attr: k };
      list.push(n);
    }
    out[k] = list;
  }
  return { attrs: out };
}
