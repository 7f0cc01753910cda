// The `.tsgraph` blob checksum (format 1.1, SPEC.md §13.2/§13.5): XXH32 matches the reference,
// a corrupted weight is refused at load with CHECKSUM_MISMATCH instead of running with changed
// outputs, `verifyChecksum: false` opts out, format 1.0 files (no checksum) still load and run,
// a 1.1 header without its checksum is refused, and checking 50 MB stays cheap.
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { decodeTsgraph, encodeTsgraph, GraphBuilder, tensorType, TsgraphError, xxh32, xxh32Hex } from '@kiln/ir-spec';
import { load } from '@kiln/runtime';
import { cnnGraph } from './fixtures/tsgraph-graphs.js';
import { assemble, deleteAt, disassemble, editHeader, setAt } from './fixtures/tsgraph-craft.js';

const OLD = fileURLToPath(new URL('./fixtures/cnn-format-1.0.tsgraph', import.meta.url));

/** y = x · w with a param w of `n` floats. */
function scaleGraph(n: number, fill = (i: number) => (i % 13) - 6): Uint8Array {
  const b = new GraphBuilder('scale');
  const x = b.input('x', tensorType('float32', [n]));
  const w = b.param('w', { dtype: 'float32', shape: [n], data: Float32Array.from({ length: n }, (_, i) => fill(i)) });
  b.output('y', b.op1('mul', [x, w]));
  return encodeTsgraph(b.build());
}

function codeOf(f: () => unknown): string {
  try { f(); } catch (e) { if (e instanceof TsgraphError) return e.code; throw e; }
  return 'accepted';
}

describe('xxh32', () => {
  const text = (s: string) => new TextEncoder().encode(s);
  it('matches the reference vectors', () => {
    expect(xxh32Hex(text(''))).toBe('02cc5d05');
    expect(xxh32Hex(text('abc'))).toBe('32d153ff');
    expect(xxh32Hex(text('Nobody inspects the spammish repetition'))).toBe('e2293b2f');
    // Bytes (31·i + 7) mod 256, against an independent straight-from-the-spec Python implementation:
    // every path (stripes, 4-byte words, single bytes) and their boundaries.
    const want: [number, string][] = [[1, '002e0d32'], [3, 'aca17380'], [4, '073faa82'], [5, '16ac9537'], [15, '9f29f87b'], [16, '3f6c9665'],
      [17, 'e048ecdb'], [31, '00f1525c'], [32, 'ee42e668'], [63, '471925bb'], [64, 'f2a797fa'], [100, '75936eb8'], [1000, 'a793e7c7'], [4099, '74402def']];
    for (const [n, h] of want) {
      const b = Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) % 256);
      expect(xxh32Hex(b), `length ${n}`).toBe(h);
      // The same bytes at an unaligned offset take the byte-reading path and agree.
      const shifted = new Uint8Array(n + 1);
      shifted.set(b, 1);
      expect(xxh32(shifted.subarray(1)), `length ${n}, unaligned`).toBe(xxh32(b));
    }
  });
});

describe('.tsgraph checksum', () => {
  it('is written in the header (deterministically) and verified on decode', () => {
    const a = scaleGraph(1000), b = scaleGraph(1000);
    expect(b).toEqual(a);
    const { header } = decodeTsgraph(a);
    expect(header.format).toEqual({ major: 1, minor: 1 });
    expect(header.checksum?.algorithm).toBe('xxh32');
    expect(header.checksum?.blob).toMatch(/^[0-9a-f]{8}$/);
    // Other weights, another checksum.
    expect(decodeTsgraph(scaleGraph(1000, (i) => i)).header.checksum?.blob).not.toBe(header.checksum?.blob);
  });

  it('a corrupted weight is refused by the runtime; verifyChecksum: false loads it with the changed outputs', async () => {
    const good = scaleGraph(8, () => 1);
    const p = disassemble(good);
    const blob = p.blob.slice();
    blob[3 * 4 + 3] = 0x40; // w[3]: 1 (0x3f800000) → 4 (0x40800000)
    const bad = assemble({ ...p, blob });
    await expect(load(bad, { backend: 'cpu' })).rejects.toThrow(/^CHECKSUM_MISMATCH: the tensor data \(blob bytes \d+\.\.\d+\) has xxh32 checksum [0-9a-f]{8} but the header records [0-9a-f]{8}: the weights were changed or corrupted after the file was written/);
    const x = { data: [1, 1, 1, 1, 1, 1, 1, 1], shape: [8], dtype: 'float32' as const };
    const [y0] = await (await load(good, { backend: 'cpu' })).run([x]);
    expect([...y0.data]).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    const [y1] = await (await load(bad, { backend: 'cpu', verifyChecksum: false })).run([x]);
    expect([...y1.data]).toEqual([1, 1, 1, 4, 1, 1, 1, 1]);
    expect(codeOf(() => decodeTsgraph(bad, { verifyChecksum: false }))).toBe('accepted');
  });

  it('the zero fill between tensors is covered too (any blob byte)', () => {
    const good = encodeTsgraph(cnnGraph());
    const p = disassemble(good);
    const blob = p.blob.slice();
    blob[blob.length - 1] = 1; // padding after the last tensor: ignored by readers, still checked
    expect(codeOf(() => decodeTsgraph(assemble({ ...p, blob })))).toBe('CHECKSUM_MISMATCH');
  });

  it('files written before checksums (format 1.0) load and run; their header has no checksum', async () => {
    const bytes = new Uint8Array(readFileSync(OLD));
    const v = new DataView(bytes.buffer, bytes.byteOffset);
    expect([v.getUint16(8, true), v.getUint16(10, true)]).toEqual([1, 0]);
    const { header } = decodeTsgraph(bytes);
    expect(header.checksum).toBeUndefined();
    const model = await load(bytes, { backend: 'cpu' });
    const n = 3 * 8 * 8;
    const [logits] = await model.run([{ data: Array.from({ length: n }, (_, i) => (i % 5) / 5), shape: [1, 3, 8, 8], dtype: 'float32' }]);
    expect(logits.shape).toEqual([1, 10]);
    expect([...logits.data].every(Number.isFinite)).toBe(true);
    // A 1.0 file with a checksum field is refused as an unknown key (1.0 has none), not trusted.
    const p = disassemble(bytes);
    const withField = editHeader(bytes, (h) => setAt(h, 'checksum', { algorithm: 'xxh32', blob: '00000000' }));
    expect(() => decodeTsgraph(assemble({ ...disassemble(withField), minor: p.minor }))).toThrow(/^SCHEMA: header field checksum is not part of format 1\.0 \(it was added in 1\.1\)/);
  });

  it('a 1.1 header without its checksum, or with a malformed one, is refused', () => {
    const good = scaleGraph(16);
    expect(() => decodeTsgraph(editHeader(good, (h) => deleteAt(h, 'checksum')))).toThrow(/^SCHEMA: header field checksum is missing, but files of format 1\.1 and later always carry one/);
    expect(() => decodeTsgraph(editHeader(good, (h) => setAt(h, 'checksum.blob', 'XYZ')))).toThrow(/^SCHEMA: header field checksum\.blob: must be 8 lower-case hex digits/);
    expect(codeOf(() => decodeTsgraph(editHeader(good, (h) => setAt(h, 'checksum.algorithm', 'crc32'))))).toBe('SCHEMA');
  });

  it('a newer minor naming an unknown algorithm is refused unless verifyChecksum is false', () => {
    const edited = editHeader(scaleGraph(16), (h) => {
      setAt(h, 'format.minor', 9);
      setAt(h, 'checksum', { algorithm: 'xxh3-128', blob: '0123456789abcdef0123456789abcdef' });
    });
    const newer = assemble({ ...disassemble(edited), minor: 9 });
    expect(() => decodeTsgraph(newer)).toThrow(/^UNSUPPORTED_VERSION: the header's checksum uses algorithm 'xxh3-128', which this reader does not know \(it checks 'xxh32'\): upgrade Kiln, or load with \{ verifyChecksum: false \}/);
    expect(codeOf(() => decodeTsgraph(newer, { verifyChecksum: false }))).toBe('accepted');
  });

  it('checking a 50 MB blob costs tens of milliseconds (measured; bound generous for a shared CI machine)', () => {
    const bytes = new Uint8Array(50 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i += 4093) bytes[i] = i & 255;
    xxh32(bytes.subarray(0, 1 << 20)); // warm up the JIT
    const times: number[] = [];
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      xxh32(bytes);
      times.push(performance.now() - t0);
    }
    const best = Math.min(...times);
    console.log(`xxh32 of 50 MiB: best ${best.toFixed(1)} ms of ${times.map((t) => t.toFixed(1)).join(', ')}`);
    expect(best).toBeLessThan(250);
  });
});
