// One fuzz case through the runtime as a user would meet it: load() of the bytes, then one
// run() with inputs made from the loaded model's own input types (or odd ones, by the case's
// recipe). Invariant: the outcome is a label — `ok`, `TsgraphError:CODE`, `RuntimeError:CODE`
// or `untyped:Name` — and this function itself never throws.

import { TsgraphError } from '@kiln/ir-spec';
import { load, RuntimeError, type LoadOptions, type Model } from '@kiln/runtime';
import { rng } from '../helpers/rng.js';
import type { FuzzCase, InputRecipe } from './families.js';

export interface CaseResult {
  readonly outcome: string;
  /** The message of an untyped error (for the report). */
  readonly message?: string;
}

const DTYPES: Readonly<Record<string, string>> = { f32: 'float32', i32: 'int32', bool: 'bool' };

/** An input's type in text form (`f32[N,4]`, `i32`) as dtype and dims (a dim expression stays a string). */
function parseIO(type: string): { dtype: string; shape: (number | string)[] | null } | null {
  const m = /^(f32|i32|bool)(?:\[(.*)\])?$/.exec(type);
  if (!m || !Object.hasOwn(DTYPES, m[1])) return null;
  const shape = m[2] === undefined ? null : m[2] === '' ? [] : m[2].split(',').map((d) => (/^\d+$/.test(d) ? Number(d) : d));
  return { dtype: DTYPES[m[1]], shape };
}

function makeInputs(model: Model, recipe: InputRecipe, seed: number): unknown[] {
  const r = rng(seed);
  const dims = new Map<string, number>();
  const dim = (d: number | string) => {
    if (typeof d === 'number') return d;
    if (recipe.kind === 'batch0') return 0;
    if (!dims.has(d)) dims.set(d, 1 + Math.floor(r() * 3));
    return dims.get(d)!;
  };
  return model.inputs.map((io, k) => {
    const t = parseIO(io.type);
    if (!t) return null;
    if (t.shape === null) {
      if (recipe.kind === 'scalar') return recipe.value;
      return t.dtype === 'bool' ? r() < 0.8 : Math.floor(r() * 6);
    }
    const shape = t.shape.map(dim);
    const n = shape.reduce((a, d) => a * d, 1);
    const data: number[] = Array.from({ length: Math.min(n, 1 << 20) }, () => (t.dtype === 'float32' ? r() * 4 - 2 : t.dtype === 'bool' ? (r() < 0.5 ? 1 : 0) : Math.floor(r() * 4)));
    if (recipe.kind === 'nan' && data.length) data[Math.floor(r() * data.length)] = [NaN, Infinity, -Infinity][Math.floor(r() * 3)];
    const input: { data: unknown; shape: unknown; dtype: unknown } = { data, shape, dtype: t.dtype };
    if (recipe.kind === 'strings' && data.length) (data as unknown[])[Math.floor(r() * data.length)] = 'x';
    if (recipe.kind === 'dtype' && k === 0) input.dtype = recipe.dtype;
    if (recipe.kind === 'shape' && k === 0) input.shape = recipe.shape;
    return input;
  });
}

function label(e: unknown): CaseResult {
  if (e instanceof TsgraphError) return { outcome: `TsgraphError:${e.code}` };
  if (e instanceof RuntimeError) return { outcome: `RuntimeError:${e.code}` };
  const name = e instanceof Error ? e.name : typeof e;
  return { outcome: `untyped:${name}`, message: e instanceof Error ? `${e.message}\n${e.stack ?? ''}`.slice(0, 2000) : String(e) };
}

/** load() then one run(); the outcome label of whatever happened. */
export async function runCase(c: FuzzCase, opts: LoadOptions): Promise<CaseResult> {
  let model: Model;
  try {
    model = await load(c.bytes, { backend: 'cpu', ...opts });
  } catch (e) {
    return label(e);
  }
  try {
    await model.run(makeInputs(model, c.inputs, c.inputSeed) as never);
    return { outcome: 'ok' };
  } catch (e) {
    return label(e);
  }
}
