// `--input x:f32[N,3,32,32]` specs: a name and an IR type whose symbolic dims are dynamic.
// Invariant: an example built from a spec has every symbol at EXAMPLE_SIZE, so the tracer and
// the scripter see a size that cannot be confused with a fixed dim of 1.

import { DTYPE_FROM_SHORT, evalDim, dimAtoms, parseDim, type Dim, type DType } from '@kiln/ir-spec';
import { randn, zeros, type Tensor } from 'kiln';
import { UserError } from './errors.js';

export const EXAMPLE_SIZE = 2;

export interface InputSpec {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly Dim[];
}

/** Parses `name:type`, e.g. `x:f32[N,3,32,32]`; `where` names the source for the error, which names the bad part. */
export function parseInputSpec(text: string, where = '--input'): InputSpec {
  const colon = text.indexOf(':');
  const fix = `write it as name:type, e.g. x:f32[N,3,32,32] (dtypes f32, i32, bool; symbols such as N are dynamic)`;
  const bad = (part: string) => new UserError(`${where} '${text}': ${part}; ${fix}`);
  if (colon <= 0) throw bad(colon < 0 ? "no ':' between the name and the type" : 'the name is missing');
  const name = text.slice(0, colon).trim();
  if (!/^[A-Za-z_]\w*$/.test(name)) throw bad(`the name '${name}' is not an identifier`);
  const typeText = text.slice(colon + 1).trim();
  const m = /^([A-Za-z0-9_]+)\[(.*)\]$/.exec(typeText);
  if (!m) throw bad(`the type '${typeText}' is not dtype[dims]`);
  // A Map-like lookup: the dtype is user text ('constructor' must not find Object.prototype's).
  if (!Object.hasOwn(DTYPE_FROM_SHORT, m[1])) throw bad(`unknown dtype '${m[1]}' (use f32, i32 or bool)`);
  const dtype = DTYPE_FROM_SHORT[m[1]];
  const shape = m[2].trim() === '' ? [] : m[2].split(',').map((d): Dim => {
    const t = d.trim();
    if (/^\d+$/.test(t)) return Number(t);
    const notDim = `bad dim '${t}': a dim is a size (0, 1, 2, ...) or a symbol such as N`;
    let dim: Dim;
    try {
      dim = parseDim(t);
    } catch (e) {
      throw bad(`${notDim} (${e instanceof Error ? e.message : String(e)})`);
    }
    if (typeof dim === 'number' || dimAtoms(dim).length === 0) throw bad(notDim);
    return dim;
  });
  return { name, dtype, shape };
}

/** The `inputs` export of a model file: `['x:f32[N,4]', ...]` or `{ x: 'f32[N,4]', ... }`. */
export function inputsFromExport(value: unknown, file: string): InputSpec[] {
  const where = `${file}: export 'inputs'`;
  if (Array.isArray(value)) return value.map((v) => parseInputSpec(String(v), where));
  if (value && typeof value === 'object') return Object.entries(value).map(([k, v]) => parseInputSpec(`${k}:${String(v)}`, where));
  throw new UserError(`${where} must be an array such as ['x:f32[N,3,32,32]'] or an object such as { x: 'f32[N,3,32,32]' }`);
}

/** The concrete shape with every symbol bound to `size`. */
export function concreteShape(shape: readonly Dim[], size: number): number[] {
  return shape.map((d) => {
    if (typeof d === 'number') return d;
    const env = new Map(dimAtoms(d).map((a) => [a, size]));
    const v = evalDim(d, env);
    if (v === undefined) throw new UserError(`cannot give the dim '${d}' a size; use plain symbols such as N`);
    if (!Number.isInteger(v) || v < 0) throw new UserError(`the dim '${d}' is ${v} when its symbols are ${size}; use plain symbols such as N, or sums and products of them`);
    return v;
  });
}

/** A random example tensor for a spec (symbols at EXAMPLE_SIZE). */
export function exampleInput(spec: InputSpec, size = EXAMPLE_SIZE): Tensor {
  const shape = concreteShape(spec.shape, size);
  return spec.dtype === 'float32' ? randn(shape) : zeros(shape, { dtype: spec.dtype });
}

/** dynamicAxes for jit.trace and jit.script: every symbolic dim of every input, named by its symbol. */
export function dynamicAxesOf(specs: readonly InputSpec[]): Record<number, Record<number, string>> {
  const axes: Record<number, Record<number, string>> = {};
  specs.forEach((s, i) => s.shape.forEach((d, j) => {
    if (typeof d === 'string') (axes[i] ??= {})[j] = d;
  }));
  return axes;
}
