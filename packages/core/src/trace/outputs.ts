// A forward's result (a tensor, an array/tuple, or an object of tensors, nested) as a flat list
// of named outputs, and back. Names follow the structure: `output`, `output.0`, `output.h`.

import { Tensor } from '../tensor.js';

export type OutputSpec =
  | { kind: 'tensor' }
  | { kind: 'array'; items: OutputSpec[] }
  | { kind: 'object'; keys: string[]; items: OutputSpec[] };

export function flattenOutput(out: unknown, name = 'output'): { tensors: Tensor[]; names: string[]; spec: OutputSpec } {
  if (out instanceof Tensor) return { tensors: [out], names: [name], spec: { kind: 'tensor' } };
  const tensors: Tensor[] = [], names: string[] = [];
  const take = (v: unknown, n: string): OutputSpec => {
    const r = flattenOutput(v, n);
    tensors.push(...r.tensors);
    names.push(...r.names);
    return r.spec;
  };
  if (Array.isArray(out)) return { tensors, names, spec: { kind: 'array', items: out.map((v, i) => take(v, `${name}.${i}`)) } };
  if (out && typeof out === 'object' && Object.getPrototypeOf(out) === Object.prototype) {
    const keys = Object.keys(out);
    return { tensors, names, spec: { kind: 'object', keys, items: keys.map((k) => take((out as Record<string, unknown>)[k], `${name}.${k}`)) } };
  }
  throw new Error(`trace: the forward returned ${out === null ? 'null' : typeof out} at '${name}'; outputs must be tensors, arrays/tuples or plain objects of tensors`);
}

/** Rebuilds the forward's result structure from its flat outputs. */
export function unflattenOutput<T>(spec: OutputSpec, flat: readonly T[]): unknown {
  let i = 0;
  const build = (s: OutputSpec): unknown => {
    if (s.kind === 'tensor') return flat[i++];
    if (s.kind === 'array') return s.items.map(build);
    return Object.fromEntries(s.keys.map((k, j) => [k, build(s.items[j])]));
  };
  return build(spec);
}
