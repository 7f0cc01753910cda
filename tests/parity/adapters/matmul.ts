// Golden 'matmul' cases → Kiln calls. See ../adapter.ts for the contract.
import { matmul, mm, bmm, F } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

export const adapters: AdapterTable = {
  matmul: ([a, b]) => matmul(a, b),
  mm: ([a, b]) => mm(a, b),
  bmm: ([a, b]) => bmm(a, b),
  linear: ([x, w, b]) => F.linear(x, w, b ?? null),
};
