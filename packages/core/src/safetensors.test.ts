// safetensors: round trips, the on-disk layout, PyTorch's dtypes, and one test per kind of
// malformed file (each must give a SafetensorsError naming the problem).
import { describe, expect, it } from 'vitest';
import { tensor, randn, nn, loadSafetensors, saveSafetensors, parseSafetensors, SafetensorsError } from './index.js';

/** A file from a header object and a data section, as a writer would lay it out. */
function file(header: unknown, data: Uint8Array = new Uint8Array(0), rawHeader?: string): Uint8Array {
  const h = new TextEncoder().encode(rawHeader ?? JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}
function expectError(bytes: Uint8Array, pattern: RegExp): void {
  let err: unknown = null;
  try { loadSafetensors(bytes); } catch (e) { err = e; }
  expect(err).toBeInstanceOf(SafetensorsError);
  expect((err as Error).message).toMatch(pattern);
}

describe('safetensors round trip', () => {
  it('writes and reads F32, I32 and BOOL tensors with metadata', () => {
    const t = {
      'layer.weight': randn([3, 4]),
      'layer.count': tensor([1, -2, 2147483647], { dtype: 'int32' }),
      mask: tensor([[true, false], [false, true]]),
      scalar: tensor(2.5),
      empty: randn([0, 3]),
    };
    const bytes = saveSafetensors(t, { format: 'pt', note: 'ünïcode' });
    const { tensors, metadata } = parseSafetensors(bytes);
    expect(metadata).toEqual({ format: 'pt', note: 'ünïcode' });
    expect(Object.keys(tensors)).toEqual(Object.keys(t));
    for (const [k, v] of Object.entries(t)) {
      expect(tensors[k].dtype).toBe(v.dtype);
      expect(tensors[k].shape).toEqual(v.shape);
      expect(tensors[k].toArray()).toEqual(v.toArray());
    }
  });

  it('lays the file out as the format says: u64 length, space-padded JSON to 8 bytes, packed data', () => {
    const bytes = saveSafetensors({ a: tensor([1, 2]), b: tensor([true]) });
    const dv = new DataView(bytes.buffer, bytes.byteOffset);
    const n = dv.getUint32(0, true);
    expect(dv.getUint32(4, true)).toBe(0);
    expect((8 + n) % 8).toBe(0);
    const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    expect(text).toMatch(/^\{.*\} *$/); // padding is spaces after the JSON
    expect(JSON.parse(text)).toEqual({
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      b: { dtype: 'BOOL', shape: [1], data_offsets: [8, 9] },
    });
    expect(bytes.length).toBe(8 + n + 9);
    expect(dv.getFloat32(8 + n + 4, true)).toBe(2);
    expect(bytes[8 + n + 8]).toBe(1);
  });

  it('loads a module state dict through loadSafetensors (the PyTorch workflow)', () => {
    const a = new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4));
    const b = new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4));
    b.loadStateDict(loadSafetensors(saveSafetensors(a.stateDict())));
    expect(b.getParameter('0.weight').toArray()).toEqual(a.getParameter('0.weight').toArray());
    expect(b.getBuffer('1.num_batches_tracked').dtype).toBe('int32');
  });

  it('reads a Node Buffer (readFileSync) that sits inside a larger ArrayBuffer', () => {
    const a = { w: tensor([1.5, -2.25, 3]), i: tensor(new Int32Array([7, -8])) };
    const file = saveSafetensors(a);
    const pool = Buffer.alloc(file.length + 16);
    pool.set(file, 8);
    const sd = loadSafetensors(pool.subarray(8, 8 + file.length)); // a Buffer: its slice() shares memory
    expect(Array.from(sd.w.toArray())).toEqual([1.5, -2.25, 3]);
    expect(Array.from(sd.i.toArray())).toEqual([7, -8]);
  });
});

describe('safetensors PyTorch dtypes', () => {
  it('reads F16 as float16 and BF16 as bfloat16 (normal, subnormal, max, infinity) and writes them back bit for bit', () => {
    // Half bit patterns: 0x3C00 = 1, 0xC000 = -2, 0x7BFF = 65504 (max), 0x0001 = 2^-24, 0x7C00 = inf.
    const half = new Uint8Array(new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00]).buffer);
    // bfloat16 is the top 16 bits of a float32: 0x3F80 = 1, 0xC040 = -3, 0x4049 ≈ 3.140625.
    const bf = new Uint8Array(new Uint16Array([0x3f80, 0xc040, 0x4049]).buffer);
    const data = new Uint8Array(16);
    data.set(half, 0);
    data.set(bf, 10);
    const t = loadSafetensors(file({
      h: { dtype: 'F16', shape: [5], data_offsets: [0, 10] },
      b: { dtype: 'BF16', shape: [3], data_offsets: [10, 16] },
    }, data));
    expect([t.h.dtype, t.b.dtype]).toEqual(['float16', 'bfloat16']);
    expect([...t.h.toArray()]).toEqual([1, -2, 65504, Math.fround(2 ** -24), Infinity]);
    expect([...t.b.toArray()]).toEqual([1, -3, 3.140625]);
    const back = loadSafetensors(saveSafetensors({ h: t.h, b: t.b }));
    expect([back.h.dtype, [...back.h.toArray()], back.b.dtype, [...back.b.toArray()]]).toEqual(['float16', [...t.h.toArray()], 'bfloat16', [...t.b.toArray()]]);
  });

  it('reads I64 as int32 and refuses values that do not fit', () => {
    const ok = new BigInt64Array([-5n, 2147483647n, -2147483648n, 0n]);
    const t = loadSafetensors(file({ n: { dtype: 'I64', shape: [2, 2], data_offsets: [0, 32] } }, new Uint8Array(ok.buffer)));
    expect(t.n.dtype).toBe('int32');
    expect([...t.n.toArray()]).toEqual([-5, 2147483647, -2147483648, 0]);
    const big = new BigInt64Array([1n, 2147483648n]);
    expectError(file({ n: { dtype: 'I64', shape: [2], data_offsets: [0, 16] } }, new Uint8Array(big.buffer)), /'n': I64 value 2147483648 at element 1 does not fit in int32/);
  });
});

describe('safetensors into a module', () => {
  it('loads a PyTorch-style file (F16 weights, I64 num_batches_tracked) with Module.loadSafetensors', () => {
    // What torch saves for BatchNorm1d(2): weight, bias, running_mean, running_var as floats and
    // num_batches_tracked as int64. Half 0x3C00 = 1, 0x4000 = 2, 0x3800 = 0.5, 0x0000 = 0.
    const h = (bits: number[]) => new Uint8Array(new Uint16Array(bits).buffer);
    const data = new Uint8Array(24);
    data.set(h([0x4000, 0x3800]), 0); // weight [2, 0.5]
    data.set(h([0x3c00, 0x0000]), 4); // bias [1, 0]
    data.set(h([0x3800, 0x3800]), 8); // running_mean
    data.set(h([0x4000, 0x4000]), 12); // running_var
    data.set(new Uint8Array(new BigInt64Array([42n]).buffer), 16);
    const bytes = file({
      __metadata__: { format: 'pt' },
      weight: { dtype: 'F16', shape: [2], data_offsets: [0, 4] },
      bias: { dtype: 'F16', shape: [2], data_offsets: [4, 8] },
      running_mean: { dtype: 'F16', shape: [2], data_offsets: [8, 12] },
      running_var: { dtype: 'F16', shape: [2], data_offsets: [12, 16] },
      num_batches_tracked: { dtype: 'I64', shape: [], data_offsets: [16, 24] },
    }, data);
    const bn = new nn.BatchNorm1d(2);
    expect(bn.loadSafetensors(bytes)).toEqual({ missingKeys: [], unexpectedKeys: [] });
    expect([...bn.weight!.toArray()]).toEqual([2, 0.5]);
    expect([...bn.runningVar!.toArray()]).toEqual([2, 2]);
    expect(bn.numBatchesTracked!.item()).toBe(42);
    expect(() => new nn.BatchNorm1d(3).loadSafetensors(bytes)).toThrow(/size mismatch for weight/);
  });
});

describe('safetensors malformed files', () => {
  const good = { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } };
  const data8 = new Uint8Array(8);

  it('truncated before the header length', () => {
    expectError(new Uint8Array(5), /truncated file: 5 bytes/);
  });
  it('header length past the end of the file', () => {
    const f = file(good, data8);
    new DataView(f.buffer).setUint32(0, 1000, true);
    expectError(f, /header length 1000 runs past the end of the file/);
    const huge = file(good, data8);
    new DataView(huge.buffer).setUint32(4, 1, true); // a length of 2^32 + n
    expectError(huge, /header length .* larger than/);
  });
  it('invalid JSON or a non-object header', () => {
    expectError(file(null, data8, '{"a": {'), /not valid JSON/);
    expectError(file([1, 2], data8), /must be a JSON object/);
    const bad = file(good, data8);
    bad[9] = 0xff; // not UTF-8
    expectError(bad, /not valid UTF-8/);
  });
  it('unknown dtype, bad shape, bad offsets', () => {
    expectError(file({ a: { dtype: 'F8_E4M3', shape: [2], data_offsets: [0, 2] } }, data8), /'a': unknown or unsupported dtype 'F8_E4M3'/);
    expectError(file({ a: { dtype: 'constructor', shape: [2], data_offsets: [0, 2] } }, data8), /unknown or unsupported dtype 'constructor'/);
    expectError(file({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 8] } }, data8), /'a': shape must be a list of non-negative integers/);
    expectError(file({ a: { dtype: 'F32', shape: [2], data_offsets: [0] } }, data8), /data_offsets must be \[begin, end\]/);
    expectError(file({ a: { dtype: 'F32', shape: [2], data_offsets: [8, 0] } }, data8), /end before they begin/);
    expectError(file({ a: 'oops' }, data8), /entry 'a' must be an object/);
    expectError(file({ __metadata__: { k: 1 } }, data8), /__metadata__ value for 'k' must be a string/);
  });
  it('refuses deep nesting, duplicate keys and huge ranks up front (issue 17)', () => {
    // 20 MB of nesting: refused by the linear pre-scan in well under a second, without JSON.parse.
    const deep = '['.repeat(10_000_000) + ']'.repeat(10_000_000);
    const t0 = performance.now();
    expectError(file(null, data8, `{"a": ${deep}}`), /nests deeper than 3 levels/);
    expect(performance.now() - t0).toBeLessThan(5000); // was 14 s and 1 GB
    expectError(file(null, data8, '{"a": {"dtype": "F32", "shape": [[2]], "data_offsets": [0, 8]}}'), /nests deeper than 3 levels/);
    // Duplicate tensor names (JSON.parse would keep the last), also spelled differently, and duplicate fields.
    const entry = '{"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}';
    expectError(file(null, data8, `{"a": ${entry}, "a": ${entry}}`), /key "a" twice in one object \(two tensors of the same name\)/);
    expectError(file(null, data8, `{"a": ${entry}, "\\u0061": ${entry}}`), /key "a" twice/);
    expectError(file(null, data8, '{"a": {"dtype": "F32", "dtype": "I32", "shape": [2], "data_offsets": [0, 8]}}'), /key "dtype" twice in one object;/);
    // Keys inside strings and escaped quotes do not confuse the scan.
    const ok = loadSafetensors(file(null, data8, `{"__metadata__": {"k": "x\\"y\\": {[", "k2": "a"}, "a\\"": ${entry}}`));
    expect(Object.keys(ok)).toEqual(['a"']);
    // A rank-100,000 shape of ones is refused by its rank, not walked.
    expectError(file({ a: { dtype: 'F32', shape: Array(100_000).fill(1), data_offsets: [0, 4] } }, data8), /'a': rank 100000 is above the limit of 32/);
  });
  it('offsets out of range (truncated data section)', () => {
    expectError(file(good, new Uint8Array(6)), /'a': data_offsets \[0, 8\] run past the end of the data section \(6 bytes\)/);
  });
  it('offsets that do not match shape × dtype size', () => {
    expectError(file({ a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, data8), /'a': F32\[3\] needs 12 bytes but data_offsets \[0, 8\] hold 8/);
    // A shape whose byte size overflows must not allocate or hang.
    expectError(file({ a: { dtype: 'F32', shape: [2 ** 40, 2 ** 40], data_offsets: [0, 8] } }, data8), /needs .* bytes but data_offsets/);
  });
  it('overlapping tensors', () => {
    expectError(file({
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      b: { dtype: 'I32', shape: [1], data_offsets: [4, 8] },
    }, data8), /tensors 'a' \[0, 8\] and 'b' \[4, 8\] overlap/);
  });
  it('refuses to write what it cannot represent', () => {
    expect(() => saveSafetensors({ __metadata__: tensor([1]) })).toThrow(SafetensorsError);
    expect(() => saveSafetensors({ a: tensor([1]) }, { k: 3 as unknown as string })).toThrow(/metadata value for 'k' must be a string/);
  });
  it('reads a file whose tensor name is __proto__ as an ordinary key', () => {
    const t = loadSafetensors(file({ ['__proto__']: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, data8, '{"__proto__": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}'));
    expect(Object.keys(t)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(t)).toBe(Object.prototype);
  });
});
