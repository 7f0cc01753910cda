// Shared checks of the jit.trace tests: traced and reloaded outputs against eager, element by
// element within 1e-5 relative, and the output structure (tensor / array / object) preserved.

import { expect } from 'vitest';
import { jit, noGrad, Tensor, trace as tracer } from 'kiln';

/** The structure of a forward's result with each tensor replaced by its shape: `{ y: [7, 10] }`. */
export function structureOf(out: unknown): unknown {
  if (out instanceof Tensor) return [...out.shape];
  if (Array.isArray(out)) return out.map(structureOf);
  if (out && typeof out === 'object') return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, structureOf(v)]));
  return out;
}

/**
 * Largest |got - want| / (|want| + floor·max|want|): the relative error, guarded near zero. The
 * default floor (1e-2) holds an element near zero to 1e-7 of the output's scale at a 1e-5 bound:
 * a graph's kernels may round differently from eager's by an ulp (a fused tanh is a SIMD
 * polynomial), which near zero is a large relative error but not a wrong result.
 */
export function relativeError(got: Tensor, want: Tensor, floor = 1e-2): number {
  expect([...got.shape]).toEqual([...want.shape]);
  const a = got.toArray(), b = want.toArray();
  let scale = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]));
  let worst = 0;
  for (let i = 0; i < b.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (Number.isNaN(d)) return Infinity;
    worst = Math.max(worst, d / (Math.abs(b[i]) + floor * scale + Number.MIN_VALUE));
  }
  return worst;
}

/** Asserts that every tensor of `got` matches `want` within 1e-5 relative, structure included. */
export function expectMatches(got: unknown, want: unknown, what: string): void {
  expect(structureOf(got), `${what}: output structure`).toEqual(structureOf(want));
  const g = tracer.flattenOutput(got), w = tracer.flattenOutput(want);
  w.tensors.forEach((t, i) => {
    expect(relativeError(g.tensors[i], t), `${what}: ${w.names[i]}`).toBeLessThanOrEqual(1e-5);
  });
}

export interface TraceCase {
  model: tracer.TraceableModule;
  /** Example inputs for batch size n. */
  inputs: (n: number) => Tensor[];
  dynamicAxes: Record<number, Record<number, string>>;
}

/**
 * Traces at batch 2 with checkTrace on batches 1, 7 and 32, then compares — per batch size —
 * eager, TracedModule.forward and the graph reloaded from its .tsgraph bytes with jit.load.
 */
export async function traceAndCompare(c: TraceCase, sizes = [1, 7, 32]): Promise<jit.TracedModule> {
  const traced = jit.trace(c.model, c.inputs(2), { dynamicAxes: c.dynamicAxes, checkInputs: sizes.map(c.inputs), warn: false });
  expect(traced.warnings.map((w) => w.message)).toEqual([]);
  const loaded = await jit.load(traced.toBytes(), { backend: 'cpu' });
  for (const n of sizes) {
    const xs = c.inputs(n);
    const want: unknown = noGrad(() => c.model.forward(...xs));
    expectMatches(traced.forward(...xs), want, `traced, batch ${n}`);
    const fromFile = await loaded.run(xs);
    const flatWant = tracer.flattenOutput(want).tensors;
    expect(fromFile).toHaveLength(flatWant.length);
    // The reloaded file runs the runtime's kernels for constant weights (Winograd F(4×4) convs,
    // ~1e-6 of the output's scale from eager's direct sums; tests/winograd-golden.test.ts holds
    // them to PyTorch): its error is measured against the output's scale.
    fromFile.forEach((t, i) => expect(relativeError(t, flatWant[i], 1), `reloaded, batch ${n}, output ${i}`).toBeLessThanOrEqual(1e-5));
  }
  return traced;
}
