// ONNX op → Kiln: ONE entry per ONNX op type, each turning one node into Kiln ops through the
// graph builder (or folding it while importing, when its inputs are constants: the shape
// arithmetic PyTorch's exporter writes). Ops Kiln has no primitive for are written as their
// decomposition (Softmax, LayerNormalization, ReduceMean, Pad, Flatten; LSTM in import-lstm.ts).
// Invariant: an entry computes what ONNX specifies for the inputs it accepts, and throws an
// OnnxImportError naming the node for the attributes or inputs it does not support.

import { broadcastShapes, dimProductOf, type DType, type Dim, type GraphBuilder, type TensorIRType, type Value } from '@kiln/ir-spec';
import type { AttributeProto, GraphProto, NodeProto, TensorProto } from './proto.js';
import { constVal, dimBinary, kilnDtype, numbers, numel, OnnxImportError, runVal, tensorData, type ConstVal, type IVal } from './import-values.js';

export interface ImportContext {
  readonly b: GraphBuilder;
  readonly opset: number;
  /** `node 'name' (OpType, opset N)` for messages. */
  readonly where: string;
  /** The value as a Kiln run-time value (constants become literals or stored tensors). */
  value(v: IVal): Value;
  /** Imports a subgraph's nodes into the current block with its inputs bound; returns its outputs. */
  subgraph(g: GraphProto, inputs: readonly IVal[]): IVal[];
}

/** A node's attributes by name, read with defaults. */
export class Attrs {
  private readonly map = new Map<string, AttributeProto>();
  constructor(attrs: readonly AttributeProto[] | undefined, private readonly where: string) {
    for (const a of attrs ?? []) this.map.set(a.name, a);
  }
  has(name: string): boolean { return this.map.has(name); }
  int(name: string, def?: number): number {
    const a = this.map.get(name);
    if (a?.i !== undefined) return Number(a.i);
    if (def === undefined) throw new OnnxImportError(`${this.where}: attribute '${name}' is required`);
    return def;
  }
  float(name: string, def: number): number { const a = this.map.get(name); return a?.f !== undefined ? Number(a.f) : def; }
  ints(name: string, def?: readonly number[]): number[] {
    const a = this.map.get(name);
    if (a?.ints?.length) return a.ints.map(Number);
    if (def === undefined) throw new OnnxImportError(`${this.where}: attribute '${name}' is required`);
    return [...def];
  }
  string(name: string, def: string): string { const a = this.map.get(name); return a?.s ? new TextDecoder().decode(a.s) : def; }
  tensor(name: string): TensorProto | undefined { return this.map.get(name)?.t; }
  graph(name: string): GraphProto {
    const g = this.map.get(name)?.g;
    if (!g) throw new OnnxImportError(`${this.where}: attribute '${name}' (a graph) is required`);
    return g;
  }
}

export type ImportRule = (ctx: ImportContext, node: NodeProto, ins: readonly (IVal | null)[], a: Attrs) => IVal[];

const isConst = (v: IVal | null): v is ConstVal => v?.kind === 'const';
const typeOf = (ctx: ImportContext, v: IVal): TensorIRType => (v.kind === 'const' ? { kind: 'tensor', dtype: v.dtype, shape: v.shape } : (v.v.type as TensorIRType));
const rankOf = (ctx: ImportContext, v: IVal) => typeOf(ctx, v).shape.length;
const norm = (d: number, r: number) => (d < 0 ? d + r : d);
const run = (ctx: ImportContext, v: IVal | null, what: string): Value => {
  if (!v) throw new OnnxImportError(`${ctx.where}: input ${what} is required`);
  return ctx.value(v);
};
const op1 = (ctx: ImportContext, name: string, ins: readonly (Value | null)[], attrs: Record<string, unknown> = {}): IVal => runVal(ctx.b.op1(name, ins, attrs));
/** A required constant input (shapes, axes, pads); throws naming it when it is computed at run time. */
function need(ctx: ImportContext, v: IVal | null, what: string): ConstVal {
  if (!v) throw new OnnxImportError(`${ctx.where}: input ${what} is required`);
  if (v.kind !== 'const') throw new OnnxImportError(`${ctx.where}: input ${what} is computed at run time; Kiln needs it known when the model is imported (export with constant folding, or with fixed shapes)`);
  return v;
}

// ---- constant folding of small tensors (shape arithmetic) ----

function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}
function foldBinary(op: string, a: ConstVal, b: ConstVal, dtype: DType = a.dtype): ConstVal | undefined {
  const shape = broadcastShapes(op, a.shape, b.shape) as number[];
  const n = numel(shape), sa = strides(a.shape), sb = strides(b.shape), so = strides(shape);
  const out: Dim[] = [];
  for (let i = 0; i < n; i++) {
    let ia = 0, ib = 0;
    shape.forEach((_, d) => {
      const k = Math.floor(i / so[d]) % shape[d];
      const da = d - (shape.length - a.shape.length), db = d - (shape.length - b.shape.length);
      if (da >= 0 && a.shape[da] !== 1) ia += k * sa[da];
      if (db >= 0 && b.shape[db] !== 1) ib += k * sb[db];
    });
    const x = a.data[ia], y = b.data[ib];
    let r: Dim | undefined;
    if (typeof x === 'number' && typeof y === 'number') {
      switch (op) {
        case 'Add': r = x + y; break;
        case 'Sub': r = x - y; break;
        case 'Mul': r = x * y; break;
        case 'Div': r = dtype === 'int32' ? Math.trunc(x / y) : Math.fround(x / y); break;
        case 'Pow': r = x ** y; break;
        case 'Equal': r = Number(x === y); break;
        case 'Less': r = Number(x < y); break;
        case 'Greater': r = Number(x > y); break;
        case 'LessOrEqual': r = Number(x <= y); break;
        case 'GreaterOrEqual': r = Number(x >= y); break;
        case 'Max': r = Math.max(x, y); break;
        case 'Min': r = Math.min(x, y); break;
        case 'And': r = Number(Boolean(x) && Boolean(y)); break;
        case 'Or': r = Number(Boolean(x) || Boolean(y)); break;
      }
      if (dtype === 'float32' && typeof r === 'number') r = Math.fround(r);
    } else if (op === 'Equal') {
      r = x === y ? 1 : undefined;
    } else r = dimBinary(op, x, y);
    if (r === undefined) return undefined;
    out.push(r);
  }
  return constVal(dtype, shape, out);
}

/** Elements `idx` (C order) of a constant along axis → a new constant (Gather). */
function foldGather(data: ConstVal, indices: ConstVal, axis: number, where: string): ConstVal {
  const idx = numbers(indices, `${where}: the indices`);
  const outer = data.shape.slice(0, axis), inner = data.shape.slice(axis + 1);
  const nOuter = numel(outer), nInner = numel(inner), size = data.shape[axis];
  const out: Dim[] = [];
  for (let o = 0; o < nOuter; o++) {
    for (const k0 of idx) {
      const k = k0 < 0 ? k0 + size : k0;
      if (k < 0 || k >= size) throw new OnnxImportError(`${where}: index ${k0} is out of range for size ${size}`);
      for (let i = 0; i < nInner; i++) out.push(data.data[(o * size + k) * nInner + i]);
    }
  }
  return constVal(data.dtype, [...outer, ...indices.shape, ...inner], out);
}

const unaryRule = (kiln: string): ImportRule => (ctx, _n, ins) => [op1(ctx, kiln, [run(ctx, ins[0], 'X')])];

function binaryRule(kiln: string, onnx: string, dtype?: DType): ImportRule {
  return (ctx, _n, ins) => {
    const [a, b] = ins;
    if (isConst(a) && isConst(b)) {
      const folded = foldBinary(onnx, a, b, dtype ?? a.dtype);
      if (folded) return [folded];
    }
    return [op1(ctx, kiln, [run(ctx, a, 'A'), run(ctx, b, 'B')])];
  };
}

/** Kiln `sum` over `axes` divided by their element count (ReduceMean, LayerNormalization). */
function mean(ctx: ImportContext, x: Value, axes: number[], keepdim: boolean): Value {
  const shape = (x.type as TensorIRType).shape;
  const count = dimProductOf(axes.map((d) => shape[d]));
  if (typeof count !== 'number') throw new OnnxImportError(`${ctx.where}: the mean over dims of symbolic size ${count} is not supported (only over dims of fixed size)`);
  const s = ctx.b.op1('sum', [x], { dim: axes, keepdim });
  return ctx.b.op1('div', [s, ctx.b.literal(count)]);
}

function reduceAxes(ctx: ImportContext, x: IVal, axes: readonly number[] | undefined): number[] {
  const r = rankOf(ctx, x);
  return axes && axes.length ? axes.map((d) => norm(d, r)) : Array.from({ length: r }, (_, i) => i);
}

function softmax(ctx: ImportContext, x: Value, axis: number, log: boolean): Value {
  const b = ctx.b;
  const m = b.op1('amax', [x], { dim: axis, keepdim: true });
  const shifted = b.op1('sub', [x, m]);
  const e = b.op1('exp', [shifted]);
  const s = b.op1('sum', [e], { dim: axis, keepdim: true });
  return log ? b.op1('sub', [shifted, b.op1('log', [s])]) : b.op1('div', [e, s]);
}

/** A reshape to `dims` with ONNX's 0 (copy the input's dim) resolved. */
function reshapeTo(ctx: ImportContext, x: IVal, dims: readonly Dim[], allowZero: boolean): IVal {
  const inShape = typeOf(ctx, x).shape;
  const shape = dims.map((d, i) => (d === 0 && !allowZero ? inShape[i] : d));
  if (isConst(x) && shape.every((d) => typeof d === 'number')) {
    let known = shape as number[];
    if (known.includes(-1)) {
      const rest = numel(known.filter((d) => d !== -1));
      known = known.map((d) => (d === -1 ? x.data.length / rest : d));
    }
    return constVal(x.dtype, known, x.data);
  }
  return op1(ctx, 'reshape', [ctx.value(x)], { shape });
}

function symmetricPads(ctx: ImportContext, pads: readonly number[]): number[] {
  const half = pads.length / 2;
  const begin = pads.slice(0, half), end = pads.slice(half);
  if (begin.some((p, i) => p !== end[i])) throw new OnnxImportError(`${ctx.where}: asymmetric pads [${pads}] are not supported for pooling`);
  return begin;
}

function conv(ctx: ImportContext, ins: readonly (IVal | null)[], a: Attrs): IVal {
  const autoPad = a.string('auto_pad', 'NOTSET');
  if (autoPad !== 'NOTSET') throw new OnnxImportError(`${ctx.where}: auto_pad=${autoPad} is not supported (export with explicit pads)`);
  const w = run(ctx, ins[1], 'W');
  if ((w.type as TensorIRType).shape.length !== 4) throw new OnnxImportError(`${ctx.where}: only 2-D convolutions are supported (weight rank ${(w.type as TensorIRType).shape.length})`);
  return op1(ctx, 'conv2d', [run(ctx, ins[0], 'X'), w, ins[2] ? ctx.value(ins[2]) : null], {
    stride: a.ints('strides', [1, 1]), padding: a.ints('pads', [0, 0, 0, 0]), dilation: a.ints('dilations', [1, 1]), groups: a.int('group', 1),
  });
}

function pad(ctx: ImportContext, ins: readonly (IVal | null)[], a: Attrs): IVal {
  const mode = a.string('mode', 'constant');
  if (mode !== 'constant') throw new OnnxImportError(`${ctx.where}: Pad mode '${mode}' is not supported (only constant)`);
  const x = run(ctx, ins[0], 'data');
  const pads = numbers(need(ctx, ins[1], 'pads'), `${ctx.where}: pads`);
  const value = ins[2] ? numbers(need(ctx, ins[2], 'constant_value'), `${ctx.where}: constant_value`)[0] : 0;
  const r = (x.type as TensorIRType).shape.length;
  let y = x;
  for (let axis = 0; axis < r; axis++) {
    const [before, after] = [pads[axis], pads[axis + r]];
    if (before < 0 || after < 0) throw new OnnxImportError(`${ctx.where}: negative pads are not supported`);
    if (!before && !after) continue;
    const shape = (y.type as TensorIRType).shape;
    const fill = (n: number) => ctx.b.op1('expand', [ctx.b.literal(value, (y.type as TensorIRType).dtype)], { shape: shape.map((d, i) => (i === axis ? n : d)) });
    y = ctx.b.op1('cat', [...(before ? [fill(before)] : []), y, ...(after ? [fill(after)] : [])], { dim: axis });
  }
  return runVal(y);
}

function sliceRule(ctx: ImportContext, _n: NodeProto, ins: readonly (IVal | null)[]): IVal[] {
  const data = ins[0]!;
  const r = rankOf(ctx, data);
  const starts = numbers(need(ctx, ins[1], 'starts'), `${ctx.where}: starts`);
  const ends = numbers(need(ctx, ins[2], 'ends'), `${ctx.where}: ends`);
  const axes = ins[3] ? numbers(need(ctx, ins[3], 'axes'), `${ctx.where}: axes`).map((d) => norm(d, r)) : starts.map((_, i) => i);
  const steps = ins[4] ? numbers(need(ctx, ins[4], 'steps'), `${ctx.where}: steps`) : starts.map(() => 1);
  const big = 2147483647;
  if (isConst(data) && r === 1) {
    const n = data.shape[0];
    const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
    const st = steps[0];
    let s = starts[0] < 0 ? starts[0] + n : starts[0], e = ends[0] < 0 ? ends[0] + n : ends[0];
    s = st > 0 ? clamp(s, 0, n) : clamp(s, -1, n - 1);
    e = st > 0 ? clamp(e, 0, n) : clamp(e, -1, n - 1);
    const out: Dim[] = [];
    for (let i = s; st > 0 ? i < e : i > e; i += st) out.push(data.data[i]);
    return [constVal(data.dtype, [out.length], out)];
  }
  let y = ctx.value(data);
  axes.forEach((axis, i) => {
    const step = steps[i];
    if (step === -1 && starts[i] === -1 && ends[i] <= -big) { y = ctx.b.op1('flip', [y], { dims: [axis] }); return; }
    if (step <= 0) throw new OnnxImportError(`${ctx.where}: negative slice steps are supported only as a whole-axis reversal (start -1, end INT64_MIN, step -1)`);
    const end = ends[i] >= big ? null : ends[i] <= -big ? 0 : ends[i];
    y = ctx.b.op1('slice', [y], { dim: axis, start: Math.max(starts[i], -big), end, step });
  });
  return [runVal(y)];
}

function gatherRule(ctx: ImportContext, _n: NodeProto, ins: readonly (IVal | null)[], a: Attrs): IVal[] {
  const [data, indices] = [ins[0]!, ins[1]!];
  const r = rankOf(ctx, data);
  const axis = norm(a.int('axis', 0), r);
  if (isConst(data) && isConst(indices)) return [foldGather(data, indices, axis, ctx.where)];
  const shape = typeOf(ctx, data).shape;
  if (isConst(indices) && indices.shape.length === 0) {
    // One index: index_select of [k] (k counted from the end at run time on a symbolic dim), then drop the axis.
    const k = numbers(indices, `${ctx.where}: the index`)[0];
    const size = shape[axis];
    let idx: Value;
    if (k >= 0 || typeof size === 'number') idx = ctx.value(constVal('int32', [1], [k >= 0 ? k : k + (size as number)]));
    else {
      const at = ctx.b.op1('scalar_op', [ctx.b.op1('dim', [ctx.value(data)], { index: axis }), ctx.b.scalar(k, 'int32')], { fn: 'add' });
      idx = ctx.b.op1('reshape', [ctx.b.op1('to_tensor', [at], { dtype: 'int32' })], { shape: [1] });
    }
    const sel = ctx.b.op1('index_select', [ctx.value(data), idx], { dim: axis });
    return [op1(ctx, 'reshape', [sel], { shape: shape.filter((_, i) => i !== axis) })];
  }
  let idx: Value;
  if (isConst(indices)) {
    const size = shape[axis];
    const nums = numbers(indices, `${ctx.where}: the indices`);
    if (nums.some((k) => k < 0) && typeof size !== 'number') throw new OnnxImportError(`${ctx.where}: negative indices along a dim of symbolic size '${size}' are not supported`);
    idx = ctx.value(constVal('int32', [nums.length], nums.map((k) => (k < 0 ? k + (size as number) : k))));
  } else idx = ctx.b.op1('reshape', [ctx.value(indices)], { shape: [-1] });
  const sel = ctx.b.op1('index_select', [ctx.value(data), idx], { dim: axis });
  const ishape = typeOf(ctx, indices).shape;
  return [op1(ctx, 'reshape', [sel], { shape: [...shape.slice(0, axis), ...ishape, ...shape.slice(axis + 1)] })];
}

function unsqueezeAxes(ctx: ImportContext, ins: readonly (IVal | null)[], a: Attrs): number[] {
  return ctx.opset >= 13 ? (ins[1] ? numbers(need(ctx, ins[1], 'axes'), `${ctx.where}: axes`) : []) : a.ints('axes', []);
}

export const IMPORT_RULES: Readonly<Record<string, ImportRule>> = {
  Identity: (_c, _n, ins) => [ins[0]!],
  Dropout: (_c, _n, ins) => [ins[0]!],
  Constant: (ctx, _n, _i, a) => {
    const t = a.tensor('value');
    if (t) return [tensorData(t, ctx.where)];
    if (a.has('value_float')) return [constVal('float32', [], [a.float('value_float', 0)])];
    if (a.has('value_int')) return [constVal('int32', [], [a.int('value_int')])];
    if (a.has('value_ints')) { const v = a.ints('value_ints'); return [constVal('int32', [v.length], v)]; }
    throw new OnnxImportError(`${ctx.where}: only tensor, float, int and ints constants are supported`);
  },
  ConstantOfShape: (ctx, _n, ins, a) => {
    const shape = need(ctx, ins[0], 'input').data;
    const t = a.tensor('value');
    const v = t ? tensorData(t, ctx.where) : constVal('float32', [1], [0]);
    if (shape.every((d) => typeof d === 'number')) return [constVal(v.dtype, shape as number[], new Array(numel(shape as number[])).fill(v.data[0]))];
    return [op1(ctx, 'expand', [ctx.b.literal(v.data[0] as number, v.dtype)], { shape })];
  },
  Shape: (ctx, _n, ins, a) => {
    const shape = typeOf(ctx, ins[0]!).shape;
    const r = shape.length;
    const start = norm(a.int('start', 0), r), end = a.has('end') ? norm(a.int('end'), r) : r;
    const dims = shape.slice(Math.max(0, start), Math.min(r, end));
    return [constVal('int32', [dims.length], dims)];
  },
  Gather: gatherRule,
  Unsqueeze: (ctx, _n, ins, a) => {
    const x = ins[0]!;
    const shape = [...typeOf(ctx, x).shape];
    const r = shape.length + unsqueezeAxes(ctx, ins, a).length;
    for (const d of unsqueezeAxes(ctx, ins, a).map((d) => norm(d, r)).sort((p, q) => p - q)) shape.splice(d, 0, 1);
    return [reshapeTo(ctx, x, shape, true)];
  },
  Squeeze: (ctx, _n, ins, a) => {
    const x = ins[0]!;
    const shape = typeOf(ctx, x).shape;
    const axes = unsqueezeAxes(ctx, ins, a).map((d) => norm(d, shape.length));
    const keep = shape.filter((d, i) => (axes.length ? !axes.includes(i) : d !== 1));
    return [reshapeTo(ctx, x, keep, true)];
  },
  Concat: (ctx, _n, ins, a) => {
    const r = rankOf(ctx, ins[0]!);
    const axis = norm(a.int('axis'), r);
    if (ins.every(isConst) && r === 1) {
      const data = (ins as ConstVal[]).flatMap((c) => c.data);
      return [constVal((ins[0] as ConstVal).dtype, [data.length], data)];
    }
    return [op1(ctx, 'cat', ins.map((v, i) => run(ctx, v, String(i))), { dim: axis })];
  },
  Slice: sliceRule,
  Reshape: (ctx, _n, ins, a) => [reshapeTo(ctx, ins[0]!, need(ctx, ins[1], 'shape').data, a.int('allowzero', 0) === 1)],
  Flatten: (ctx, _n, ins, a) => {
    const shape = typeOf(ctx, ins[0]!).shape;
    const axis = norm(a.int('axis', 1), shape.length);
    return [reshapeTo(ctx, ins[0]!, [dimProductOf(shape.slice(0, axis)), dimProductOf(shape.slice(axis))], true)];
  },
  Transpose: (ctx, _n, ins, a) => {
    const r = rankOf(ctx, ins[0]!);
    const perm = a.ints('perm', Array.from({ length: r }, (_, i) => r - 1 - i));
    return [op1(ctx, 'permute', [run(ctx, ins[0], 'data')], { dims: perm })];
  },
  Cast: (ctx, _n, ins, a) => {
    const to = kilnDtype(a.int('to'), ctx.where);
    const x = ins[0]!;
    if (isConst(x)) {
      if (to === 'float32' || x.data.some((d) => typeof d !== 'number')) return [constVal(to, x.shape, x.data)];
      return [constVal(to, x.shape, (x.data as number[]).map((v) => (to === 'bool' ? Number(v !== 0) : Math.trunc(v))))];
    }
    return typeOf(ctx, x).dtype === to ? [x] : [op1(ctx, 'cast', [ctx.value(x)], { dtype: to })];
  },
  Add: binaryRule('add', 'Add'), Sub: binaryRule('sub', 'Sub'), Mul: binaryRule('mul', 'Mul'), Div: binaryRule('div', 'Div'), Pow: binaryRule('pow', 'Pow'),
  Equal: binaryRule('eq', 'Equal', 'bool'), Less: binaryRule('lt', 'Less', 'bool'), Greater: binaryRule('gt', 'Greater', 'bool'),
  LessOrEqual: binaryRule('le', 'LessOrEqual', 'bool'), GreaterOrEqual: binaryRule('ge', 'GreaterOrEqual', 'bool'),
  And: binaryRule('mul', 'And', 'bool'), Or: binaryRule('maximum', 'Or', 'bool'),
  Max: (ctx, _n, ins) => [ins.slice(1).reduce((acc: IVal, v) => op1(ctx, 'maximum', [ctx.value(acc), run(ctx, v, 'data')]), ins[0]!)],
  Min: (ctx, _n, ins) => [ins.slice(1).reduce((acc: IVal, v) => op1(ctx, 'minimum', [ctx.value(acc), run(ctx, v, 'data')]), ins[0]!)],
  Not: (ctx, _n, ins) => {
    const x = ins[0]!;
    if (isConst(x)) return [constVal('bool', x.shape, numbers(x, ctx.where).map((v) => Number(!v)))];
    return [op1(ctx, 'logical_not', [ctx.value(x)])];
  },
  Where: (ctx, _n, ins) => {
    const [c, x, y] = ins;
    // Shape arithmetic (e.g. Where(Equal(shape, -1), ones, shape) before Expand) folds.
    if (isConst(c) && isConst(x) && isConst(y) && c.shape.length <= 1 && x.shape.length <= 1 && y.shape.length <= 1) {
      const n = Math.max(c.data.length, x.data.length, y.data.length);
      const at = (v: ConstVal, i: number) => v.data[v.data.length === 1 ? 0 : i];
      const data = Array.from({ length: n }, (_, i) => (at(c, i) ? at(x, i) : at(y, i)));
      return [constVal(x.dtype, n === 1 && c.shape.length + x.shape.length + y.shape.length === 0 ? [] : [n], data)];
    }
    return [op1(ctx, 'where', [run(ctx, c, 'condition'), run(ctx, x, 'X'), run(ctx, y, 'Y')])];
  },
  Relu: unaryRule('relu'), Sigmoid: unaryRule('sigmoid'), Tanh: unaryRule('tanh'), Erf: unaryRule('erf'), Exp: unaryRule('exp'),
  Log: unaryRule('log'), Sqrt: unaryRule('sqrt'), Neg: unaryRule('neg'), Abs: unaryRule('abs'), Sin: unaryRule('sin'), Cos: unaryRule('cos'),
  Sign: unaryRule('sign'), HardSwish: unaryRule('hardswish'),
  Floor: (ctx, _n, ins) => [runVal(floor(ctx, run(ctx, ins[0], 'X')))],
  Mod: (ctx, _n, ins, a) => {
    // fmod=0 (integers): a − floor(a/b)·b, the sign of b; fmod=1: a − trunc(a/b)·b, the sign of a.
    const A = run(ctx, ins[0], 'A'), B = run(ctx, ins[1], 'B');
    const dt = (A.type as TensorIRType).dtype;
    const b = ctx.b;
    const f = (v: Value) => (dt === 'float32' ? v : b.op1('cast', [v], { dtype: 'float32' }));
    const q = b.op1('div', [f(A), f(B)]);
    const whole = a.int('fmod', 0) ? b.op1('cast', [b.op1('cast', [q], { dtype: 'int32' })], { dtype: 'float32' }) : floor(ctx, q);
    const r = b.op1('sub', [f(A), b.op1('mul', [whole, f(B)])]);
    return [runVal(dt === 'float32' ? r : b.op1('cast', [r], { dtype: dt }))];
  },
  Reciprocal: (ctx, _n, ins) => [op1(ctx, 'div', [ctx.b.literal(1), run(ctx, ins[0], 'X')])],
  Clip: (ctx, _n, ins) => {
    const bound = (v: IVal | null, what: string) => (v ? numbers(need(ctx, v, what), `${ctx.where}: ${what}`)[0] : null);
    return [op1(ctx, 'clamp', [run(ctx, ins[0], 'input')], { min: bound(ins[1], 'min'), max: bound(ins[2], 'max') })];
  },
  Softmax: (ctx, _n, ins, a) => [runVal(softmax(ctx, run(ctx, ins[0], 'input'), norm(a.int('axis', -1), rankOf(ctx, ins[0]!)), false))],
  LogSoftmax: (ctx, _n, ins, a) => [runVal(softmax(ctx, run(ctx, ins[0], 'input'), norm(a.int('axis', -1), rankOf(ctx, ins[0]!)), true))],
  ReduceMean: (ctx, _n, ins, a) => [runVal(mean(ctx, run(ctx, ins[0], 'data'), reduceAxes(ctx, ins[0]!, a.ints('axes', [])), a.int('keepdims', 1) === 1))],
  ReduceSum: (ctx, _n, ins, a) => {
    const axes = ins[1] ? numbers(need(ctx, ins[1], 'axes'), `${ctx.where}: axes`) : [];
    if (!axes.length && a.int('noop_with_empty_axes', 0)) return [ins[0]!];
    return [op1(ctx, 'sum', [run(ctx, ins[0], 'data')], { dim: reduceAxes(ctx, ins[0]!, axes), keepdim: a.int('keepdims', 1) === 1 })];
  },
  ReduceMax: (ctx, _n, ins, a) => [op1(ctx, 'amax', [run(ctx, ins[0], 'data')], { dim: reduceAxes(ctx, ins[0]!, a.ints('axes', [])), keepdim: a.int('keepdims', 1) === 1 })],
  ReduceMin: (ctx, _n, ins, a) => [op1(ctx, 'amin', [run(ctx, ins[0], 'data')], { dim: reduceAxes(ctx, ins[0]!, a.ints('axes', [])), keepdim: a.int('keepdims', 1) === 1 })],
  LayerNormalization: (ctx, _n, ins, a) => {
    const x = run(ctx, ins[0], 'X');
    const r = (x.type as TensorIRType).shape.length;
    const axes = Array.from({ length: r - norm(a.int('axis', -1), r) }, (_, i) => norm(a.int('axis', -1), r) + i);
    const b = ctx.b;
    const m = mean(ctx, x, axes, true);
    const d = b.op1('sub', [x, m]);
    const v = mean(ctx, b.op1('mul', [d, d]), axes, true);
    let y = b.op1('div', [d, b.op1('sqrt', [b.op1('add', [v, b.literal(a.float('epsilon', 1e-5))])])]);
    y = b.op1('mul', [y, run(ctx, ins[1], 'Scale')]);
    if (ins[2]) y = b.op1('add', [y, ctx.value(ins[2])]);
    return [runVal(y)];
  },
  Expand: (ctx, _n, ins) => {
    const x = run(ctx, ins[0], 'input');
    const target = need(ctx, ins[1], 'shape').data;
    const xs = (x.type as TensorIRType).shape;
    const r = Math.max(xs.length, target.length);
    const shape = Array.from({ length: r }, (_, i) => {
      const t = target[i - (r - target.length)], s = xs[i - (r - xs.length)];
      return t === undefined || t === 1 ? (s ?? 1) : t;
    });
    return [op1(ctx, 'expand', [x], { shape })];
  },
  Range: (ctx, _n, ins) => {
    const [s, l, d] = ins.map((v, i) => numbers(need(ctx, v, ['start', 'limit', 'delta'][i]), ctx.where)[0]);
    const out: number[] = [];
    for (let v = s; d > 0 ? v < l : v > l; v += d) out.push(v);
    return [constVal((ins[0] as ConstVal).dtype, [out.length], out)];
  },
  MatMul: (ctx, _n, ins) => [op1(ctx, 'matmul', [run(ctx, ins[0], 'A'), run(ctx, ins[1], 'B')])],
  Gemm: (ctx, _n, ins, a) => {
    const [transA, transB, alpha, beta] = [a.int('transA', 0), a.int('transB', 0), a.float('alpha', 1), a.float('beta', 1)];
    const A = run(ctx, ins[0], 'A'), B = run(ctx, ins[1], 'B');
    const C = ins[2] ? ctx.value(ins[2]) : null;
    const b = ctx.b;
    if (!transA && transB && alpha === 1 && beta === 1 && (!C || (C.type as TensorIRType).shape.length === 1)) return [op1(ctx, 'linear', [A, B, C])];
    let y = b.op1('matmul', [transA ? b.op1('permute', [A], { dims: [1, 0] }) : A, transB ? b.op1('permute', [B], { dims: [1, 0] }) : B]);
    if (alpha !== 1) y = b.op1('mul', [y, b.literal(alpha)]);
    if (C) y = b.op1('add', [y, beta === 1 ? C : b.op1('mul', [C, b.literal(beta)])]);
    return [runVal(y)];
  },
  Conv: (ctx, _n, ins, a) => [conv(ctx, ins, a)],
  ConvTranspose: (ctx, _n, ins, a) => {
    if (a.string('auto_pad', 'NOTSET') !== 'NOTSET' || a.has('output_shape')) throw new OnnxImportError(`${ctx.where}: auto_pad and output_shape are not supported (export with explicit pads and output_padding)`);
    const w = run(ctx, ins[1], 'W');
    if ((w.type as TensorIRType).shape.length !== 4) throw new OnnxImportError(`${ctx.where}: only 2-D transposed convolutions are supported`);
    return [op1(ctx, 'conv_transpose2d', [run(ctx, ins[0], 'X'), w, ins[2] ? ctx.value(ins[2]) : null], {
      stride: a.ints('strides', [1, 1]), padding: a.ints('pads', [0, 0, 0, 0]), dilation: a.ints('dilations', [1, 1]),
      groups: a.int('group', 1), output_padding: a.ints('output_padding', [0, 0]),
    })];
  },
  BatchNormalization: (ctx, _n, ins, a) => {
    if (a.int('training_mode', 0)) throw new OnnxImportError(`${ctx.where}: training_mode=1 is not supported (export the model in eval mode)`);
    const [x, scale, bias, m, v] = ins.map((t, i) => run(ctx, t, ['X', 'scale', 'B', 'input_mean', 'input_var'][i]));
    return [op1(ctx, 'batch_norm', [x, m, v, scale, bias], { eps: a.float('epsilon', 1e-5) })];
  },
  MaxPool: (ctx, node, ins, a) => {
    if (node.output.length > 1 && node.output[1]) throw new OnnxImportError(`${ctx.where}: the Indices output of MaxPool is not supported`);
    if (a.string('auto_pad', 'NOTSET') !== 'NOTSET') throw new OnnxImportError(`${ctx.where}: auto_pad is not supported (export with explicit pads)`);
    const k = a.ints('kernel_shape');
    if (k.length !== 2) throw new OnnxImportError(`${ctx.where}: only 2-D pooling is supported`);
    return [op1(ctx, 'max_pool2d', [run(ctx, ins[0], 'X')], {
      kernel_size: k, stride: a.ints('strides', [1, 1]), padding: symmetricPads(ctx, a.ints('pads', [0, 0, 0, 0])),
      dilation: a.ints('dilations', [1, 1]), ceil_mode: a.int('ceil_mode', 0) === 1,
    })];
  },
  AveragePool: (ctx, _n, ins, a) => {
    if (a.string('auto_pad', 'NOTSET') !== 'NOTSET') throw new OnnxImportError(`${ctx.where}: auto_pad is not supported (export with explicit pads)`);
    const k = a.ints('kernel_shape');
    if (k.length !== 2) throw new OnnxImportError(`${ctx.where}: only 2-D pooling is supported`);
    return [op1(ctx, 'avg_pool2d', [run(ctx, ins[0], 'X')], {
      kernel_size: k, stride: a.ints('strides', [1, 1]), padding: symmetricPads(ctx, a.ints('pads', [0, 0, 0, 0])),
      ceil_mode: a.int('ceil_mode', 0) === 1, count_include_pad: a.int('count_include_pad', 0) === 1,
    })];
  },
  GlobalAveragePool: (ctx, _n, ins) => [op1(ctx, 'adaptive_avg_pool2d', [run(ctx, ins[0], 'X')], { output_size: [1, 1] })],
  GlobalMaxPool: (ctx, _n, ins) => [op1(ctx, 'adaptive_max_pool2d', [run(ctx, ins[0], 'X')], { output_size: [1, 1] })],
  Pad: (ctx, _n, ins, a) => [pad(ctx, ins, a)],
  Tile: (ctx, _n, ins) => {
    // Copies along each axis: `repeats[axis]` copies concatenated.
    const repeats = numbers(need(ctx, ins[1], 'repeats'), `${ctx.where}: repeats`);
    let y = run(ctx, ins[0], 'input');
    repeats.forEach((r, axis) => {
      if (r < 1) throw new OnnxImportError(`${ctx.where}: repeats must be positive, got ${r}`);
      if (r > 1) y = ctx.b.op1('cat', Array.from({ length: r }, () => y), { dim: axis });
    });
    return [runVal(y)];
  },
  ReduceProd: (ctx, _n, ins, a) => [op1(ctx, 'prod', [run(ctx, ins[0], 'data')], { dim: reduceAxes(ctx, ins[0]!, a.ints('axes', [])), keepdim: a.int('keepdims', 1) === 1 })],
  ArgMax: (ctx, _n, ins, a) => argRule(ctx, 'argmax', ins, a),
  ArgMin: (ctx, _n, ins, a) => argRule(ctx, 'argmin', ins, a),
  CumSum: (ctx, _n, ins, a) => {
    if (a.int('exclusive', 0) || a.int('reverse', 0)) throw new OnnxImportError(`${ctx.where}: exclusive and reverse CumSum are not supported`);
    const axis = numbers(need(ctx, ins[1], 'axis'), `${ctx.where}: axis`)[0];
    return [op1(ctx, 'cumsum', [run(ctx, ins[0], 'x')], { dim: norm(axis, rankOf(ctx, ins[0]!)) })];
  },
  Trilu: (ctx, _n, ins, a) => {
    const k = ins[1] ? numbers(need(ctx, ins[1], 'k'), `${ctx.where}: k`)[0] : 0;
    return [op1(ctx, a.int('upper', 1) ? 'triu' : 'tril', [run(ctx, ins[0], 'input')], { diagonal: k })];
  },
  GatherElements: (ctx, _n, ins, a) => [op1(ctx, 'gather', [run(ctx, ins[0], 'data'), run(ctx, ins[1], 'indices')], { dim: norm(a.int('axis', 0), rankOf(ctx, ins[0]!)) })],
  ScatterElements: (ctx, _n, ins, a) => {
    const reduction = a.string('reduction', 'none');
    if (reduction !== 'add') throw new OnnxImportError(`${ctx.where}: reduction '${reduction}' is not supported (only add)`);
    return [op1(ctx, 'scatter_add', [run(ctx, ins[0], 'data'), run(ctx, ins[1], 'indices'), run(ctx, ins[2], 'updates')], { dim: norm(a.int('axis', 0), rankOf(ctx, ins[0]!)) })];
  },
  ScatterND: (ctx, _n, ins, a) => {
    // Rows of dim 0 (indices [k, 1]) added into: Kiln's index_add along dim 0.
    const reduction = a.string('reduction', 'none');
    const ishape = typeOf(ctx, ins[1]!).shape;
    if (reduction !== 'add' || ishape.length !== 2 || ishape[1] !== 1) throw new OnnxImportError(`${ctx.where}: only ScatterND with reduction add over rows (indices [k, 1]) is supported, got reduction '${reduction}' and indices [${ishape}]`);
    const idx = ctx.b.op1('reshape', [run(ctx, ins[1], 'indices')], { shape: [-1] });
    return [op1(ctx, 'index_add', [run(ctx, ins[0], 'data'), idx, run(ctx, ins[2], 'updates')], { dim: 0 })];
  },
};

/** floor(x) as Kiln has no floor op: truncate through int32, then step down where that rounded up (|x| < 2^31). */
function floor(ctx: ImportContext, x: Value): Value {
  const b = ctx.b;
  const t = b.op1('cast', [b.op1('cast', [x], { dtype: 'int32' })], { dtype: 'float32' });
  return b.op1('sub', [t, b.op1('cast', [b.op1('gt', [t, x])], { dtype: 'float32' })]);
}

function argRule(ctx: ImportContext, kiln: string, ins: readonly (IVal | null)[], a: Attrs): IVal[] {
  if (a.int('select_last_index', 0)) throw new OnnxImportError(`${ctx.where}: select_last_index=1 is not supported`);
  return [op1(ctx, kiln, [run(ctx, ins[0], 'data')], { dim: norm(a.int('axis', 0), rankOf(ctx, ins[0]!)), keepdim: a.int('keepdims', 1) === 1 })];
}
