// jit.script's `dynamicAxes` option (the same shape and meaning as jit.trace's: argument index →
// dim → symbol name): the tensor kinds a graph is compiled for, with the named dims symbolic.
// Invariant: a named dim is symbolic in the graph and absent from the compilation's cache key,
// so other sizes of it reuse the graph; every other dim is fixed; a name means one size across
// the arguments of one call, and a bad declaration is an Error saying which argument and dim.

import { Tensor } from '@kiln/core';
import type { ScriptInput } from '@kiln/compiler';
import type { Dim } from '@kiln/ir-spec';

/** `{ argumentIndex: { dim: 'T' } }`. */
export type DynamicAxes = Readonly<Record<number, Readonly<Record<number, string>>>>;

/** Checks `axes` against one call's arguments; returns each tensor argument's shape with the named dims symbolic. */
export function axesShapes(args: readonly unknown[], axes: DynamicAxes): (Dim[] | undefined)[] {
  for (const [i, ax] of Object.entries(axes)) {
    const a = args[Number(i)];
    if (!/^\d+$/.test(i) || Number(i) >= args.length) {
      throw new Error(`jit.script: dynamicAxes names argument ${i}, but forward was called with ${args.length} argument(s)`);
    }
    if (!(a instanceof Tensor)) {
      throw new Error(`jit.script: dynamicAxes names argument ${i}, which is ${a === null ? 'null' : typeof a}; only tensor arguments have dims`);
    }
    for (const [k, sym] of Object.entries(ax)) {
      if (!/^\d+$/.test(k) || Number(k) >= a.ndim) throw new Error(`jit.script: dynamicAxes names dim ${k} of argument ${i}, which has shape [${a.shape.join(',')}]`);
      if (typeof sym !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(sym) || sym.startsWith('kiln_')) {
        throw new Error(`jit.script: dynamic axis name ${JSON.stringify(sym)} (argument ${i}, dim ${k}) must be an identifier such as 'T' (not starting with 'kiln_')`);
      }
    }
  }
  const seen = new Map<string, { size: number; i: number; k: number }>();
  return args.map((a, i) => {
    if (!(a instanceof Tensor)) return undefined;
    return a.shape.map((d, k): Dim => {
      const sym = axes[i]?.[k];
      if (sym === undefined) return d;
      const first = seen.get(sym);
      if (first && first.size !== d) {
        throw new Error(`jit.script: '${sym}' names dims of different sizes in this call (${first.size} at argument ${first.i}, dim ${first.k}, and ${d} at argument ${i}, dim ${k}); ` +
          'the same name must mean the same size, so give the dims different names if they may differ');
      }
      if (!first) seen.set(sym, { size: d, i, k });
      return sym;
    });
  });
}

/** The kind a tensor argument is compiled for: its dtype and (symbolic) shape. */
export function axesInput(t: Tensor, shape: Dim[]): ScriptInput {
  return { kind: 'tensor', dtype: t.dtype, shape };
}
