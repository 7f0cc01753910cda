// Timing and summary helpers shared by the benchmark scripts (bench/run.mjs, bench/kernels.mjs).
// Invariant: timing is wall clock (performance.now) around one call, after untimed warm-up
// calls; a summary never reorders or changes the caller's samples.

import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Median, min and max of a non-empty sample.
 * @param {number[]} samples
 * @returns {{ median: number, min: number, max: number, runs: number }}
 * @example summarize([3, 1, 2]) // { median: 2, min: 1, max: 3, runs: 3 }
 */
export function summarize(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { median, min: s[0], max: s[s.length - 1], runs: s.length };
}

/**
 * Times `fn` (milliseconds per call) after `warmup` untimed calls: at least `minRuns` runs,
 * then more until `budgetMs` of timed work is spent or `maxRuns` is reached.
 * @param {() => unknown} fn
 * @param {{ warmup?: number, minRuns?: number, maxRuns?: number, budgetMs?: number }} [opts]
 * @returns {number[]} milliseconds of each timed run
 * @example const ms = timeRuns(() => model.forward(x), { minRuns: 7, budgetMs: 5000 });
 */
export function timeRuns(fn, { warmup = 1, minRuns = 5, maxRuns = 50, budgetMs = 3000 } = {}) {
  for (let i = 0; i < warmup; i++) fn();
  const samples = [];
  let spent = 0;
  while (samples.length < minRuns || (spent < budgetMs && samples.length < maxRuns)) {
    const t0 = performance.now();
    fn();
    const ms = performance.now() - t0;
    samples.push(ms);
    spent += ms;
  }
  return samples;
}

/**
 * Whether the module at `url` is the script node was started with (not an import).
 * @param {string} url the caller's `import.meta.url`
 * @example if (isMain(import.meta.url)) main();
 */
export function isMain(url) {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(url));
  } catch {
    return false;
  }
}

/** Deterministic float32 values in [-0.5, 0.5) (an LCG), so benchmark inputs are the same every run. */
export function seededValues(n, seed) {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 32 - 0.5;
  }
  return out;
}
