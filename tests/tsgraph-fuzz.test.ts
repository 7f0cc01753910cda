// Fuzzing the `.tsgraph` reader: thousands of seeded mutations of real files (bit flips in the
// prefix, header and blob; truncations; appended bytes; JSON edits — numbers changed, keys
// deleted, types swapped, huge/negative/NaN shapes, wrong dtypes, unknown or swapped ops, forged
// ids — and forged header lengths, tensor offsets and lengths). Each mutation must either decode
// or throw a TsgraphError: never any other exception, never a slow case. A file that decodes
// must re-encode, and that re-encoding is a fixed point (what the reader accepts, the writer can
// write). Deterministic: a fixed seed per case, printed on failure to reproduce it alone. The
// mutations live in fuzz/mutate.ts, shared with the load+run fuzzer (fuzz/campaign.ts).

import { describe, it, expect } from 'vitest';
import { decodeTsgraph, encodeTsgraph, TsgraphError, type TsgraphErrorCode } from '@kiln/ir-spec';
import { GRAPHS } from './fixtures/tsgraph-graphs.js';
import { mutate, rand } from './fuzz/mutate.js';

const CASES = 2400;
const SEED = 0x7a5c3;
/** A case slower than this counts as a hang (the files are a few kB; decoding takes ~1 ms). */
const MAX_CASE_MS = 2000;

const BASES: readonly { name: string; bytes: Uint8Array }[] = Object.entries(GRAPHS).map(([name, build]) => ({
  name,
  bytes: encodeTsgraph(build(), name === 'loop' ? { kernels: [{ key: 'k0', wgsl: 'fn main() {}' }] } : {}),
}));

type Outcome = 'accepted' | TsgraphErrorCode;

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function runCase(i: number): { outcome: Outcome; what: string; ms: number } {
  const r = rand(SEED ^ Math.imul(i + 1, 0x9e3779b1));
  const base = r.pick(BASES);
  const { bytes, what } = mutate(r, base.bytes);
  const desc = `case ${i} (${base.name}: ${what})`;
  const t0 = performance.now();
  let outcome: Outcome;
  try {
    const { graph, header } = decodeTsgraph(bytes);
    // What the reader accepts, the writer can write, and writing is then a fixed point.
    const again = encodeTsgraph(graph, { producer: header.producer, kernels: header.kernels });
    const back = decodeTsgraph(again);
    const third = encodeTsgraph(back.graph, { producer: back.header.producer, kernels: back.header.kernels });
    if (!sameBytes(third, again)) throw new Error(`${desc}: re-encoding the accepted file is not a fixed point`);
    outcome = 'accepted';
  } catch (e) {
    if (!(e instanceof TsgraphError)) {
      throw new Error(`${desc}: decoding threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} instead of a TsgraphError`, { cause: e });
    }
    if (!e.message.startsWith(`${e.code}: `)) throw new Error(`${desc}: the message does not start with its code: ${e.message}`);
    outcome = e.code;
  }
  return { outcome, what: desc, ms: performance.now() - t0 };
}

describe('.tsgraph fuzz', () => {
  it(`${CASES} mutations of real files decode or throw a TsgraphError, each quickly`, () => {
    const counts = new Map<Outcome, number>();
    const time = new Map<Outcome, number>();
    let slowest = { ms: 0, what: '' };
    for (let i = 0; i < CASES; i++) {
      const c = runCase(i);
      counts.set(c.outcome, (counts.get(c.outcome) ?? 0) + 1);
      time.set(c.outcome, (time.get(c.outcome) ?? 0) + c.ms);
      if (c.ms > slowest.ms) slowest = { ms: c.ms, what: c.what };
    }
    const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `  ${k.padEnd(20)} ${String(n).padStart(5)}   ${(time.get(k)! / n).toFixed(2)} ms/case`);
    console.log(`tsgraph fuzz: ${CASES} mutations (seed ${SEED})\n${rows.join('\n')}\n  slowest: ${slowest.ms.toFixed(1)} ms, ${slowest.what}`);
    expect(slowest.ms, slowest.what).toBeLessThan(MAX_CASE_MS);
    // The mutations reach every layer of the reader, and some survive (blob flips, benign edits).
    for (const code of ['BAD_MAGIC', 'UNSUPPORTED_VERSION', 'TRUNCATED', 'HEADER_TOO_LARGE', 'BAD_JSON', 'SCHEMA',
      'OFFSET_OUT_OF_RANGE', 'OVERLAP', 'SIZE_MISMATCH', 'UNKNOWN_OP', 'VERIFY', 'accepted'] as const) {
      expect(counts.get(code) ?? 0, `no mutation ended in ${code}`).toBeGreaterThan(0);
    }
  });

  it('is deterministic: the same case gives the same mutation and outcome', () => {
    for (let i = 0; i < 100; i++) {
      const a = runCase(i), b = runCase(i);
      expect([b.outcome, b.what]).toEqual([a.outcome, a.what]);
    }
  });
});
