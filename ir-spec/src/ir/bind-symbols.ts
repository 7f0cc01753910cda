// Binding the symbols of declared input types to the sizes of actual inputs (the runtime's input
// validation). Invariant: a symbol gets exactly one size per run; a compound dim is checked, or
// solved when it holds one unbound symbol linearly (`N*2+1` = 9 gives N = 4); anything else is
// a BindError naming the input and dim — never a guessed binding.

import { dimAtoms, dimTerms, evalDim, isPlainSymbol, type SymbolBindings } from './dims.js';
import type { IRType } from './types.js';

/** A concrete input that does not fit its declared type; names the input and the dim. */
export class BindError extends Error {
  constructor(readonly input: string, readonly dim: number | null, message: string) {
    super(message);
    this.name = 'BindError';
  }
}

const typeText = (t: IRType): string => (t.kind === 'tensor' ? `[${t.shape.join(',')}]` : t.kind);

/**
 * Binds every symbol of the declared input types to a size, consistently across inputs:
 * plain symbols from the dims that are exactly a symbol, then compound dims (`N*2`, `N+1`) are
 * checked, or solved when they hold one unbound symbol linearly. Non-tensor types (scalars,
 * tuples, lists) are skipped. Throws BindError naming the input and dim when a rank or size does
 * not fit, or when `N` would mean two sizes.
 *
 * @param names input names for messages (default `input 0`, `input 1`, ...).
 * @example
 * ```ts
 * bindSymbols([tensorType('float32', ['N', 3]), tensorType('float32', ['N*2'])], [[4, 3], [8]]); // Map { 'N' => 4 }
 * ```
 */
export function bindSymbols(types: readonly IRType[], concrete: readonly (readonly number[])[], names?: readonly string[]): Map<string, number> {
  const name = (i: number) => (names?.[i] !== undefined ? `input '${names[i]}'` : `input ${i}`);
  if (types.length !== concrete.length) {
    throw new BindError('', null, `expected ${types.length} input shape(s), got ${concrete.length}`);
  }
  const env = new Map<string, number>();
  const from = new Map<string, string>();
  const pending: { i: number; k: number; d: string }[] = [];
  const fail = (i: number, k: number | null, msg: string): never => { throw new BindError(names?.[i] ?? String(i), k, `${name(i)}${k === null ? '' : ` dim ${k}`}: ${msg}`); };

  types.forEach((t, i) => {
    if (t.kind !== 'tensor') return;
    const shape = concrete[i];
    if (shape.length !== t.shape.length) fail(i, null, `expected rank ${t.shape.length} ${typeText(t)}, got shape [${shape.join(',')}]`);
    t.shape.forEach((d, k) => {
      const n = shape[k];
      if (!Number.isSafeInteger(n) || n < 0) fail(i, k, `size ${n} is not a non-negative integer`);
      if (typeof d === 'number') {
        if (d !== n) fail(i, k, `expected size ${d} (declared ${typeText(t)}), got ${n} (shape [${shape.join(',')}])`);
      } else if (isPlainSymbol(d)) {
        const had = env.get(d);
        if (had === undefined) { env.set(d, n); from.set(d, `${name(i)} dim ${k}`); }
        else if (had !== n) fail(i, k, `${d} is ${n} here but ${had} in ${from.get(d)} (declared ${typeText(t)}); every use of ${d} must be the same size`);
      } else {
        pending.push({ i, k, d });
      }
    });
  });

  // Compound dims: check those fully bound; solve `a*S + r` for a single unbound symbol S.
  let left = pending;
  while (left.length) {
    const next: typeof left = [];
    for (const p of left) {
      const n = concrete[p.i][p.k];
      const v = evalDim(p.d, env);
      if (v !== undefined) {
        if (v !== n) fail(p.i, p.k, `expected ${p.d} = ${v} (${describeEnv(p.d, env)}), got ${n}`);
        continue;
      }
      const solved = solveLinear(p.d, n, env);
      if (solved === 'unsolvable') next.push(p);
      else if (solved === 'inconsistent') fail(p.i, p.k, `no size of ${dimAtoms(p.d).filter((a) => !env.has(a)).join(', ')} makes ${p.d} equal ${n}`);
      else { env.set(solved.symbol, solved.value); from.set(solved.symbol, `${name(p.i)} dim ${p.k}`); }
    }
    if (next.length === left.length) {
      const p = next[0];
      fail(p.i, p.k, `cannot bind the symbols of ${p.d} from the input shapes; declare a dim that is exactly the symbol (e.g. ${dimAtoms(p.d).find((a) => !env.has(a)) ?? 'N'}) in some input`);
    }
    left = next;
  }
  return env;
}

function describeEnv(d: string, env: SymbolBindings): string {
  return dimAtoms(d).map((a) => `${a}=${evalDim(a, env)}`).join(', ');
}

/** Solves `d = n` for the one unbound plain symbol of `d` when it appears only linearly. */
function solveLinear(d: string, n: number, env: SymbolBindings): { symbol: string; value: number } | 'unsolvable' | 'inconsistent' {
  const unbound = dimAtoms(d).filter((a) => evalDim(a, env) === undefined);
  if (unbound.length !== 1 || !isPlainSymbol(unbound[0])) return 'unsolvable';
  const s = unbound[0];
  let a = 0, r = 0;
  for (const t of dimTerms(d)) {
    const count = t.atoms.filter((x) => x === s).length;
    if (count > 1) return 'unsolvable';
    let v = t.coef;
    for (const x of t.atoms) if (x !== s) v *= evalDim(x, env)!;
    if (count) a += v;
    else r += v;
  }
  if (a === 0) return 'unsolvable';
  const value = (n - r) / a;
  return Number.isSafeInteger(value) && value >= 0 ? { symbol: s, value } : 'inconsistent';
}
