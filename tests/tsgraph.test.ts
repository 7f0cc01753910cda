// The `.tsgraph` container (ir-spec/SPEC.md §13): round trips of hand-built graphs,
// determinism, the byte layout, the committed fixture files (a file written by an earlier build
// reads back identically), and one crafted file per error code.
//
// The fixtures are regenerated with `npm run test:update -- tests/tsgraph.test.ts` (one switch for
// every golden file, tests/helpers/golden.ts); review the diff like code: a changed fixture means
// older files may no longer read the same.

import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  decodeTsgraph, encodeTsgraph, readTsgraphHeader, Graph, GraphBuilder, tensorType, typeToString, TsgraphError, TSGRAPH_ERROR_CODES,
  DEFAULT_PRODUCER, MAX_HEADER_BYTES, type TsgraphErrorCode,
} from '@kiln/ir-spec';
import { parseTypeString } from '../ir-spec/src/tsgraph/type-string.js';
import { canonicalJson, decodeAttrs, encodeAttrs } from '../ir-spec/src/tsgraph/json.js';
import { buildUnchecked } from './setup/ir-roundtrip.js';
import { expectGoldenFile } from './helpers/golden.js';
import { GRAPHS, cnnGraph, dumpGraph, loopGraph, weights } from './fixtures/tsgraph-graphs.js';
import { assemble, deleteAt, disassemble, editHeader, getAt, setAt, withChecksum, type Json } from './fixtures/tsgraph-craft.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

function refused(bytes: Uint8Array): TsgraphError {
  try {
    decodeTsgraph(bytes);
  } catch (e) {
    if (e instanceof TsgraphError) return e;
    throw e;
  }
  throw new Error('the file was accepted');
}

const codesSeen = new Set<TsgraphErrorCode>();

function expectCode(bytes: Uint8Array, code: TsgraphErrorCode, ...fragments: (string | RegExp)[]): TsgraphError {
  const e = refused(bytes);
  codesSeen.add(e.code);
  expect(e.code, e.message).toBe(code);
  expect(e.message.startsWith(`${code}: `)).toBe(true);
  for (const f of fragments) expect(e.message).toMatch(f);
  return e;
}

describe('.tsgraph round trip', () => {
  for (const [name, build] of Object.entries(GRAPHS)) {
    it(`${name}: decode(encode(g)) has the same structure, types, attrs, names and tensor bytes`, () => {
      const g = build();
      const { graph } = decodeTsgraph(encodeTsgraph(g));
      expect(dumpGraph(graph)).toBe(dumpGraph(g));
      for (const [k, t] of g.tensors) {
        const back = graph.tensors.get(k)!;
        expect(back.data.constructor).toBe(t.data.constructor);
        expect(new Uint8Array(back.data.buffer, back.data.byteOffset, back.data.byteLength))
          .toEqual(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      }
    });

    it(`${name}: deterministic — two builds encode to identical bytes, and encode(decode(bytes)) === bytes`, () => {
      const a = encodeTsgraph(build());
      const b = encodeTsgraph(build());
      expect(b).toEqual(a);
      expect(encodeTsgraph(decodeTsgraph(a).graph)).toEqual(a);
    });
  }

  it('keeps -0 attributes exactly', () => {
    const nodes = [...decodeTsgraph(encodeTsgraph(cnnGraph())).graph.body.nodes];
    const literals = nodes.filter((n) => n.op === 'constant' && 'value' in n.attrs).map((n) => n.attrs.value);
    expect(literals.some((v) => Object.is(v, -0))).toBe(true);
  });

  it('escapes the numbers JSON lacks (NaN, ±Infinity, -0) in attributes, and reads them back', () => {
    const attrs = { a: -Infinity, b: [NaN, Infinity, -0, 0, 1.5], c: { d: -0 }, e: 'x', f: null, g: true };
    const json = encodeAttrs(attrs, 'attrs');
    expect(canonicalJson(json)).toBe('{"a":{"$num":"-Infinity"},"b":[{"$num":"NaN"},{"$num":"Infinity"},{"$num":"-0"},0,1.5],"c":{"d":{"$num":"-0"}},"e":"x","f":null,"g":true}');
    const back = decodeAttrs(JSON.parse(canonicalJson(json)) as Record<string, unknown>, 'attrs');
    expect(back.a).toBe(-Infinity);
    expect(Object.is((back.b as number[])[2], -0)).toBe(true);
    expect(Number.isNaN((back.b as number[])[0])).toBe(true);
    expect(back).toEqual(attrs);
    expect(() => decodeAttrs({ a: { $num: 'NaN', x: 1 } }, 'attrs')).toThrow(/\$num/);
    expect(() => decodeAttrs({ a: { $num: 'nan' } }, 'attrs')).toThrow(/\$num/);
    expect(() => decodeAttrs({ a: { $other: 1 } }, 'attrs')).toThrow(/\$num/);
  });

  it('does not depend on the insertion order of metadata or of the tensor table', () => {
    const g = cnnGraph();
    const reversed = new Graph(g.name, g.inputs, g.body, g.outputs, new Map([...g.tensors].reverse()),
      Object.fromEntries(Object.entries(g.metadata).reverse()));
    expect([...reversed.tensors.keys()]).not.toEqual([...g.tensors.keys()]);
    expect(encodeTsgraph(reversed)).toEqual(encodeTsgraph(g));
  });

  it('carries producer and kernels through, and readTsgraphHeader reads them without the graph', () => {
    const kernels = [{ key: 'relu_f32_256', wgsl: '@compute @workgroup_size(64) fn main() {}', workgroup: [64, 1, 1] }];
    const bytes = encodeTsgraph(loopGraph(), { producer: { name: 'kiln-test', version: '9.9.9' }, kernels });
    const { header, blobOffset } = readTsgraphHeader(bytes);
    expect(header.producer).toEqual({ name: 'kiln-test', version: '9.9.9' });
    expect(header.kernels).toEqual(kernels);
    expect(header.plan).toBeNull();
    expect(blobOffset % 64).toBe(0);
    const back = decodeTsgraph(bytes);
    expect(encodeTsgraph(back.graph, { producer: back.header.producer, kernels: back.header.kernels })).toEqual(bytes);
  });

  it('reads from a Node Buffer at any byte offset, and the graph does not alias the caller\'s bytes', () => {
    const bytes = encodeTsgraph(cnnGraph());
    const odd = Buffer.concat([Buffer.alloc(3), Buffer.from(bytes)]).subarray(3);
    const { graph } = decodeTsgraph(odd);
    expect(dumpGraph(graph)).toBe(dumpGraph(cnnGraph()));
    const w = graph.tensors.get('features.0.weight')!;
    odd.fill(0);
    expect(w.data[0]).toBe(weights([1], 1).data[0]);
  });

  it('the default producer version is ir-spec\'s package version', () => {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../ir-spec/package.json', import.meta.url)), 'utf8')) as { name: string; version: string };
    expect(DEFAULT_PRODUCER).toEqual({ name: pkg.name, version: pkg.version });
  });
});

describe('.tsgraph layout', () => {
  const bytes = encodeTsgraph(cnnGraph());
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts = disassemble(bytes);
  const header = JSON.parse(parts.header) as { tensors: { name: string; offset: number; length: number }[]; inputs: unknown; outputs: unknown };

  it('has the magic, version 1.1, zero flags and the header length', () => {
    expect(new TextDecoder().decode(bytes.subarray(0, 8))).toBe('KILNGRPH');
    expect([view.getUint16(8, true), view.getUint16(10, true), view.getUint32(12, true)]).toEqual([1, 1, 0]);
    expect(Number(view.getBigUint64(16, true))).toBe(new TextEncoder().encode(parts.header).length);
    expect(assemble(parts)).toEqual(bytes);
  });

  it('writes canonical JSON (sorted keys, no whitespace) and zero padding up to a 64-byte blob start', () => {
    const h = JSON.parse(parts.header) as Record<string, unknown>;
    expect(Object.keys(h)).toEqual(['checksum', 'format', 'graph', 'inputs', 'kernels', 'metadata', 'outputs', 'plan', 'producer', 'tensors']);
    expect(parts.header).not.toMatch(/\n|": /);
    const len = Number(view.getBigUint64(16, true));
    const blobStart = Math.ceil((24 + len) / 64) * 64;
    expect(bytes.subarray(24 + len, blobStart).every((b) => b === 0)).toBe(true);
    expect(bytes.length % 64).toBe(0);
  });

  it('sorts the tensor table by name and aligns every tensor to 64 bytes, without overlap', () => {
    const names = header.tensors.map((t) => t.name);
    expect(names).toEqual([...names].sort());
    let end = 0;
    for (const t of header.tensors) {
      expect(t.offset % 64).toBe(0);
      expect(t.offset).toBeGreaterThanOrEqual(end);
      end = t.offset + t.length;
    }
  });

  it('stores tensors as raw little-endian data', () => {
    const t = header.tensors.find((e) => e.name === 'classifier.ids')!;
    const raw = new DataView(parts.blob.buffer, parts.blob.byteOffset + t.offset, t.length);
    expect(raw.getInt32(0, true)).toBe(9);
    expect(raw.getInt32(36, true)).toBe(-2147483648);
    const w = header.tensors.find((e) => e.name === 'features.0.weight')!;
    expect(new DataView(parts.blob.buffer, parts.blob.byteOffset + w.offset, 4).getFloat32(0, true)).toBe(weights([1], 1).data[0]);
  });

  it('lists the run-time inputs and the outputs with their types', () => {
    expect(header.inputs).toEqual([{ name: 'x', type: 'f32[N,3,8,8]' }]);
    expect(header.outputs).toEqual([{ name: 'logits', type: 'f32[N,10]' }, { name: 'indices', type: 'i32[N,4,4,4]' }, { name: 'other', type: 'f32[N,10]' }]);
  });
});

describe('.tsgraph fixtures (files written by an earlier build)', () => {
  for (const [name, build] of Object.entries(GRAPHS)) {
    const path = `${FIXTURES}${name}.tsgraph`;
    it(`${name}.tsgraph reads back identically and this build writes the same bytes`, () => {
      const now = encodeTsgraph(build());
      expectGoldenFile(path, now, { what: 'the encoder output changed (bump the format version when old readers are affected)' });
      const stored = new Uint8Array(readFileSync(path));
      expect(dumpGraph(decodeTsgraph(stored).graph)).toBe(dumpGraph(build()));
    });
  }
});

describe('.tsgraph type strings', () => {
  const good = ['f32[N,3,32,32]', 'i32', 'bool', 'f32[]', 'bool[0]', 'tuple<f32[2], i32>', 'tuple<>', 'list<f32[N,4]>',
    'tuple<tuple<i32, list<bool[B]>>, f32[N*64,T*2]>', 'f32[N[1::1],3]', 'f32[N[:-1:2],H*2+1]', 'f32[9007199254740991]'];
  for (const text of good) {
    it(`reads ${text} back to the same text`, () => {
      expect(typeToString(parseTypeString(text))).toBe(text);
    });
  }
  it('reads concrete dims as numbers and symbols as strings', () => {
    expect(parseTypeString('f32[N,3]')).toEqual({ kind: 'tensor', dtype: 'float32', shape: ['N', 3] });
  });
  const bad = ['', 'f64[2]', 'f32[2', 'f32[-1]', 'f32[1.5]', 'f32[2]x', 'tuple<f32', 'f32[9007199254740993]', 'f32[N]]', 'f32[2*3]', 'f32[N/2]', 'constructor',
    'f32[N[1]', `${'list<'.repeat(40)}i32${'>'.repeat(40)}`, `f32[${Array(40).fill(1).join(',')}]`];
  for (const text of bad) {
    it(`refuses ${JSON.stringify(text.slice(0, 30))}`, () => {
      expect(() => parseTypeString(text)).toThrow(/type '.*' at character \d+/);
    });
  }
});

describe('.tsgraph refusals: one crafted file per code', () => {
  const good = encodeTsgraph(cnnGraph());
  const loop = encodeTsgraph(loopGraph());

  it('names every code in TSGRAPH_ERROR_CODES', () => {
    expect([...TSGRAPH_ERROR_CODES].sort()).toEqual(['BAD_JSON', 'BAD_MAGIC', 'CHECKSUM_MISMATCH', 'HEADER_TOO_LARGE', 'OFFSET_OUT_OF_RANGE', 'OVERLAP',
      'SCHEMA', 'SIZE_MISMATCH', 'TRUNCATED', 'UNKNOWN_OP', 'UNSUPPORTED_VERSION', 'VERIFY']);
  });

  it('BAD_MAGIC: another file type, with the bytes it found', () => {
    expectCode(new TextEncoder().encode('{"__metadata__": {}}'), 'BAD_MAGIC', /7b 22 5f 5f/, /KILNGRPH/, /jit\.save/);
    const zip = good.slice();
    zip.set([0x50, 0x4b, 3, 4]);
    expectCode(zip, 'BAD_MAGIC');
  });

  it('TRUNCATED: cut inside the magic, the prefix, the header, the padding', () => {
    expectCode(new Uint8Array(0), 'TRUNCATED');
    expectCode(good.slice(0, 5), 'TRUNCATED', /5 bytes/);
    expectCode(good.slice(0, 20), 'TRUNCATED', /24-byte prefix/);
    expectCode(good.slice(0, 200), 'TRUNCATED', /header/);
    const len = Number(new DataView(loop.buffer).getBigUint64(16, true));
    if ((24 + len) % 64 !== 0) expectCode(loop.slice(0, 24 + len), 'TRUNCATED', /padding/);
  });

  it('UNSUPPORTED_VERSION: a newer major says which version the file has and which this reader supports', () => {
    const e = expectCode(assemble({ ...disassemble(good), major: 2, minor: 3 }), 'UNSUPPORTED_VERSION', /version 2\.3/, /supports version 1\./, /upgrade Kiln/);
    expect(e.message).not.toMatch(/SCHEMA/);
    expectCode(assemble({ ...disassemble(good), major: 0 }), 'UNSUPPORTED_VERSION', /version 0\.1/);
    expectCode(assemble({ ...disassemble(good), flags: 4 }), 'UNSUPPORTED_VERSION', /flags 0x4/);
  });

  it('a newer minor version with unknown fields is read (minor versions only add what old readers may skip)', () => {
    const newer = editHeader(good, (h) => {
      setAt(h, 'format.minor', 7);
      setAt(h, 'future', { anything: [1, 2] });
      setAt(h, 'graph.nodes.0.future', true);
      setAt(h, 'plan', { buffers: [] });
    });
    const p = disassemble(newer);
    const { graph } = decodeTsgraph(assemble({ ...p, minor: 7 }));
    expect(dumpGraph(graph)).toBe(dumpGraph(cnnGraph()));
    // The same unknown fields in a 1.0 file are refused: a reader never silently drops what it should know.
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.0.future', true)), 'SCHEMA', /graph\.nodes\[0\]/);
  });

  it('HEADER_TOO_LARGE: a forged header length above the cap', () => {
    expectCode(assemble({ ...disassemble(good), headerLength: 2n ** 40n }), 'HEADER_TOO_LARGE', /1099511627776/, new RegExp(String(MAX_HEADER_BYTES)));
    expectCode(assemble({ ...disassemble(good), headerLength: 2n ** 64n - 1n }), 'HEADER_TOO_LARGE');
  });

  it('BAD_JSON: invalid UTF-8 or text that is not JSON', () => {
    const p = disassemble(good);
    const raw = new TextEncoder().encode(p.header);
    raw[10] = 0xff;
    expectCode(assemble(p, raw), 'BAD_JSON', /UTF-8/);
    expectCode(assemble({ ...p, header: p.header.slice(0, -1) }), 'BAD_JSON', /not valid JSON/);
    expectCode(assemble({ ...p, header: '' }), 'BAD_JSON');
  });

  it('SCHEMA: names the header path of the first bad field', () => {
    expectCode(editHeader(good, (h) => deleteAt(h, 'graph.nodes.3.op')), 'SCHEMA', /graph\.nodes\[3\]\.op/);
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.0.outputs.0.type', 'f32[N,4,8')), 'SCHEMA', /graph\.nodes\[0\]\.outputs\[0\]\.type/);
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.0.dtype', 'float64')), 'SCHEMA', /tensors\[0\]\.dtype/);
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.1.shape.0', -4)), 'SCHEMA', /tensors\[1\]\.shape\[0\]/);
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.1.offset', 65)), 'SCHEMA', /tensors\[1\]\.offset/);
    expectCode(editHeader(good, (h) => setAt(h, 'graph.inputs', 'x')), 'SCHEMA', /graph\.inputs/);
    expectCode(editHeader(good, (h) => setAt(h, 'plan', {})), 'SCHEMA', /plan/);
    expectCode(editHeader(good, (h) => {
      const ts = getAt(h, 'tensors') as Json[];
      ts.reverse();
    }), 'SCHEMA', /sorted/);
    expectCode(editHeader(good, (h) => setAt(h, 'format.major', 2)), 'SCHEMA', /prefix says 1\.1/);
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.0.attrs.stride', { $num: 'big' })), 'SCHEMA', /\$num/);
    const p = disassemble(good);
    expectCode(assemble({ ...p, header: `{"__proto__": {}, ${p.header.slice(1)}` }), 'SCHEMA', /__proto__/);
    expectCode(assemble({ ...p, header: `${'['.repeat(5000)}${']'.repeat(5000)}` }), 'SCHEMA', /deeper than/);
  });

  it('SCHEMA: bool tensor bytes other than 0 and 1', () => {
    const p = disassemble(good);
    const h = JSON.parse(p.header) as { tensors: { name: string; offset: number }[] };
    const mask = h.tensors.find((t) => t.name === 'classifier.mask')!;
    const blob = p.blob.slice();
    blob[mask.offset + 2] = 2;
    // With the checksum updated to match (else CHECKSUM_MISMATCH comes first), the value check still refuses it.
    expectCode(withChecksum({ ...p, blob }), 'SCHEMA', /classifier\.mask/, /element 2/);
  });

  it('CHECKSUM_MISMATCH: one flipped bit in a weight, named with both checksums and the way out', () => {
    const p = disassemble(good);
    const blob = p.blob.slice();
    blob[5] ^= 0x10;
    expectCode(assemble({ ...p, blob }), 'CHECKSUM_MISMATCH', /xxh32 checksum [0-9a-f]{8} but the header records [0-9a-f]{8}/, /copy the file again/, /verifyChecksum: false/);
  });

  it('OFFSET_OUT_OF_RANGE: a tensor past the end of the blob', () => {
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.0.offset', 64 * 1000)), 'OFFSET_OUT_OF_RANGE', /past the end/);
    expectCode(good.slice(0, good.length - 64), 'OFFSET_OUT_OF_RANGE');
  });

  it('OVERLAP: two tensors sharing bytes', () => {
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.1.offset', getAt(h, 'tensors.0.offset') ?? 0)), 'OVERLAP', /overlap/);
  });

  it('SIZE_MISMATCH: a length that disagrees with the shape, and huge shapes', () => {
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.0.length', 12)), 'SIZE_MISMATCH', /needs 40 bytes/);
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.0.shape', [1e9, 1e9])), 'SIZE_MISMATCH', /more bytes than the whole/);
    expectCode(editHeader(good, (h) => setAt(h, 'tensors.0.shape', Array(32).fill(9007199254740991))), 'SIZE_MISMATCH');
  });

  it('UNKNOWN_OP: names the op and the node', () => {
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.2.op', 'frobnicate')), 'UNKNOWN_OP', /'frobnicate'/, /graph\.nodes\[2\]/, /upgrade Kiln/);
    expectCode(editHeader(loop, (h) => setAt(h, 'graph.nodes.2.regions.0.nodes.0.op', 'warp')), 'UNKNOWN_OP', /regions\[0\]\.nodes\[0\]/);
  });

  it('VERIFY: types that disagree with the op, SSA violations, params and signatures', () => {
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.0.outputs.0.type', 'f32[N,5,8,8]')), 'VERIFY', /declared f32\[N,5,8,8\] but the op gives f32\[N,4,8,8\]/);
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.0.inputs.0', 999)), 'VERIFY', /%999/, /not defined before it/);
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.0.inputs', [getAt(h, 'graph.nodes.0.outputs.0.id') ?? 0])), 'VERIFY');
    expectCode(editHeader(good, (h) => setAt(h, 'graph.nodes.0.attrs.groups', 3)), 'VERIFY', /conv2d/);
    expectCode(editHeader(good, (h) => setAt(h, 'graph.inputs.1.type', 'f32[4,3,3,2]')), 'VERIFY', /param/);
    expectCode(editHeader(good, (h) => setAt(h, 'inputs.0.name', 'y')), 'VERIFY', /header field inputs\[0\]/);
    expectCode(editHeader(good, (h) => setAt(h, 'graph.outputs.1.id', getAt(h, 'graph.outputs.0.id') ?? 0)), 'VERIFY', /outputs\[1\]/);
    // Problems only the IR verifier sees (here: a dim not in canonical form, everywhere consistent).
    const b = new GraphBuilder('neg');
    b.output('y', b.op1('neg', [b.input('x', tensorType('float32', ['N', 2]))]));
    expectCode(editHeader(encodeTsgraph(b.build()), (h) => {
      for (const path of ['graph.inputs.0.type', 'graph.nodes.0.outputs.0.type', 'inputs.0.type', 'outputs.0.type']) setAt(h, path, 'f32[1*N,2]');
    }), 'VERIFY', /verification/, /1\*N/);
    // Types whose shape arithmetic overflows (symbolic coefficients beyond 2^53).
    const r = new GraphBuilder('r');
    r.output('y', r.op1('reshape', [r.input('x', tensorType('float32', ['N', 2]))], { shape: ['N', 2] }));
    expectCode(editHeader(encodeTsgraph(r.build()), (h) => {
      for (const path of ['graph.inputs.0.type', 'inputs.0.type']) setAt(h, path, 'f32[N*4503599627370496,2]');
      setAt(h, 'graph.nodes.0.attrs.shape', ['N*4503599627370496', 2]);
    }), 'VERIFY', /reshape/, /overflow/);
    // A loop body's values are not visible after the loop.
    expectCode(editHeader(loop, (h) => {
      const inner = getAt(h, 'graph.nodes.2.regions.0.nodes.0.outputs.0.id');
      setAt(h, 'graph.outputs.0.id', inner ?? 0);
    }), 'VERIFY', /not visible here/);
  });

  it('triggered every code (this test runs last in the block)', () => {
    expect([...codesSeen].sort()).toEqual([...TSGRAPH_ERROR_CODES].sort());
  });
});

describe('encodeTsgraph refusals', () => {
  it('refuses tensors whose data disagrees with their shape or dtype', () => {
    const b = new GraphBuilder('bad');
    b.param('w', { dtype: 'float32', shape: [2, 2], data: new Float32Array(3) });
    expect(() => encodeTsgraph(buildUnchecked(() => b.build()))).toThrow(expect.objectContaining({ code: 'SIZE_MISMATCH' }));
    const c = new GraphBuilder('bad');
    c.param('w', { dtype: 'int32', shape: [2], data: new Float32Array(2) });
    expect(() => encodeTsgraph(buildUnchecked(() => c.build()))).toThrow(/Int32Array/);
  });

  it('refuses graphs the verifier rejects, so every written file reads back', () => {
    const b = new GraphBuilder('bad');
    const x = b.input('x', tensorType('float32', [2]));
    b.output('y', b.op1('scalar', [], { value: 1, dtype: 'int32', extra: 2 }));
    b.output('x', x);
    expect(() => encodeTsgraph(buildUnchecked(() => b.build()))).toThrow(expect.objectContaining({ code: 'VERIFY', message: expect.stringMatching(/encodeTsgraph: the graph fails verification/) }));
  });

  it('refuses attribute keys reserved by the format, non-JSON values and kernels that are not objects', () => {
    expect(() => encodeAttrs({ o: { $num: 'NaN' } }, 'attrs')).toThrow(/attrs\.o\.\$num: .*reserved/);
    expect(() => canonicalJson({ a: 1n })).toThrow(/bigint/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/deeper than/);
    expect(() => encodeTsgraph(loopGraph(), { kernels: ['wgsl'] })).toThrow(/kernels\[0\]/);
    expect(() => encodeTsgraph(loopGraph(), { kernels: [{ key: 'k', f: () => 1 }] })).toThrow(/kernels\[0\]\.f: a function/);
  });
});
