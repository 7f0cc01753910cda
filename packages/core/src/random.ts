// The default random generator. Deterministic for a seed (manualSeed), fast, and
// independent of Math.random. The algorithm lives in ir-spec (random.ts) so compiled graphs run
// in this process draw from this same generator and reproduce eager's numbers.

import { Generator } from '@kiln/ir-spec';

export { Generator, type GeneratorState, type RandomSource } from '@kiln/ir-spec';

export const defaultGenerator = new Generator();

/** Seeds the default generator (PyTorch's torch.manual_seed). */
export function manualSeed(seed: number): void { defaultGenerator.manualSeed(seed); }

/** A random permutation of 0..n-1 (Fisher–Yates). */
export function randperm(n: number, gen: Generator = defaultGenerator): Int32Array {
  const p = new Int32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = gen.int(i + 1);
    const tmp = p[i]; p[i] = p[j]; p[j] = tmp;
  }
  return p;
}
