// A line diff for the IR view (pass A → pass B): the longest common subsequence of lines, then
// kept/removed/added runs in order. Invariant: the kept and removed lines, in order, are `a`;
// the kept and added lines, in order, are `b`.

export type DiffLine = { readonly kind: 'same' | 'del' | 'add'; readonly text: string };

/** The lines of `b` against those of `a` (O(n·m) table; IR listings are a few hundred lines). */
export function diffLines(a: readonly string[], b: readonly string[]): DiffLine[] {
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out: DiffLine[] = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push({ kind: 'same', text: a[i] }); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push({ kind: 'del', text: a[i++] });
    else out.push({ kind: 'add', text: b[j++] });
  }
  while (i < n) out.push({ kind: 'del', text: a[i++] });
  while (j < m) out.push({ kind: 'add', text: b[j++] });
  return out;
}
