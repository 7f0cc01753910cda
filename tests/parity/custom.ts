// Golden families whose cases are not single op calls (optimizer steps, autograd programs).
// Each runner checks one case and returns how many tensors it compared.

import type { GoldenCase, Tol } from './golden.js';

export type CaseRunner = (c: GoldenCase, tol: Tol) => number;

export const customRunners: Record<string, CaseRunner> = {};
