// float16/bfloat16 as storage types (ir-spec/src/dtype.ts): exact round-to-nearest-even bit
// patterns against PyTorch 1.13 (tests/golden-kiln/half-bits.json, scripts/golden/half_bits.py:
// subnormals, overflow to inf, NaN, ties), the IR text form, and the .tsgraph tensor table
// (2 bytes per element, format 1.2; files without such tensors stay 1.1).

import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import {
  decodeTsgraph, encodeTsgraph, GraphBuilder, tensorType, typeToString, fromHalfBits, fromBFloat16Bits, toHalfBits, toBFloat16Bits, toBits16,
  roundToDType, roundInPlace, convertArray, promoteTypes, scalarDType, TsgraphError,
} from '@kiln/ir-spec';
import { parseTypeString } from '../ir-spec/src/tsgraph/type-string.js';

const GOLD = JSON.parse(readFileSync(new URL('./golden-kiln/half-bits.json', import.meta.url), 'utf8')) as {
  values: (number | string)[]; float16: number[]; bfloat16: number[];
};
const SPECIAL: Record<string, number> = { inf: Infinity, '-inf': -Infinity, nan: NaN };
const values = GOLD.values.map((v) => (typeof v === 'string' ? SPECIAL[v] : v));

describe('float16 / bfloat16 bits', () => {
  it('float16 rounding matches PyTorch bit for bit (ties to even, subnormals, overflow, NaN)', () => {
    values.forEach((v, i) => {
      if (Number.isNaN(v)) expect(Number.isNaN(fromHalfBits(toHalfBits(v))) && Number.isNaN(fromHalfBits(GOLD.float16[i]))).toBe(true);
      else expect([v, toHalfBits(v)]).toEqual([v, GOLD.float16[i]]);
    });
  });
  it('bfloat16 rounding matches PyTorch bit for bit', () => {
    // NaN payloads differ between PyTorch's scalar and vector paths (0x7fc0, 0xffff): any NaN is right.
    values.forEach((v, i) => {
      if (Number.isNaN(v)) expect(Number.isNaN(fromBFloat16Bits(toBFloat16Bits(v))) && Number.isNaN(fromBFloat16Bits(GOLD.bfloat16[i]))).toBe(true);
      else expect([v, toBFloat16Bits(v)]).toEqual([v, GOLD.bfloat16[i]]);
    });
  });
  it('every float16 pattern reads back to itself (all 65536, NaNs to a NaN)', () => {
    for (let h = 0; h < 65536; h++) {
      const v = fromHalfBits(h);
      if (Number.isNaN(v)) expect(Number.isNaN(fromHalfBits(toHalfBits(v)))).toBe(true);
      else expect(toHalfBits(v)).toBe(h);
    }
  });
  it('toBits16 (the bulk writer of files) gives toHalfBits\'s bits: every float16 value, and float32 patterns of every kind', () => {
    const values = new Float32Array(65536 + 200_000), u = new Uint32Array(values.buffer);
    for (let h = 0; h < 65536; h++) values[h] = fromHalfBits(h);
    let s = 12345;
    for (let i = 65536; i < values.length; i++) { s = (Math.imul(s, 1103515245) + 12345) >>> 0; u[i] = (s ^ (s << 7)) >>> 0; }
    values.set([65519.99, 65520, -65520, 2 ** -25, 3 * 2 ** -26, 2 ** -14 - 2 ** -25, 1e-10, -0, Infinity, -Infinity, NaN], 65536);
    const bits = toBits16(values, 'float16');
    for (let i = 0; i < values.length; i++) if (bits[i] !== toHalfBits(values[i])) expect([values[i], bits[i]]).toEqual([values[i], toHalfBits(values[i])]);
  });
  it('known values: max, smallest subnormal, bfloat16 as the top half of a float32', () => {
    expect(fromHalfBits(0x7bff)).toBe(65504);
    expect(fromHalfBits(0x0001)).toBe(2 ** -24);
    expect(fromBFloat16Bits(0x3f80)).toBe(1);
    expect(roundToDType(0.1, 'float16')).toBe(0.0999755859375);
    expect(roundToDType(0.1, 'bfloat16')).toBe(0.10009765625);
    expect(Array.from(convertArray([1 / 3, 70000], 'float16'))).toEqual([0.333251953125, Infinity]);
  });
  it('promotion: float16 with float32 is float32, float16 with bfloat16 is float32, a float scalar keeps float16', () => {
    expect(promoteTypes('float16', 'float32')).toBe('float32');
    expect(promoteTypes('float16', 'bfloat16')).toBe('float32');
    expect(promoteTypes('int32', 'bfloat16')).toBe('bfloat16');
    expect(scalarDType(2.5, 'float16')).toBe('float16');
  });
});

describe('float16 in the IR and the .tsgraph file', () => {
  it('types print as f16[...] / bf16[...] and parse back', () => {
    for (const t of [tensorType('float16', ['N', 3]), tensorType('bfloat16', [2])]) expect(parseTypeString(typeToString(t))).toEqual(t);
    expect(typeToString(tensorType('float16', [2, 3]))).toBe('f16[2,3]');
  });

  function halfGraph(dtype: 'float16' | 'bfloat16') {
    const b = new GraphBuilder('half');
    const x = b.input('x', tensorType('float32', [2, 3]));
    const data = convertArray([0.1, -2, 65504, 1e-7, 3.3, -0], dtype) as Float32Array;
    const w16 = b.constant('w', { dtype, shape: [2, 3], data });
    const w = b.op1('cast', [w16], { dtype: 'float32' });
    b.output('y', b.op1('add', [x, w]));
    return { g: b.build(), data };
  }

  for (const dtype of ['float16', 'bfloat16'] as const) {
    it(`stores ${dtype} weights in 2 bytes each and reads back the same values (format 1.2)`, () => {
      const { g, data } = halfGraph(dtype);
      const bytes = encodeTsgraph(g);
      expect([bytes[8] | (bytes[9] << 8), bytes[10] | (bytes[11] << 8)]).toEqual([1, 2]);
      const back = decodeTsgraph(bytes);
      const t = back.header.tensors.find((e) => e.name === 'w')!;
      expect([t.dtype, t.length]).toEqual([dtype, 12]);
      const w = back.graph.tensors.get('w')!;
      expect(w.dtype).toBe(dtype);
      expect(Array.from(w.data)).toEqual(Array.from(data));
    });
  }

  it('a 1.1 file that names a float16 tensor is refused with a typed error', () => {
    const { g } = halfGraph('float16');
    const bytes = encodeTsgraph(g);
    bytes[10] = 1; // minor 2 → 1, in the prefix and in the header (same length)
    const text = new TextDecoder().decode(bytes);
    const at = text.indexOf('"minor":2');
    bytes[at + 8] = '1'.charCodeAt(0);
    expect(() => decodeTsgraph(bytes, { verifyChecksum: false })).toThrowError(TsgraphError);
    expect(() => decodeTsgraph(bytes, { verifyChecksum: false })).toThrowError(/float16, which format 1.1 cannot hold/);
  });
});

describe('bulk rounding (roundInPlace) equals the scalar conversion', () => {
  it('float16 and bfloat16 over golden values and 200000 random float32s of every magnitude', () => {
    const xs = new Float32Array(200_000 + values.length);
    xs.set(values, 0);
    const u = new Uint32Array(xs.buffer);
    let s = 12345;
    for (let i = values.length; i < xs.length; i++) { s = (Math.imul(s, 1103515245) + 12345) >>> 0; u[i] = (s ^ (s << 7)) >>> 0; }
    for (const dtype of ['float16', 'bfloat16'] as const) {
      const a = xs.slice();
      roundInPlace(a, dtype);
      for (let i = 0; i < xs.length; i++) {
        const want = roundToDType(xs[i], dtype);
        if (!(Object.is(a[i], want) || (Number.isNaN(a[i]) && Number.isNaN(want)))) expect.fail(`${dtype}: ${xs[i]} → ${a[i]}, want ${want}`);
      }
    }
  });
});
