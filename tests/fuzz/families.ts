// The load+run fuzzer's cases (issue 17): structure-aware families of hostile `.tsgraph` files
// and run inputs. Invariant: a case is a pure function of (seed, index, scale) — the family, the
// file's bytes and the inputs' recipe — so any case a campaign reports can be rebuilt alone with
// `npm run fuzz -- --seed S --from I --count 1`. `scale` (≥ 1) multiplies the sizes the
// size-scaled families draw from (chain length, nesting depth, loop matmul size, expand size).

import { encodeTsgraph, type Graph } from '@kiln/ir-spec';
import { assemble, disassemble, type Json } from '../fixtures/tsgraph-craft.js';
import { GRAPHS } from '../fixtures/tsgraph-graphs.js';
import { chainGraph, countedLoopGraph, endlessLoopGraph, fusedBodyGraph, hugeExpandGraph, nestedIfGraph } from '../fixtures/untrusted-graphs.js';
import { mutate, rand, randomJson, type Rand } from './mutate.js';

/** How run inputs are made once the file has loaded (inputs.ts reads the model's input types). */
export type InputRecipe =
  | { kind: 'plain' }
  | { kind: 'nan' } // NaN and infinities in float data
  | { kind: 'strings' } // a string inside a plain data array
  | { kind: 'batch0' } // every symbolic dim 0
  | { kind: 'dtype'; dtype: unknown } // a dtype field of 'constructor', an object, a number...
  | { kind: 'shape'; shape: unknown } // a broken shape field
  | { kind: 'scalar'; value: unknown }; // odd scalar inputs (negative/huge trip counts, NaN)

export interface FuzzCase {
  readonly index: number;
  readonly family: string;
  readonly what: string;
  readonly bytes: Uint8Array;
  readonly inputs: InputRecipe;
  /** Seed of the input data. */
  readonly inputSeed: number;
}

/** Prototype members and keys that a plain-object lookup would find. */
const PROTO_NAMES = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', 'isPrototypeOf', '__defineGetter__', 'prototype'];
const PROTO_VALUES: readonly Json[] = [{ toString: 1 }, { valueOf: 1 }, { toString: 1, valueOf: 1 }, { constructor: {} }, JSON.parse('{"__proto__": {"x": 1}}') as Json,
  ...PROTO_NAMES, [{ toString: 1 }], { $num: 'constructor' }, { $num: '__proto__' }];

const bases = new Map<string, Uint8Array>();
/** Encoded once per process: the hand-built fixture graphs. */
function base(name: string, build: () => Graph): Uint8Array {
  let b = bases.get(name);
  if (!b) { b = encodeTsgraph(build()); bases.set(name, b); }
  return b;
}
const FIXTURES = Object.entries(GRAPHS);
function fixture(r: Rand): { name: string; bytes: Uint8Array } {
  const [name, build] = r.pick(FIXTURES);
  return { name, bytes: base(name, build) };
}

/** Every object in a JSON tree, with its path. */
function objects(v: Json, out: { [k: string]: Json }[] = []): { [k: string]: Json }[] {
  if (Array.isArray(v)) for (const e of v) objects(e, out);
  else if (v !== null && typeof v === 'object') { out.push(v); for (const k of Object.keys(v)) objects(v[k], out); }
  return out;
}

function editHeader(bytes: Uint8Array, edit: (h: Json) => string): { bytes: Uint8Array; what: string } {
  const parts = disassemble(bytes);
  const h = JSON.parse(parts.header) as Json;
  const what = edit(h);
  return { bytes: assemble({ ...parts, header: JSON.stringify(h) }), what };
}

/** A value in a case description, whatever it is (String() of `{toString: 1}` throws). */
function show(v: unknown): string {
  return typeof v === 'number' ? String(v) : JSON.stringify(v) ?? typeof v;
}

/** A size drawn log-uniformly from [lo, hi]. */
function logSize(r: Rand, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, Math.round(Math.exp(Math.log(lo) + (Math.log(hi) - Math.log(lo)) * r.int(1_000_001) / 1_000_000))));
}

interface Family {
  readonly name: string;
  /** Relative frequency in a campaign. */
  readonly weight: number;
  make(r: Rand, scale: number): { bytes: Uint8Array; what: string; inputs?: InputRecipe };
}

const FAMILIES: readonly Family[] = [
  { // the decoder fuzzer's mutations: raw bytes, truncation, forged lengths and offsets, JSON edits
    name: 'mutation', weight: 30,
    make(r) { const f = fixture(r); const m = mutate(r, f.bytes); return { bytes: m.bytes, what: `${f.name}: ${m.what}` }; },
  },
  { // attributes, op names, dtypes, metadata and input names from Object.prototype
    name: 'proto-keys', weight: 15,
    make(r) {
      const f = r.chance(0.3) ? { name: 'chain', bytes: base('chain8', () => chainGraph(8)) } : fixture(r);
      return editHeader(f.bytes, (h) => {
        const objs = objects(h);
        const whats: string[] = [];
        for (let k = 1 + r.int(3); k > 0; k--) {
          const o = r.pick(objs);
          const keys = Object.keys(o);
          const choice = r.int(5);
          if (choice === 0 && 'attrs' in o && o.attrs && typeof o.attrs === 'object' && !Array.isArray(o.attrs)) {
            const attrs = o.attrs as { [k: string]: Json };
            const key = Object.keys(attrs).length && r.chance(0.6) ? r.pick(Object.keys(attrs)) : r.pick(PROTO_NAMES);
            attrs[key] = r.pick(PROTO_VALUES);
            whats.push(`attr ${key}`);
          } else if (choice === 1 && 'op' in o) {
            o.op = r.pick(PROTO_NAMES); whats.push(`op ${String(o.op)}`);
          } else if (choice === 2 && keys.length) {
            const key = r.pick(keys);
            o[key] = r.pick(PROTO_VALUES); whats.push(`field ${key}`);
          } else if (choice === 3) {
            const key = r.pick(PROTO_NAMES);
            o[key] = r.chance(0.5) ? r.pick(PROTO_VALUES) : randomJson(r); whats.push(`extra key ${key}`);
          } else {
            const withType = objs.filter((x) => typeof x.type === 'string' || typeof x.dtype === 'string');
            if (withType.length) {
              const x = r.pick(withType);
              if (typeof x.dtype === 'string') x.dtype = r.pick(PROTO_NAMES);
              else x.type = r.pick([`${r.pick(PROTO_NAMES)}[2]`, `f32[${r.pick(PROTO_NAMES)}]`, `tuple<${r.pick(PROTO_NAMES)}>`]);
              whats.push('type/dtype');
            }
          }
        }
        return `${f.name}: ${whats.join('; ') || 'no edit'}`;
      });
    },
  },
  { // loop(true) { matmul }: only the time limit ends it
    name: 'endless-loop', weight: 3,
    make(r, scale) {
      const n = logSize(r, 4, Math.round(64 * scale));
      return { bytes: encodeTsgraph(endlessLoopGraph(n)), what: `loop(true) { matmul ${n}x${n} }` };
    },
  },
  { // expands far past the tensor and live-bytes limits, in a file of ~1 kB
    name: 'huge-expand', weight: 8,
    make(r, scale) {
      const elements = logSize(r, 1024, Math.min(2 ** 40, Math.round(2 ** 32 * scale)));
      const count = 1 + r.int(6);
      return { bytes: encodeTsgraph(hugeExpandGraph(elements, count)), what: `${count} expand(s) to ${elements} elements` };
    },
  },
  { // long chains: the loader must stay linear
    name: 'long-chain', weight: 5,
    make(r, scale) {
      const n = logSize(r, 10, Math.round(2000 * scale));
      return { bytes: encodeTsgraph(chainGraph(n)), what: `${n} relu nodes` };
    },
  },
  { // nested regions: deep but within the JSON depth limit, or edited past it
    name: 'deep-nesting', weight: 5,
    make(r, scale) {
      const depth = logSize(r, 1, Math.round(60 * Math.min(scale, 1.5)));
      let bytes: Uint8Array;
      try { bytes = encodeTsgraph(nestedIfGraph(depth)); } catch { bytes = encodeTsgraph(nestedIfGraph(20)); }
      if (r.chance(0.3)) {
        const deeper = 100 + r.int(2000);
        return editHeader(bytes, (h) => {
          const objs = objects(h).filter((o) => Array.isArray(o.regions));
          const o = objs.length ? r.pick(objs) : (h as { [k: string]: Json });
          o.regions = JSON.parse(`${'['.repeat(deeper)}${']'.repeat(deeper)}`) as Json;
          return `${depth} nested ifs, one region replaced by ${deeper}-deep arrays`;
        });
      }
      return { bytes, what: `${depth} nested ifs`, inputs: { kind: 'plain' } };
    },
  },
  { // fused_elementwise element bodies: valid, or one region edit the reader must refuse or survive
    name: 'fused-body', weight: 8,
    make(r, scale) {
      const n = logSize(r, 1, Math.round(40 * scale));
      const bytes = encodeTsgraph(fusedBodyGraph(n));
      if (r.chance(0.15)) return { bytes, what: `fused body of ${n + 2} ops`, inputs: { kind: 'plain' } };
      return editHeader(bytes, (h) => {
        const graph = (h as { [k: string]: Json }).graph as { [k: string]: Json };
        const fused = (graph.nodes as { [k: string]: Json }[]).find((o) => o.op === 'fused_elementwise')!;
        const body = (fused.regions as { [k: string]: Json }[])[0];
        const nodes = body.nodes as { [k: string]: Json }[];
        const args = body.args as { [k: string]: Json }[];
        const node = r.pick(nodes);
        const outer = ((graph.inputs as { [k: string]: Json }[])[0]).id;
        switch (r.int(10)) {
          case 0: node.op = r.pick(['clamp', 'conv2d', 'fused_elementwise', 'loop', 'if', 'uniform', 'host_call', 'eq', 'where', ...PROTO_NAMES]); return `body node op ${show(node.op)}`;
          case 1: { const ins = node.inputs as Json[]; if (ins.length) ins[r.int(ins.length)] = outer; else node.inputs = [outer]; return 'a body node reads an outer value'; }
          case 2: body.yields = r.pick<Json>([[], [args[0].id, args[0].id], [outer], [9999], [{ toString: 1 }]]); return `yields ${show(body.yields)}`;
          case 3: r.pick(args).type = r.pick(['f32[2]', 'i32[]', 'f32[N]', 'bool[]', 'f32', 'tuple<f32[]>']); return 'a body argument type';
          case 4: if (r.chance(0.5)) args.pop(); else args.push({ id: 9000, type: 'f32[]' }); return `${args.length} body arguments`;
          case 5: node.regions = [{ args: [], nodes: [], yields: [] }]; return 'a body node with a region';
          case 6: { // the legacy attribute, well formed or not, instead of (or beside) the region
            fused.attrs = { program: r.pick<Json>([[['relu', 'x0']], [['add', 'x0', 'x1'], ['exp', 't0']], [['relu', 'x5']], [['add', 't0', 'x0']], [], [['erfc', 'x0']], 'relu', [[{ toString: 1 }, 'x0']], [['neg', 1e308]]]) };
            if (r.chance(0.7)) delete fused.regions;
            return `program ${show(fused.attrs.program)}${fused.regions ? ' beside the region' : ''}`;
          }
          case 7: { const lit = nodes.find((o) => o.op === 'constant'); if (lit) lit.attrs = r.pick<Json>([{ dtype: 'int32', value: 2 }, { name: 'x' }, { dtype: 'float32', value: { $num: 'NaN' } }, { dtype: 'bool', value: true }]); return `body literal ${show(lit?.attrs)}`; }
          case 8: fused.regions = r.pick<Json>([[], [body, body], [{ args, nodes: [], yields: [] }]]); return `${(fused.regions as Json[]).length} regions`;
          default: { const ins = node.inputs as Json[]; if (ins.length) ins.push(ins[0]); else ins.push(args[0].id); return 'a body node with an extra input'; }
        }
      });
    },
  },
  { // valid files, odd run inputs
    name: 'odd-inputs', weight: 14,
    make(r) {
      const pickBase = r.int(3);
      const f = pickBase === 0 ? { name: 'counted', bytes: base('counted', countedLoopGraph) } : pickBase === 1 ? { name: 'chain', bytes: base('chain8', () => chainGraph(8)) } : fixture(r);
      const recipes: InputRecipe[] = [
        { kind: 'nan' }, { kind: 'strings' }, { kind: 'batch0' },
        { kind: 'dtype', dtype: r.pick<unknown>([...PROTO_NAMES, { toString: 1 }, 7, null, 'f64', 'i32', 'bool']) },
        { kind: 'shape', shape: r.pick<unknown>([[-1], [1e9, 1e9], [2 ** 53], [0.5], 'N', null, [NaN], Array(40).fill(1), [{ toString: 1 }]]) },
        { kind: 'scalar', value: r.pick<unknown>([-5, -1, 0, 2 ** 31 - 1, -(2 ** 31), NaN, Infinity, 1.5, '3', true, null, { valueOf: 3 }]) },
      ];
      const inputs = r.pick(recipes);
      const odd = 'dtype' in inputs ? inputs.dtype : 'shape' in inputs ? inputs.shape : 'value' in inputs ? inputs.value : undefined;
      return { bytes: f.bytes, what: `${f.name} with ${inputs.kind} inputs${odd === undefined ? '' : ` ${show(odd)}`}`, inputs };
    },
  },
];

export const FAMILY_NAMES: readonly string[] = FAMILIES.map((f) => f.name);
const TOTAL = FAMILIES.reduce((a, f) => a + f.weight, 0);

/** Case `index` of the campaign with seed `seed`. */
export function makeCase(seed: number, index: number, scale = 1): FuzzCase {
  const r = rand((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
  let w = r.int(TOTAL);
  const fam = FAMILIES.find((f) => (w -= f.weight) < 0)!;
  const made = fam.make(r, scale);
  // Most files are run with plain inputs; a few with odd ones (odd-inputs makes only odd ones).
  const inputs = made.inputs ?? (r.chance(0.9) ? { kind: 'plain' } as const : { kind: 'nan' } as const);
  return { index, family: fam.name, what: made.what, bytes: made.bytes, inputs, inputSeed: r.int(2 ** 31) };
}
