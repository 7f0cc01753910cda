// Mutations of `.tsgraph` files for the fuzzers (tsgraph-fuzz.test.ts decodes them; the load+run
// fuzzer, campaign.ts, also loads and runs them): bit flips in the prefix, header and blob;
// truncations; appended bytes; JSON edits — numbers changed, keys deleted, types swapped,
// huge/negative/NaN shapes, wrong dtypes, unknown or swapped ops, forged ids — and forged header
// lengths, tensor offsets and lengths. Invariant: a mutation depends only on the Rand it is
// given and the base bytes, so a seed reproduces a case exactly.

import { assemble, deleteAt, disassemble, getAt, setAt, type Json } from '../fixtures/tsgraph-craft.js';
import { rng } from '../helpers/rng.js';

export interface Rand {
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
}

export function rand(seed: number): Rand {
  const r = rng(seed);
  return {
    int: (n) => Math.floor(r() * n),
    pick: (xs) => xs[Math.floor(r() * xs.length)],
    chance: (p) => r() < p,
  };
}

/** Every path in a JSON tree, as key arrays (the root excluded). */
function paths(root: Json): (string | number)[][] {
  const out: (string | number)[][] = [];
  const walk = (v: Json, path: (string | number)[]) => {
    if (Array.isArray(v)) v.forEach((e, i) => { out.push([...path, i]); walk(e, [...path, i]); });
    else if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) { out.push([...path, k]); walk(v[k], [...path, k]); }
  };
  walk(root, []);
  return out;
}

const NUMBERS: readonly number[] = [0, 1, -1, 2, 3, 63, 64, 65, -64, 0.5, -0, 1e9, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 1e300, -1e300, 4096];
const STRINGS: readonly string[] = ['', 'x', 'N', 'f32', 'f32[N]', 'f32[1e9,1e9]', 'f32[-1]', 'i32', 'bool[2]', 'tuple<>', 'list<f32[2]>',
  'float32', 'int32', 'bool', 'float64', 'input', 'param', '__proto__', 'constructor', '$num', 'f32[N*N*N*N*N*N*N*N*N*N*N*N]', 'f32[(((((N)))))]',
  'N*4503599627370496', 'f32[N*4503599627370496,2]', 'f32[N*9007199254740991]', 'f32[-N]', 'f32[N-1]', 'f32[N[1::1]]'];
const OPS: readonly string[] = ['frobnicate', 'conv3d', '', 'constructor', 'toString', '__proto__', 'relu', 'sigmoid', 'add', 'matmul',
  'loop', 'if', 'tuple', 'tuple_get', 'constant', 'scalar', 'scalar_op', 'dim', 'item', 'reshape', 'cat', 'max_pool2d'];

export function randomJson(r: Rand, depth = 0): Json {
  switch (r.int(depth > 2 ? 4 : 7)) {
    case 0: return r.pick(NUMBERS);
    case 1: return r.pick(STRINGS);
    case 2: return r.chance(0.5);
    case 3: return null;
    case 4: return [];
    case 5: return Array.from({ length: r.int(4) }, () => randomJson(r, depth + 1));
    default: return Object.fromEntries(Array.from({ length: r.int(3) }, (_, i) => [r.pick(['id', 'type', 'op', 'x', `k${i}`]), randomJson(r, depth + 1)]));
  }
}

/** One JSON edit of the header; returns a description. */
function editJson(r: Rand, h: Json): string {
  const all = paths(h);
  const path = r.pick(all);
  const old = getAt(h, path);
  const where = path.join('.');
  const kind = r.int(14);
  switch (kind) {
    case 0: setAt(h, path, r.pick(NUMBERS)); return `number ${where}`;
    case 1: if (typeof old === 'number') { setAt(h, path, old + r.pick([1, -1, 64, -64, 4, 1e9])); return `nudge ${where}`; } break;
    case 2: deleteAt(h, path); return `delete ${where}`;
    case 3: setAt(h, path, randomJson(r)); return `swap type ${where}`;
    case 4: setAt(h, path, r.pick(STRINGS)); return `string ${where}`;
    case 5: {
      const ts = getAt(h, 'tensors');
      if (Array.isArray(ts) && ts.length) {
        const i = r.int(ts.length);
        const shape = r.pick<Json>([[1e9, 1e9], [2 ** 53, 2 ** 53], [0], [], Array(40).fill(1), [-1, 4], [0.5], [2 ** 31, 2 ** 31, 0], [1, 1, 1, 1e6]]);
        setAt(h, ['tensors', i, 'shape'], shape);
        return `shape tensors.${i}`;
      }
      break;
    }
    case 6: {
      const ts = getAt(h, 'tensors');
      if (Array.isArray(ts) && ts.length) {
        const i = r.int(ts.length);
        setAt(h, ['tensors', i, 'dtype'], r.pick(['float32', 'int32', 'bool', 'float64', 'f32', 7]));
        return `dtype tensors.${i}`;
      }
      break;
    }
    case 7: {
      const ts = getAt(h, 'tensors');
      if (Array.isArray(ts) && ts.length) {
        const i = r.int(ts.length);
        const field = r.pick(['offset', 'length']);
        const other = getAt(h, ['tensors', r.int(ts.length), 'offset']) ?? 0; // often an overlap
        setAt(h, ['tensors', i, field], r.pick([0, 64, 128, 64 * r.int(200), r.int(100000), -64, 2 ** 53 - 1, 2 ** 40, 1.5, other, other]));
        return `forge tensors.${i}.${field}`;
      }
      break;
    }
    case 8: {
      const ops = all.filter((p) => p[p.length - 1] === 'op');
      if (ops.length) { const p = r.pick(ops); setAt(h, p, r.pick(OPS)); return `op ${p.join('.')}`; }
      break;
    }
    case 9: {
      const ids = all.filter((p) => { const last = p[p.length - 1], up = p[p.length - 2]; return last === 'id' || up === 'inputs' || up === 'yields'; });
      if (ids.length) { const p = r.pick(ids); setAt(h, p, r.pick([0, 1, 2, 3, 5, 8, 13, 999, -1, null])); return `id ${p.join('.')}`; }
      break;
    }
    case 10: {
      const types = all.filter((p) => p[p.length - 1] === 'type');
      if (types.length) {
        const p = r.pick(types);
        const t = getAt(h, p);
        const s = typeof t === 'string' ? t : 'f32[1]';
        const edits = [s.replace(/\d+/, String(r.int(20))), s.replace('N', 'M'), s.replace('f32', r.pick(['i32', 'bool'])), `tuple<${s}>`, s.replace(']', ',1]'),
          s.replace('N', r.pick(['N*4503599627370496', 'N*2', '2*N', 'N+1', 'N[1::1]', '-N', 'N-N']))];
        setAt(h, p, r.pick(edits));
        return `type ${p.join('.')}`;
      }
      break;
    }
    case 11: {
      const attrs = all.filter((p) => p[p.length - 2] === 'attrs');
      if (attrs.length) { const p = r.pick(attrs); setAt(h, p, r.chance(0.5) ? randomJson(r) : r.pick<Json>([{ $num: 'NaN' }, { $num: '-Infinity' }, { $num: 'bad' }, -1, 0, 1e9, [1e9, 1e9]])); return `attr ${p.join('.')}`; }
      break;
    }
    case 12: if (Array.isArray(old) && old.length) { old.push(old[r.int(old.length)]); return `duplicate in ${where}`; } break;
    default: {
      const deep: Json = JSON.parse(`${'['.repeat(300)}0${']'.repeat(300)}`) as Json;
      setAt(h, path, deep);
      return `deep nesting at ${where}`;
    }
  }
  deleteAt(h, path);
  return `delete ${where}`;
}

/** Replaces a random JSON token of the header text with one JSON lacks or mistypes. */
function editText(r: Rand, text: string): { text: string; what: string } {
  const at = r.int(text.length);
  const m = /-?\d+(\.\d+)?/.exec(text.slice(at));
  if (!m) return { text: `${text.slice(0, at)}NaN${text.slice(at)}`, what: 'NaN token' };
  const start = at + m.index;
  const token = r.pick(['NaN', '-Infinity', '1e999', '-1e999', '00', '0x10', '"7"', '-0', '1.5e3', '18446744073709551616']);
  return { text: `${text.slice(0, start)}${token}${text.slice(start + m[0].length)}`, what: `token ${token} at ${start}` };
}

/** One mutation of a base file; returns the bytes and a description. */
export function mutate(r: Rand, base: Uint8Array): { bytes: Uint8Array; what: string } {
  const parts = disassemble(base);
  const headerLen = new TextEncoder().encode(parts.header).length;
  const kind = r.int(12);
  switch (kind) {
    case 0: case 1: { // bit flips: prefix, header or blob
      const out = base.slice();
      const n = 1 + r.int(4);
      const region = r.pick(['prefix', 'header', 'blob', 'any'] as const);
      const blobStart = base.length - parts.blob.length;
      const [lo, hi] = region === 'prefix' ? [0, 24] : region === 'header' ? [24, 24 + headerLen] : region === 'blob' ? [blobStart, base.length] : [0, base.length];
      if (hi <= lo) return { bytes: out, what: `no ${region} to flip` };
      for (let i = 0; i < n; i++) out[lo + r.int(hi - lo)] ^= 1 << r.int(8);
      return { bytes: out, what: `${n} bit flip(s) in the ${region}` };
    }
    case 2: { // truncation
      const at = r.int(base.length);
      return { bytes: base.slice(0, at), what: `truncated at ${at}` };
    }
    case 3: { // appended or inserted bytes
      const extra = Uint8Array.from({ length: 1 + r.int(200) }, () => r.int(256));
      if (r.chance(0.5)) {
        const out = new Uint8Array(base.length + extra.length);
        out.set(base); out.set(extra, base.length);
        return { bytes: out, what: `${extra.length} bytes appended` };
      }
      const at = r.int(base.length);
      const out = new Uint8Array(base.length + extra.length);
      out.set(base.subarray(0, at)); out.set(extra, at); out.set(base.subarray(at), at + extra.length);
      return { bytes: out, what: `${extra.length} bytes inserted at ${at}` };
    }
    case 4: { // forged header length
      const forged = r.pick([0n, 1n, BigInt(headerLen - 1), BigInt(headerLen + 1), BigInt(headerLen + 64), BigInt(base.length), BigInt(base.length * 2),
        BigInt(64 * 1024 * 1024), BigInt(64 * 1024 * 1024 + 1), 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n, BigInt(r.int(base.length))]);
      const out = base.slice();
      new DataView(out.buffer).setBigUint64(16, forged, true);
      return { bytes: out, what: `header length forged to ${forged}` };
    }
    case 5: { // version and flags
      const out = base.slice();
      const view = new DataView(out.buffer);
      const field = r.int(3);
      if (field === 0) view.setUint16(8, r.pick([0, 2, 255, 65535]), true);
      else if (field === 1) view.setUint16(10, r.pick([1, 9, 65535]), true);
      else view.setUint32(12, r.pick([1, 0x80000000, 0xffffffff]), true);
      return { bytes: out, what: `version/flags field ${field}` };
    }
    case 6: { // JSON text token edits (invalid numbers, NaN, ...)
      const { text, what } = editText(r, parts.header);
      return { bytes: assemble({ ...parts, header: text }), what };
    }
    case 8: { // a symbolic dim renamed consistently everywhere: overflowing, negative, constant
      const syms = ['N', 'B', 'T'].filter((x) => parts.header.includes(`[${x}`));
      if (!syms.length) return { bytes: base, what: 'no symbol to rename' };
      const sym = r.pick(syms);
      const to = r.pick(['N*4503599627370496', 'N*9007199254740991', 'N*N*N*N', '2*N', 'N*2', 'N+1', 'N-1', '-N', 'M', 'N[1::1]', '0', '3']);
      const text = parts.header.replace(new RegExp(`(?<=[\\[,"])${sym}(?=[\\],"*])`, 'g'), to);
      return { bytes: assemble({ ...parts, header: text }), what: `symbol ${sym} renamed to ${to}` };
    }
    case 7: { // forged tensor offsets and lengths (overlaps, out of range, misaligned)
      const h = JSON.parse(parts.header) as { tensors: { offset: number; length: number }[] };
      if (!h.tensors.length) return { bytes: base, what: 'no tensor to forge' };
      const a = r.int(h.tensors.length), b = r.int(h.tensors.length);
      const t = h.tensors[a];
      const choice = r.int(5);
      if (choice === 0) t.offset = h.tensors[b].offset;
      else if (choice === 1) t.offset = h.tensors[b].offset + 64 * r.int(3);
      else if (choice === 2) t.offset = r.pick([parts.blob.length, parts.blob.length + 64, 2 ** 53 - 64, t.offset + 1]);
      else if (choice === 3) t.length = r.pick([0, t.length - 1, t.length + 1, t.length * 2, parts.blob.length]);
      else [t.offset, h.tensors[b].offset] = [h.tensors[b].offset, t.offset];
      return { bytes: assemble({ ...parts, header: JSON.stringify(h) }), what: `tensor table forge ${choice} of tensors ${a}, ${b}` };
    }
    default: { // 1-3 structured JSON edits, header length kept consistent
      const h = JSON.parse(parts.header) as Json;
      const n = 1 + r.int(3);
      const whats: string[] = [];
      for (let i = 0; i < n; i++) {
        // An earlier edit may have removed the container a later one aims at: that edit is skipped.
        try { whats.push(editJson(r, h)); } catch (e) { whats.push(`edit skipped (${e instanceof Error ? e.message : String(e)})`); }
      }
      return { bytes: assemble({ ...parts, header: JSON.stringify(h) }), what: whats.join('; ') };
    }
  }
}
