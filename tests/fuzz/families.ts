// The load+run fuzzer's cases (issue 17): structure-aware families of hostile `.tsgraph` files
// and run inputs. Invariant: a case is a pure function of (seed, index, scale) — the family, the
// file's bytes and the inputs' recipe — so any case a campaign reports can be rebuilt alone with
// `npm run fuzz -- --seed S --from I --count 1`. `scale` (≥ 1) multiplies the sizes the
// size-scaled families draw from (chain length, nesting depth, loop matmul size, expand size).

import { encodeTsgraph, type Graph } from '@kiln/ir-spec';
import { assemble, disassemble, type Json } from '../fixtures/tsgraph-craft.js';
import { GRAPHS } from '../fixtures/tsgraph-graphs.js';
import { chainGraph, countedLoopGraph, endlessLoopGraph, fusedBodyGraph, hugeConvGraph, hugeExpandGraph, nestedIfGraph, oneOpGraph } from '../fixtures/untrusted-graphs.js';
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

/**
 * One op whose cost is not linear in its tensors, with sizes drawn log-uniformly (scaled): conv2d
 * (groups, one or several output channels per group, padding up to far past the image, strides
 * and dilations), conv_transpose2d with big strides and kernels, conv2d_weight_grad, max and
 * average pooling with huge windows and dilations, avg_pool2d_backward, matmul. Not always
 * valid: the caller draws again when the shape rule refuses.
 */
function slowKernel(r: Rand, scale: number): { op: string; shapes: number[][]; attrs: Record<string, unknown> } {
  const size = (lo: number, hi: number) => logSize(r, lo, Math.max(lo, Math.round(hi * scale)));
  const often1 = (hi: number) => (r.chance(0.6) ? 1 : size(1, hi));
  const pair = (f: () => number): [number, number] => { const a = f(); return [a, r.chance(0.7) ? a : f()]; };
  const N = r.chance(0.8) ? 1 : 1 + r.int(3), G = r.pick([1, 1, 1, 2, 3]), Cg = r.pick([1, 1, 2, 3]), Coutg = r.pick([1, 2, 4, 8]);
  const C = G * Cg, Cout = G * Coutg;
  const [H, W] = pair(() => size(1, 256)), [kh, kw] = pair(() => size(1, 256)), stride = pair(() => often1(64)), dilation = pair(() => often1(16));
  /** Padding that makes the window fit the image, plus some, split at random around it. */
  const pads = (): [number, number, number, number] => {
    const side = (n: number, k: number, d: number) => {
      const total = Math.max(0, d * (k - 1) + 1 - n) + (r.chance(0.5) ? 0 : size(1, 300));
      const before = r.int(total + 1);
      return [before, total - before];
    };
    const [t, b] = side(H, kh, dilation[0]), [l, rt] = side(W, kw, dilation[1]);
    return [t, l, b, rt];
  };
  const out = (n: number, k: number, s: number, p: number, d: number) => Math.floor((n + p - d * (k - 1) - 1) / s) + 1;
  switch (r.int(7)) {
    case 0: return { op: 'conv2d', shapes: [[N, C, H, W], [Cout, Cg, kh, kw]], attrs: { stride, padding: pads(), dilation, groups: G } };
    case 1: {
      const [h, w] = pair(() => size(1, 64));
      const padding = [r.int(kh), r.int(kw), r.int(kh), r.int(kw)], output_padding = [r.int(stride[0]), r.int(stride[1])];
      return { op: 'conv_transpose2d', shapes: [[N, C, h, w], [C, Coutg, kh, kw]], attrs: { stride, padding, dilation, groups: G, output_padding } };
    }
    case 2: {
      const padding = pads(), OH = out(H, kh, stride[0], padding[0] + padding[2], dilation[0]), OW = out(W, kw, stride[1], padding[1] + padding[3], dilation[1]);
      return { op: 'conv2d_weight_grad', shapes: [[N, C, H, W], [N, Cout, OH, OW]], attrs: { stride, padding, dilation, groups: G, kernel_size: [kh, kw] } };
    }
    case 3: {
      const [h, w] = pair(() => size(1, 512)), k = [Math.min(kh, h), Math.min(kw, w)];
      const padding = [r.int(Math.floor((dilation[0] * (k[0] - 1) + 1) / 2) + 1), r.int(Math.floor((dilation[1] * (k[1] - 1) + 1) / 2) + 1)];
      return { op: 'max_pool2d', shapes: [[N, C, h, w]], attrs: { kernel_size: k, stride, padding, dilation, ceil_mode: r.chance(0.3) } };
    }
    case 4: case 5: {
      const [h, w] = pair(() => size(1, 512)), k = [Math.min(kh, h), Math.min(kw, w)];
      const padding = [r.int(Math.floor(k[0] / 2) + 1), r.int(Math.floor(k[1] / 2) + 1)];
      const attrs = { kernel_size: k, stride, padding, ceil_mode: r.chance(0.3), count_include_pad: r.chance(0.5), divisor_override: r.chance(0.8) ? null : 1 + r.int(9) };
      if (r.chance(0.5)) return { op: 'avg_pool2d', shapes: [[N, C, h, w]], attrs };
      const OH = out(h, k[0], stride[0], 2 * padding[0], 1), OW = out(w, k[1], stride[1], 2 * padding[1], 1);
      return { op: 'avg_pool2d_backward', shapes: [[N, C, OH, OW]], attrs: { ...attrs, ceil_mode: false, input_size: [h, w] } };
    }
    default: {
      const [M, K, Nn] = [size(1, 4096), size(1, 4096), size(1, 4096)];
      return { op: 'matmul', shapes: [[M, K], [K, Nn]], attrs: {} };
    }
  }
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
  { // one conv whose multiply-adds grow as the fourth power of a size (all but one tap padding), in a file of ~1 kB
    name: 'huge-product', weight: 3,
    make(r, scale) {
      const s = logSize(r, 2, Math.round(4096 * scale));
      return { bytes: encodeTsgraph(hugeConvGraph(s)), what: `conv2d of one pixel padded by ${s - 1} with a ${s}x${s} kernel` };
    },
  },
  { // one kernel off the fast paths: huge kernels, windows, strides, dilations and padding
    name: 'slow-kernel', weight: 12,
    make(r, scale) {
      // Draws until the op's shape rule takes the shapes (a few tries at most).
      for (let tries = 0; ; tries++) {
        const k = slowKernel(r, scale);
        try {
          return { bytes: encodeTsgraph(oneOpGraph(k.op, k.shapes, k.attrs)), what: `${k.op} ${k.shapes.map((x) => `[${x.join(',')}]`).join(' ')} ${show(k.attrs)}` };
        } catch (e) {
          if (tries > 100) throw e;
        }
      }
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

/**
 * Case `index` of the campaign with seed `seed`; `only` restricts the draw to those families
 * (the cases are then those of a campaign over only them, not a subset of the full one's).
 */
export function makeCase(seed: number, index: number, scale = 1, only?: readonly string[]): FuzzCase {
  const unknown = only?.find((n) => !FAMILY_NAMES.includes(n));
  if (unknown !== undefined) throw new Error(`no fuzz family named ${unknown} (known: ${FAMILY_NAMES.join(', ')})`);
  const pool = only?.length ? FAMILIES.filter((f) => only.includes(f.name)) : FAMILIES;
  const r = rand((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
  let w = r.int(pool.reduce((a, f) => a + f.weight, 0));
  const fam = pool.find((f) => (w -= f.weight) < 0)!;
  const made = fam.make(r, scale);
  // Most files are run with plain inputs; a few with odd ones (odd-inputs makes only odd ones).
  const inputs = made.inputs ?? (r.chance(0.9) ? { kind: 'plain' } as const : { kind: 'nan' } as const);
  return { index, family: fam.name, what: made.what, bytes: made.bytes, inputs, inputSeed: r.int(2 ** 31) };
}
