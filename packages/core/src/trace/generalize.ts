// Turning a concrete trace into a shape-generic one. The model is recorded once at the example
// sizes and once more per dynamic symbol with only that symbol's size changed; an attribute that
// changes with the size is rewritten as a symbolic dim (`N`, `N*64`, `B*T`) when it is exactly
// proportional to the symbols, and reported as baked in otherwise; so are literals (a `size`
// value) and uniformly filled constants (a `fill` value) made from the sizes. Ops whose sequence
// changes with the size reveal control flow that depends on shapes. Invariant: the returned tape
// equals the base tape except for attributes and value sources made symbolic.

import type { Dim } from '@kiln/ir-spec';
import type { Tape, TapeOp, TraceWarning, ValueSource } from './tape.js';

export interface Variant {
  readonly symbol: string;
  /** The symbol's size in the base run and in this run. */
  readonly baseSize: number;
  readonly size: number;
  readonly tape: Tape;
}

type Json = unknown;

/**
 * Rewrites attributes of `base` that vary across `variants`; returns the warnings found and the
 * symbols whose variant changed the ops themselves (the graph must keep their example sizes).
 */
export function generalizeTape(
  base: Tape, variants: readonly Variant[], accepts: (op: string, attrs: Record<string, unknown>) => boolean,
): { warnings: TraceWarning[]; specialized: string[] } {
  const warnings: TraceWarning[] = [];
  const specialized: string[] = [];
  const usable = variants.filter((v) => {
    const k = firstMismatch(base, v.tape);
    if (k < 0) return true;
    const a = base.ops[k], b = v.tape.ops[k];
    specialized.push(v.symbol);
    warnings.push({
      kind: 'control-flow', loc: a?.loc ?? b?.loc,
      message: `the traced ops change with the size of '${v.symbol}' (op ${k}: ${a?.op ?? 'end of trace'} when ${v.symbol}=${v.baseSize}, ` +
        `${b?.op ?? 'end of trace'} when ${v.symbol}=${v.size}${a?.loc ? `, at ${a.loc}` : ''}): the model's control flow depends on this shape, ` +
        `so the trace only holds for ${v.symbol}=${v.baseSize}. Use jit.script for this module with the same dynamicAxes (a loop up to a tensor size becomes a loop region; ` +
        'read step t as x.slice(dim, t, t + 1)), or do not declare this axis dynamic.',
    });
    return false;
  });
  base.ops.forEach((op, k) => {
    const generalized = generalizeAttrs(op, usable, k, warnings);
    if (generalized && accepts(op.op, generalized)) (op as { attrs: Record<string, unknown> }).attrs = generalized;
    else if (generalized) {
      warnings.push({
        kind: 'baked-attribute', loc: op.loc,
        message: `${op.op}${op.scope ? ` in ${op.scope}` : ''}${op.loc ? ` at ${op.loc}` : ''}: an attribute depends on a dynamic size but this op cannot take a symbolic value there; ` +
          `it was baked in as ${JSON.stringify(op.attrs)}. Use jit.script for this module.`,
      });
    }
  });
  generalizeValues(base, usable, warnings);
  return { warnings, specialized };
}

/** Index of the first op that differs in name or wiring, or -1. */
function firstMismatch(a: Tape, b: Tape): number {
  const n = Math.max(a.ops.length, b.ops.length);
  for (let k = 0; k < n; k++) {
    const x = a.ops[k], y = b.ops[k];
    if (!x || !y || x.op !== y.op || x.inputs.length !== y.inputs.length || x.inputs.some((v, i) => v !== y.inputs[i])) return k;
  }
  return a.values.length === b.values.length ? -1 : n;
}

function generalizeAttrs(op: TapeOp, variants: readonly Variant[], k: number, warnings: TraceWarning[]): Record<string, unknown> | null {
  let changed = false;
  const walk = (base: Json, others: Json[], path: string): Json => {
    if (typeof base === 'number') {
      const deps = variants.filter((_, i) => others[i] !== base);
      if (!deps.length) return base;
      const sym = proportional(base, deps.map((v) => ({ v, value: others[variants.indexOf(v)] })));
      if (sym === null) {
        warnings.push({
          kind: 'baked-attribute', loc: op.loc,
          message: `${op.op}${op.scope ? ` in ${op.scope}` : ''}${op.loc ? ` at ${op.loc}` : ''}: attribute ${path} is ${base} here but changes with ${deps.map((d) => d.symbol).join(', ')} ` +
            'in a way that is not a multiple of the dynamic sizes; it was baked in. Use jit.script for this module.',
        });
        return base;
      }
      changed = true;
      return sym;
    }
    if (Array.isArray(base)) return base.map((b, i) => walk(b, others.map((o) => (o as Json[])[i]), `${path}[${i}]`));
    if (base && typeof base === 'object') {
      return Object.fromEntries(Object.entries(base).map(([key, b]) => [key, walk(b, others.map((o) => (o as Record<string, Json>)[key]), `${path}.${key}`)]));
    }
    return base;
  };
  const out = walk(op.attrs, variants.map((v) => v.tape.ops[k].attrs), 'attrs') as Record<string, unknown>;
  return changed ? out : null;
}

/** `value = coeff × S1 × S2 …` over the symbols it depends on. */
interface Multiple { coeff: number; symbols: string[] }

/** `c * S1 * S2 ...` when `value` and every variant's value fit it exactly (c a nonzero integer). */
function proportional(value: number, deps: { v: Variant; value: Json }[]): string | null {
  const m = multipleOf(value, deps);
  return m && printMultiple(m);
}

function printMultiple({ coeff, symbols }: Multiple): string {
  return coeff === 1 ? symbols.join('*') : `${symbols.join('*')}*${coeff}`;
}

function multipleOf(value: number, deps: { v: Variant; value: Json }[]): Multiple | null {
  const prod = deps.reduce((p, d) => p * d.v.baseSize, 1);
  if (!Number.isInteger(value) || value % prod !== 0) return null;
  const c = value / prod;
  if (c === 0) return null;
  for (const d of deps) {
    if (d.value !== (value / d.v.baseSize) * d.v.size) return null;
  }
  return { coeff: c, symbols: deps.map((d) => d.v.symbol).sort() };
}

/** The variants in which `value` (the base run's) differs, each with its own value. */
function dependents(value: Json, variants: readonly Variant[], valueIn: (v: Variant) => Json): { v: Variant; value: Json }[] {
  return variants.map((v) => ({ v, value: valueIn(v) })).filter((d) => d.value !== value);
}

/** `shape` with each dim that follows the dynamic sizes made symbolic, or null when one does not. */
function symbolicShape(shape: readonly number[], variants: readonly Variant[], shapeIn: (v: Variant) => readonly number[]): Dim[] | null {
  const out: Dim[] = [];
  for (let i = 0; i < shape.length; i++) {
    const deps = dependents(shape[i], variants, (v) => shapeIn(v)[i]);
    const sym = deps.length ? proportional(shape[i], deps) : shape[i];
    if (sym === null) return null;
    out.push(sym);
  }
  return out;
}

/** The one value all elements of `data` hold, or null. */
function uniform(data: ArrayLike<number>): number | null {
  for (let i = 1; i < data.length; i++) if (!Object.is(data[i], data[0])) return null;
  return data.length ? data[0] : null;
}

/**
 * Literals and constants that differ between runs were computed from a dynamic size. A literal
 * that is a multiple of the sizes (`x.shape[0]`, mean's element count) becomes a `size` value and
 * a uniformly filled constant whose shape follows them (`zeros([x.shape[0], 4])`) a `fill` — both
 * computed from the symbols in the graph; anything else is reported as baked in.
 */
function generalizeValues(base: Tape, variants: readonly Variant[], warnings: TraceWarning[]): void {
  base.values.forEach((val, id) => {
    const s = val.source;
    if (s.kind !== 'literal' && s.kind !== 'const') return;
    const others = variants.map((v) => v.tape.values[id]);
    if (others.some((o) => !o || o.source.kind !== s.kind)) return warnVarying(base, id, warnings);
    const set = (source: ValueSource) => { (val as { source: ValueSource }).source = source; };
    if (s.kind === 'literal') {
      const deps = dependents(s.value, variants, (v) => (v.tape.values[id].source as { value: number }).value);
      if (!deps.length) return;
      const m = val.dtype === 'float32' || val.dtype === 'int32' ? multipleOf(s.value, deps) : null;
      if (m) set({ kind: 'size', coeff: m.coeff, symbols: m.symbols, dtype: s.dtype });
      else warnVarying(base, id, warnings);
      return;
    }
    const varies = others.some((o) => o.shape.length !== val.shape.length || o.shape.some((d, i) => d !== val.shape[i]));
    if (!varies) return;
    const shape = others.every((o) => o.shape.length === val.shape.length) ? symbolicShape(val.shape, variants, (v) => v.tape.values[id].shape) : null;
    const fill = uniform(s.data);
    const fillsAlike = others.every((o) => o.source.kind === 'const' && uniform(o.source.data) === fill);
    if (shape && fill !== null && fillsAlike) set({ kind: 'fill', value: fill, shape });
    else warnVarying(base, id, warnings);
  });
}

function warnVarying(base: Tape, id: number, warnings: TraceWarning[]): void {
  const val = base.values[id], s = val.source;
  const user = base.ops.find((op) => op.inputs.includes(id));
  const loc = (s.kind === 'const' ? s.loc : undefined) ?? user?.loc;
  warnings.push({
    kind: s.kind === 'literal' ? 'baked-literal' : 'constant', loc,
    message: s.kind === 'literal'
      ? `the number ${s.value} used by ${user?.op ?? 'an op'}${loc ? ` at ${loc}` : ''} was computed from a dynamic size (e.g. x.shape[0]) in a way that is not a multiple of it, and is baked into the trace. Use jit.script for this module.`
      : `a tensor of shape [${val.shape.join(',')}] created inside forward${loc ? ` at ${loc}` : ''} depends on a dynamic size and is baked in as a constant. Derive it from the inputs with tensor ops, or use jit.script.`,
  });
}
