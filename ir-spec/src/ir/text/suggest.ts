// Spelling help for unknown op names in parse errors. Invariant: only suggests a registered
// or structural op within a small edit distance; otherwise points at how to list the ops.

import { allOps } from '../../op-def.js';
import { allBuiltins } from '../builtins.js';

/** `; did you mean 'conv2d'?` for the closest known op name, when one is close. */
export function suggestOp(op: string): string {
  const names = [...allOps().map((d) => d.name), ...allBuiltins().map((d) => d.name)];
  let best = '', bestD = Infinity;
  for (const n of names) {
    const d = editDistance(op, n);
    if (d < bestD) { best = n; bestD = d; }
  }
  return bestD <= Math.max(1, Math.floor(op.length / 3)) ? `; did you mean '${best}'?` : ' (list ops with allOps() and allBuiltins())';
}

/** Edit distance counting an adjacent swap as one edit (`rleu` → `relu` is 1). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
