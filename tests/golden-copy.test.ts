// tests/golden is a verbatim copy of the PyTorch golden data (../shared/golden next to the
// repository in the team's workspace). Where that folder exists, the copy must equal it byte
// for byte (same file list, same contents); in users' clones it does not, and the copy's own
// integrity is checked instead. The integrity checks run in both cases.

import { describe, it, expect } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const GOLDEN = fileURLToPath(new URL('./golden/', import.meta.url));
const SHARED = fileURLToPath(new URL('../../shared/golden/', import.meta.url));

/** The files tests/golden/README.md lists ("Files in ops/"), plus the README itself. */
const EXPECTED = [
  'README.md',
  ...['elementwise', 'activation', 'reductions', 'matmul', 'conv', 'pool', 'norm', 'loss', 'shape', 'indexing',
    'optim', 'autograd', 'conv_bn_fold', 'quantize_dynamic'].map((f) => `ops/${f}.json`),
];
const DTYPES = new Set(['float32', 'int64', 'int8', 'bool']);
const NON_FINITE = new Set(['NaN', 'Infinity', '-Infinity']);

/** Relative paths of every file under `dir`, sorted. */
function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name), base) : [relative(base, join(dir, e.name))]))
    .sort();
}

interface Sidecar { parts: string[]; part_bytes: number[]; total_bytes: number; sha256: string }
interface TensorLike { shape?: unknown; dtype?: unknown; data?: unknown; offset?: unknown; length?: unknown }

/** Every object in a golden file that encodes a tensor (it has `shape` and `dtype`), with its JSON path. */
function tensorsIn(value: unknown, path: string, out: [string, TensorLike][] = []): [string, TensorLike][] {
  if (Array.isArray(value)) value.forEach((v, i) => tensorsIn(v, `${path}[${i}]`, out));
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if ('shape' in o && 'dtype' in o) out.push([path, o as TensorLike]);
    else for (const [k, v] of Object.entries(o)) tensorsIn(v, `${path}.${k}`, out);
  }
  return out;
}

/** Problems with one tensor object (README "Tensor objects"); empty when it is well formed. */
function tensorProblems(t: TensorLike, streamBytes: number | null): string[] {
  const { shape, dtype, data } = t;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) return [`bad shape ${JSON.stringify(shape)}`];
  if (typeof dtype !== 'string' || !DTYPES.has(dtype)) return [`unknown dtype ${JSON.stringify(dtype)}`];
  const n = shape.reduce((a: number, b: number) => a * b, 1);
  if (Array.isArray(data)) {
    if (data.length !== n) return [`${data.length} values for shape [${shape}] (${n} elements)`];
    const bad = data.findIndex((v) => !(typeof v === 'number' && Number.isFinite(v)) && !(typeof v === 'string' && NON_FINITE.has(v)));
    return bad < 0 ? [] : [`element ${bad} is ${JSON.stringify(data[bad])}, not a number`];
  }
  // Sidecar tensor: float32 values at a 4-aligned byte offset inside the stream.
  const { offset, length } = t;
  if (dtype !== 'float32') return [`sidecar tensor of dtype ${dtype} (only float32 may use the sidecar)`];
  if (!Number.isInteger(offset) || !Number.isInteger(length)) return ['neither data nor an integer offset/length'];
  if (length !== n) return [`sidecar length ${length} for shape [${shape}] (${n} elements)`];
  if ((offset as number) % 4 !== 0) return [`sidecar offset ${offset} is not a multiple of 4`];
  if (streamBytes === null) return ['sidecar tensor in a file without a sidecar stream'];
  if ((offset as number) + 4 * n > streamBytes) return [`sidecar range ${offset}+${4 * n} bytes passes the stream end (${streamBytes})`];
  return [];
}

/** Checks a sidecar stream's parts (sizes, total, sha256); returns its byte length, or throws. */
function checkSidecar(file: string, sc: Sidecar): number {
  const hash = createHash('sha256');
  let total = 0;
  sc.parts.forEach((part, i) => {
    const p = join(GOLDEN, 'ops', part);
    if (!existsSync(p)) throw new Error(`${file}: sidecar part ${part} is missing`);
    const bytes = readFileSync(p);
    if (bytes.length !== sc.part_bytes[i]) throw new Error(`${file}: sidecar part ${part} has ${bytes.length} bytes, header says ${sc.part_bytes[i]}`);
    hash.update(bytes);
    total += bytes.length;
  });
  if (total !== sc.total_bytes) throw new Error(`${file}: sidecar stream has ${total} bytes, header says ${sc.total_bytes}`);
  const digest = hash.digest('hex');
  if (digest !== sc.sha256) throw new Error(`${file}: sidecar sha256 ${digest} != header ${sc.sha256}`);
  return total;
}

const files = listFiles(GOLDEN);
const jsonFiles = files.filter((f) => f.endsWith('.json'));

describe('golden data copy (tests/golden)', () => {
  if (existsSync(SHARED)) {
    it('equals ../shared/golden byte for byte', () => {
      expect(files, 'file list of tests/golden vs ../shared/golden').toEqual(listFiles(SHARED));
      const differing = files.filter((f) => !readFileSync(join(GOLDEN, f)).equals(readFileSync(join(SHARED, f))));
      expect(differing, 'files whose bytes differ from ../shared/golden: copy them again, never edit them').toEqual([]);
    });
  }
  // Without ../shared/golden (users' clones) the checks below are the whole test: no case is skipped.

  it('holds every file its README lists', () => {
    expect(EXPECTED.filter((f) => !files.includes(f))).toEqual([]);
    const readme = readFileSync(join(GOLDEN, 'README.md'), 'utf8');
    const listed = [...readme.matchAll(/^\| `([a-z_]+\.json)` \|/gm)].map((m) => `ops/${m[1]}`).sort();
    expect(listed, 'the README table and EXPECTED name the same files').toEqual(EXPECTED.filter((f) => f.endsWith('.json')).sort());
  });

  for (const f of jsonFiles) {
    it(`${f} parses and its tensors are well formed`, () => {
      const doc = JSON.parse(readFileSync(join(GOLDEN, f), 'utf8')) as Record<string, unknown>;
      expect(doc.format_version, `${f}: format_version`).toBe(1);
      expect(doc.family, `${f}: family matches the file name`).toBe(f.replace(/^ops\//, '').replace(/\.json$/, ''));
      const cases = doc.cases as { name: string }[];
      expect(Array.isArray(cases) && cases.length > 0, `${f}: has cases`).toBe(true);
      const names = cases.map((c) => c.name);
      expect(names.filter((n, i) => names.indexOf(n) !== i), `${f}: duplicate case names`).toEqual([]);
      const streamBytes = doc.sidecar ? checkSidecar(f, doc.sidecar as Sidecar) : null;
      const tensors = tensorsIn(doc.cases, 'cases');
      expect(tensors.length, `${f}: holds tensors`).toBeGreaterThan(0);
      const bad = tensors.flatMap(([path, t]) => tensorProblems(t, streamBytes).map((p) => `${f} ${path}: ${p}`));
      expect(bad).toEqual([]);
    });
  }
});
