// Turning a concrete trace into a shape-generic one. The model is recorded once at the example
// sizes and once more per dynamic symbol with only that symbol's size changed; an attribute that
// changes with the size is rewritten as a symbolic dim (`N`, `N*64`, `B*T`) when it is exactly
// proportional to the symbols, and reported as baked in otherwise. Ops whose sequence changes
// with the size reveal control flow that depends on shapes. Invariant: the returned tape equals
// the base tape except for attributes made symbolic.

import type { Tape, TapeOp, TraceWarning } from './tape.js';

export interface Variant {
  readonly symbol: string;
  /** The symbol's size in the base run and in this run. */
  readonly baseSize: number;
  readonly size: number;
  readonly tape: Tape;
}

type Json = unknown;

/** Rewrites attributes of `base` that vary across `variants`; returns the warnings found. */
export function generalizeTape(base: Tape, variants: readonly Variant[], accepts: (op: string, attrs: Record<string, unknown>) => boolean): TraceWarning[] {
  const warnings: TraceWarning[] = [];
  const usable = variants.filter((v) => {
    const k = firstMismatch(base, v.tape);
    if (k < 0) return true;
    const a = base.ops[k], b = v.tape.ops[k];
    warnings.push({
      kind: 'control-flow', loc: a?.loc ?? b?.loc,
      message: `the traced ops change with the size of '${v.symbol}' (op ${k}: ${a?.op ?? 'end of trace'} when ${v.symbol}=${v.baseSize}, ` +
        `${b?.op ?? 'end of trace'} when ${v.symbol}=${v.size}${a?.loc ? `, at ${a.loc}` : ''}): the model's control flow depends on this shape, ` +
        `so the trace only holds for ${v.symbol}=${v.baseSize}. Use jit.script for this module, or do not declare this axis dynamic.`,
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
  reportVaryingValues(base, usable, warnings);
  return warnings;
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

/** `c * S1 * S2 ...` when `value` and every variant's value fit it exactly (c a nonzero integer). */
function proportional(value: number, deps: { v: Variant; value: Json }[]): string | null {
  const prod = deps.reduce((p, d) => p * d.v.baseSize, 1);
  if (value % prod !== 0) return null;
  const c = value / prod;
  if (c === 0) return null;
  for (const d of deps) {
    if (d.value !== (value / d.v.baseSize) * d.v.size) return null;
  }
  const syms = deps.map((d) => d.v.symbol).sort();
  return c === 1 ? syms.join('*') : `${syms.join('*')}*${c}`;
}

/** Literals and constants that differ between runs were computed from a dynamic size. */
function reportVaryingValues(base: Tape, variants: readonly Variant[], warnings: TraceWarning[]): void {
  base.values.forEach((val, id) => {
    const s = val.source;
    if (s.kind !== 'literal' && s.kind !== 'const') return;
    const varies = variants.some((v) => {
      const o = v.tape.values[id];
      if (!o || o.source.kind !== s.kind) return true;
      if (s.kind === 'literal') return o.source.kind === 'literal' && o.source.value !== s.value;
      return o.shape.length !== val.shape.length || o.shape.some((d, i) => d !== val.shape[i]);
    });
    if (!varies) return;
    const user = base.ops.find((op) => op.inputs.includes(id));
    const loc = (s.kind === 'const' ? s.loc : undefined) ?? user?.loc;
    warnings.push({
      kind: s.kind === 'literal' ? 'baked-literal' : 'constant', loc,
      message: s.kind === 'literal'
        ? `the number ${s.value} used by ${user?.op ?? 'an op'}${loc ? ` at ${loc}` : ''} was computed from a dynamic size (e.g. x.shape[0]) and is baked into the trace. Use jit.script for this module.`
        : `a tensor of shape [${val.shape.join(',')}] created inside forward${loc ? ` at ${loc}` : ''} depends on a dynamic size and is baked in as a constant. Derive it from the inputs with tensor ops, or use jit.script.`,
    });
  });
}
