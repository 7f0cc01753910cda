// Structural ops: the IR's own vocabulary beside the op registry — constants, scalars,
// tuples, shape queries and the two control-flow ops. ONE entry per op (like the registry's
// defineOp) holds its typing rule and what the verifier checks (strict attribute schema,
// region count and names, optional inputs) and whether it has effects; the runtime executes
// these by name.
//
//   constant {name}            → the tensor `name` of the graph's tensor table
//   constant {value, dtype}    → a 0-d tensor literal (how eager scalars like `x * 2` appear)
//   scalar {value, dtype}      → a scalar literal (`i32`, `f32`, `bool`)
//   scalar_op {fn}             → scalar arithmetic/logic (fn in SCALAR_FNS)
//   dim {index}                → `x.shape[index]` as an i32 scalar (symbolic dims stay symbolic)
//   item                       → the value of a one-element tensor as a scalar
//   tuple / tuple_get {index}  → build / project a tuple
//   if                         → (cond) regions [then, else] with no args, each yielding the results
//   loop                       → (maxTrips?, cond?, ...init) region [body(i, ...carried)] yielding
//                                (continue, ...carried); results are the final carried values
//   to_tensor {dtype}          → a run-time scalar as a 0-d tensor (a number operand of a tensor op)
//   host_call {name, types}    → calls the host function `name` (a @jit.ignore method) with the
//                                inputs; results typed by `types`. Has effects; never saved.
//   raise {message, types}     → fails the run with `message` when reached (a @jit.unused call);
//                                `types` type the results the call site expects. Has effects.

import * as z from 'zod';
import { OpError, type Dim } from '../shape.js';
import { DTYPES as DTYPE_NAMES, type DType } from '../dtype.js';
import { scalarType, tensorType, tupleType, typeEquals, typeToString, type IRType } from './types.js';
import type { Attrs, Block, Node, TensorData } from './graph.js';
import { parseTypeString } from '../tsgraph/type-string.js';
import { isRandomOp } from '../op-def.js';

export const SCALAR_FNS = ['add', 'sub', 'mul', 'div', 'floordiv', 'mod', 'min', 'max', 'pow',
  'lt', 'le', 'gt', 'ge', 'eq', 'ne', 'and', 'or', 'not', 'neg'] as const;
export type ScalarFn = typeof SCALAR_FNS[number];
const COMPARE = new Set<string>(['lt', 'le', 'gt', 'ge', 'eq', 'ne', 'and', 'or', 'not']);

export interface BuiltinContext {
  /** The graph's tensor table (for `constant {name}`). */
  tensors: ReadonlyMap<string, TensorData>;
}

export interface BuiltinDef {
  readonly name: string;
  readonly doc: string;
  /** Strict schema of the node's attributes; the verifier requires stored attrs equal to the parsed ones. */
  readonly attrs: z.ZodType;
  /** Exact number of regions. */
  readonly regions: number;
  /** Names of the regions, for messages. */
  readonly regionNames?: readonly string[];
  /** Input positions that may be `null` (omitted). */
  readonly optional?: readonly number[];
  /** An effect besides the results (a host call, a failure): passes keep the node, in order. */
  readonly effects?: boolean;
  /** Result types from input types and attrs (regions are checked by the verifier). */
  infer(inputs: readonly (IRType | null)[], attrs: Attrs, ctx: BuiltinContext, regions: readonly Block[]): IRType[];
}

const DTYPES: Record<string, DType> = { float32: 'float32', float16: 'float16', bfloat16: 'bfloat16', int32: 'int32', bool: 'bool', int8: 'int8' };

// Attribute schemas the entries share.
const dtype = z.enum(DTYPE_NAMES as [DType, ...DType[]]);
// Any number, inf and NaN included (z.number() refuses them; a mask literal may be -inf).
const anyNumber = z.custom<number>((v) => typeof v === 'number', { message: 'expected a number' });
const literal = z.object({ value: z.union([anyNumber, z.boolean()]), dtype }).strict()
  .refine((a) => a.dtype !== 'int32' || typeof a.value === 'boolean' || Number.isInteger(a.value), { message: 'an int32 literal needs an integer value' })
  .refine((a) => a.dtype !== 'bool' || typeof a.value === 'boolean' || a.value === 0 || a.value === 1, { message: 'a bool literal needs true, false, 0 or 1' });
const none = z.object({}).strict();
const index = z.object({ index: z.number().int() }).strict();

function dtypeAttr(op: string, attrs: Attrs): DType {
  // Only a string can name a dtype: String() of a file's object ({"toString": 1}) would throw.
  const name = attrs.dtype;
  const d = typeof name === 'string' && Object.hasOwn(DTYPES, name) ? DTYPES[name] : undefined;
  if (!d) throw new OpError(op, `attribute dtype must be float32, float16, bfloat16, int32 or bool, got ${JSON.stringify(attrs.dtype)}`);
  return d;
}

function arity(op: string, inputs: readonly unknown[], n: number): void {
  if (inputs.length !== n) throw new OpError(op, `expects ${n} input(s), got ${inputs.length}`);
}

function intAttr(op: string, attrs: Attrs, key: string): number {
  const v = attrs[key];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new OpError(op, `attribute ${key} must be an integer, got ${JSON.stringify(v)}`);
  return v;
}

const defs: BuiltinDef[] = [
  {
    name: 'constant', doc: 'a tensor from the tensor table, or a 0-d literal',
    attrs: z.union([z.object({ name: z.string().min(1) }).strict(), literal]), regions: 0,
    infer(inputs, attrs, ctx) {
      arity('constant', inputs, 0);
      if (typeof attrs.name === 'string') {
        const t = ctx.tensors.get(attrs.name);
        if (!t) throw new OpError('constant', `no tensor named '${attrs.name}' in the graph's tensor table`);
        return [tensorType(t.dtype, t.shape)];
      }
      if (typeof attrs.value !== 'number' && typeof attrs.value !== 'boolean') throw new OpError('constant', 'needs attribute name (tensor table) or value (literal)');
      return [tensorType(dtypeAttr('constant', attrs), [])];
    },
  },
  {
    name: 'scalar', doc: 'a scalar literal',
    attrs: literal, regions: 0,
    infer(inputs, attrs) {
      arity('scalar', inputs, 0);
      if (typeof attrs.value !== 'number' && typeof attrs.value !== 'boolean') throw new OpError('scalar', `attribute value must be a number or boolean, got ${JSON.stringify(attrs.value)}`);
      return [scalarType(dtypeAttr('scalar', attrs))];
    },
  },
  {
    name: 'scalar_op', doc: 'scalar arithmetic and logic',
    attrs: z.object({ fn: z.enum(SCALAR_FNS) }).strict(), regions: 0,
    infer(inputs, attrs) {
      const fn = attrs.fn;
      if (typeof fn !== 'string' || !(SCALAR_FNS as readonly string[]).includes(fn)) throw new OpError('scalar_op', `unknown fn ${JSON.stringify(fn)} (expected one of ${SCALAR_FNS.join(', ')})`);
      arity('scalar_op', inputs, fn === 'not' || fn === 'neg' ? 1 : 2);
      const ts = inputs.map((t, i) => {
        if (!t || t.kind !== 'scalar') throw new OpError('scalar_op', `input ${i} must be a scalar, got ${t ? typeToString(t) : 'none'}`);
        return t.dtype;
      });
      if (COMPARE.has(fn)) return [scalarType('bool')];
      if (fn === 'div') return [scalarType('float32')];
      return [scalarType(ts.includes('float32') ? 'float32' : 'int32')];
    },
  },
  {
    name: 'dim', doc: 'one dimension of a tensor shape as an i32 scalar',
    attrs: index, regions: 0,
    infer(inputs, attrs) {
      arity('dim', inputs, 1);
      const t = inputs[0];
      if (!t || t.kind !== 'tensor') throw new OpError('dim', 'input must be a tensor');
      const i = intAttr('dim', attrs, 'index');
      if (i < 0 || i >= t.shape.length) throw new OpError('dim', `index ${i} out of range for ${typeToString(t)}`);
      return [scalarType('int32')];
    },
  },
  {
    name: 'item', doc: 'the value of a one-element tensor as a scalar',
    attrs: none, regions: 0,
    infer(inputs) {
      arity('item', inputs, 1);
      const t = inputs[0];
      if (!t || t.kind !== 'tensor') throw new OpError('item', 'input must be a tensor');
      if (t.shape.some((d: Dim) => d !== 1)) throw new OpError('item', `input must have one element, got ${typeToString(t)}`);
      return [scalarType(t.dtype)];
    },
  },
  {
    name: 'tuple', doc: 'builds a tuple',
    attrs: none, regions: 0,
    infer(inputs) {
      return [tupleType(inputs.map((t, i) => {
        if (!t) throw new OpError('tuple', `element ${i} is missing`);
        return t;
      }))];
    },
  },
  {
    name: 'tuple_get', doc: 'element `index` of a tuple',
    attrs: index, regions: 0,
    infer(inputs, attrs) {
      arity('tuple_get', inputs, 1);
      const t = inputs[0];
      if (!t || t.kind !== 'tuple') throw new OpError('tuple_get', 'input must be a tuple');
      const i = intAttr('tuple_get', attrs, 'index');
      if (i < 0 || i >= t.elements.length) throw new OpError('tuple_get', `index ${i} out of range for ${typeToString(t)}`);
      return [t.elements[i]];
    },
  },
  {
    name: 'if', doc: 'runs the then or else region on a bool condition',
    attrs: none, regions: 2, regionNames: ['then', 'else'],
    infer(inputs, _attrs, _ctx, regions) {
      arity('if', inputs, 1);
      const c = inputs[0];
      const ok = c && ((c.kind === 'scalar' && c.dtype === 'bool') || (c.kind === 'tensor' && c.dtype === 'bool' && c.shape.every((d) => d === 1)));
      if (!ok) throw new OpError('if', `condition must be a bool scalar or one-element bool tensor, got ${c ? typeToString(c) : 'none'}`);
      if (regions.length !== 2) throw new OpError('if', `needs then and else regions, got ${regions.length}`);
      const [then, els] = regions;
      if (then.args.length || els.args.length) throw new OpError('if', 'regions take no arguments');
      if (then.yields.length !== els.yields.length) throw new OpError('if', `then yields ${then.yields.length} values, else yields ${els.yields.length}`);
      return then.yields.map((v, i) => {
        const e = els.yields[i];
        if (!typeEquals(v.type, e.type)) throw new OpError('if', `result ${i}: then yields ${typeToString(v.type)}, else yields ${typeToString(e.type)}`);
        return v.type;
      });
    },
  },
  {
    name: 'loop', doc: 'repeats its body while trips remain and the condition holds',
    attrs: none, regions: 1, regionNames: ['body'], optional: [0, 1],
    infer(inputs, _attrs, _ctx, regions) {
      if (inputs.length < 2) throw new OpError('loop', 'expects (maxTrips, cond, ...carried) inputs');
      const [trips, cond, ...init] = inputs;
      if (trips && !(trips.kind === 'scalar' && trips.dtype === 'int32')) throw new OpError('loop', `maxTrips must be an i32 scalar, got ${typeToString(trips)}`);
      if (cond && !(cond.kind === 'scalar' && cond.dtype === 'bool')) throw new OpError('loop', `cond must be a bool scalar, got ${typeToString(cond)}`);
      if (!trips && !cond) throw new OpError('loop', 'needs maxTrips, cond, or both (otherwise it never ends)');
      if (regions.length !== 1) throw new OpError('loop', `needs one body region, got ${regions.length}`);
      const body = regions[0];
      if (body.args.length !== init.length + 1) throw new OpError('loop', `body takes (i, ...carried): expected ${init.length + 1} args, got ${body.args.length}`);
      const i0 = body.args[0].type;
      if (!(i0.kind === 'scalar' && i0.dtype === 'int32')) throw new OpError('loop', `first body argument (the trip index) must be i32, got ${typeToString(i0)}`);
      if (body.yields.length !== init.length + 1) throw new OpError('loop', `body must yield (continue, ...carried): expected ${init.length + 1} values, got ${body.yields.length}`);
      const c = body.yields[0].type;
      if (!(c.kind === 'scalar' && c.dtype === 'bool')) throw new OpError('loop', `body's first yield (continue) must be a bool scalar, got ${typeToString(c)}`);
      return init.map((t, i) => {
        if (!t) throw new OpError('loop', `carried value ${i} is missing`);
        const arg = body.args[i + 1].type, out = body.yields[i + 1].type;
        if (!typeEquals(t, arg) || !typeEquals(t, out)) {
          throw new OpError('loop', `carried value ${i}: initial ${typeToString(t)}, body argument ${typeToString(arg)}, yielded ${typeToString(out)} must all agree`);
        }
        return t;
      });
    },
  },
];

/** The `types` attribute of host_call/raise: the results' types in text form. */
function typesAttr(op: string, attrs: Attrs): IRType[] {
  const ts = attrs.types;
  if (!Array.isArray(ts)) throw new OpError(op, `attribute types must be a list of type strings such as ["f32[N,4]", "i32"], got ${JSON.stringify(ts)}`);
  return ts.map((t, i) => {
    if (typeof t !== 'string') throw new OpError(op, `types[${i}] must be a type string, got ${JSON.stringify(t)}`);
    try {
      return parseTypeString(t);
    } catch (e) {
      throw new OpError(op, `types[${i}] '${t}' is not a type: ${(e as Error).message}`);
    }
  });
}

defs.push(
  {
    name: 'to_tensor', doc: 'a run-time scalar as a 0-d tensor of `dtype`',
    attrs: z.object({ dtype }).strict(), regions: 0,
    infer(inputs, attrs) {
      arity('to_tensor', inputs, 1);
      const t = inputs[0];
      if (!t || t.kind !== 'scalar') throw new OpError('to_tensor', `input must be a scalar, got ${t ? typeToString(t) : 'none'}`);
      return [tensorType(dtypeAttr('to_tensor', attrs), [])];
    },
  },
  {
    name: 'host_call', doc: 'calls back into the host (a @jit.ignore method); results typed by `types`',
    attrs: z.object({ name: z.string().min(1), types: z.array(z.string()) }).strict(), regions: 0, effects: true,
    infer(inputs, attrs) {
      if (typeof attrs.name !== 'string' || !attrs.name) throw new OpError('host_call', `attribute name must name the host function, got ${JSON.stringify(attrs.name)}`);
      inputs.forEach((t, i) => {
        if (!t || (t.kind !== 'tensor' && t.kind !== 'scalar')) throw new OpError('host_call', `input ${i} must be a tensor or a scalar, got ${t ? typeToString(t) : 'none'}`);
      });
      return typesAttr('host_call', attrs);
    },
  },
  {
    name: 'raise', doc: 'fails the run with `message` when reached; results typed by `types`',
    attrs: z.object({ message: z.string().min(1), types: z.array(z.string()) }).strict(), regions: 0, effects: true,
    infer(inputs, attrs) {
      arity('raise', inputs, 0);
      if (typeof attrs.message !== 'string' || !attrs.message) throw new OpError('raise', `attribute message must be a non-empty string, got ${JSON.stringify(attrs.message)}`);
      return typesAttr('raise', attrs);
    },
  },
);

/** Structural ops with an effect besides their results (entries marked `effects`): passes must keep them, in order. */
export const EFFECT_OPS: ReadonlySet<string> = new Set(defs.filter((d) => d.effects).map((d) => d.name));

/**
 * Whether op `op` has an effect besides its results: a structural effect op, or a registry op
 * marked `random` (each run draws from the generator, advancing it). Passes must keep such a
 * node, unmerged, unfolded, in order.
 */
export function isEffectOp(op: string): boolean {
  return EFFECT_OPS.has(op) || isRandomOp(op);
}

/** Whether `n` has an effect (is an effect op, or owns a region that holds one). */
export function hasEffects(n: Node): boolean {
  return isEffectOp(n.op) || n.regions.some((r) => r.nodes.some(hasEffects));
}

const builtins = new Map<string, BuiltinDef>();
for (const d of defs) {
  if (builtins.has(d.name)) throw new Error(`structural op ${d.name} is defined twice`);
  builtins.set(d.name, d);
}

export function getBuiltin(name: string): BuiltinDef | undefined { return builtins.get(name); }
export function isBuiltin(name: string): boolean { return builtins.has(name); }
export function allBuiltins(): BuiltinDef[] { return [...defs]; }
