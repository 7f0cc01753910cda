// Kiln op → ONNX: ONE entry per Kiln op, each writing the node's ONNX form through the writer
// and returning the ONNX names of the node's outputs (in order). Fused ops are written as their
// decomposition (conv, activation, pool); ops ONNX has no form for (training-only gradients,
// random draws, host calls) are not in the table, and the exporter names them in its error.
// Invariant: an entry computes exactly what the Kiln op computes for every input it accepts
// (the ONNX Runtime tests compare them), or throws OnnxExportError naming what it cannot.

import type { Node, TensorIRType, DType, Value } from '@kiln/ir-spec';
import { ONNX_DTYPE } from './proto.js';
import { float, KILN_TO_ONNX_DTYPE, OnnxExportError, type OnnxWriter } from './export-writer.js';

export type ExportRule = (w: OnnxWriter, n: Node, ins: readonly string[]) => string[];

const INT64_MAX = 9223372036854775807;
const tensorOf = (n: Node, i: number): TensorIRType => {
  const t = n.inputs[i]!.type;
  if (t.kind !== 'tensor') throw new OnnxExportError(`exportOnnx: node '${n.op}' input ${i} is a ${t.kind}, expected a tensor`);
  return t;
};
const outType = (n: Node, i = 0): TensorIRType => n.outputs[i].type as TensorIRType;
const rank = (n: Node, i = 0) => tensorOf(n, i).shape.length;
const norm = (d: number, r: number) => (d < 0 ? d + r : d);

const same = (opType: string): ExportRule => (w, _n, ins) => [w.node1(opType, ins)];

/**
 * Kiln's binary ops promote mixed operands (f32 + i32 → f32); ONNX needs one type: operands are
 * cast to the result dtype (arithmetic) or to their promoted dtype (comparisons).
 */
function promoted(n: Node): DType {
  const ds = n.inputs.map((v) => (v!.type as { dtype: DType }).dtype);
  return ds.includes('float32') ? 'float32' : ds.includes('int32') ? 'int32' : 'bool';
}
function castAll(w: OnnxWriter, n: Node, ins: readonly string[], to: DType): string[] {
  return ins.map((x, i) => ((n.inputs[i]!.type as { dtype: DType }).dtype === to ? x : cast(w, x, to)));
}
const arith = (opType: string): ExportRule => (w, n, ins) => [w.node1(opType, castAll(w, n, ins, outType(n).dtype))];
const compare = (opType: string): ExportRule => (w, n, ins) => [w.node1(opType, castAll(w, n, ins, promoted(n)))];
const notOf = (opType: string): ExportRule => (w, n, ins) => [w.node1('Not', [w.node1(opType, castAll(w, n, ins, promoted(n)))])];

/** Elementwise unary ops by name, shared by the table and the fused conv/linear activations. */
function unary(w: OnnxWriter, op: string, x: string, dtype: DType = 'float32'): string {
  switch (op) {
    case 'relu': return w.node1('Relu', [x]);
    case 'sigmoid': return w.node1('Sigmoid', [x]);
    case 'tanh': return w.node1('Tanh', [x]);
    case 'hardswish': w.requireOpset(14, 'hardswish (HardSwish)'); return w.node1('HardSwish', [x]);
    case 'erf': return w.node1('Erf', [x]);
    case 'neg': return w.node1('Neg', [x]);
    case 'exp': return w.node1('Exp', [x]);
    case 'log': return w.node1('Log', [x]);
    case 'sqrt': return w.node1('Sqrt', [x]);
    case 'rsqrt': return w.node1('Reciprocal', [w.node1('Sqrt', [x])]);
    case 'sin': return w.node1('Sin', [x]);
    case 'cos': return w.node1('Cos', [x]);
    case 'abs': return w.node1('Abs', [x]);
    case 'sign': return w.node1('Sign', [x]);
    case 'logical_not': return w.node1('Not', [dtype === 'bool' ? x : w.node1('Cast', [x], { to: ONNX_DTYPE.BOOL })]);
    case 'clone': return w.node1('Identity', [x]);
    default: throw new OnnxExportError(`exportOnnx: no ONNX form for the elementwise op '${op}'`);
  }
}

/** Reductions whose axes are an input from opset 13 (ReduceSum) or 18 (the others). */
function reduce(opType: string, axesAsInput: boolean): ExportRule {
  return (w, n, ins) => {
    const r = rank(n);
    const dim = n.attrs.dim as number | readonly number[] | null;
    const keepdims = n.attrs.keepdim ? 1 : 0;
    if (dim === null || (Array.isArray(dim) && dim.length === 0)) {
      if (r === 0) return [w.node1('Identity', [ins[0]])];
      const axes = Array.from({ length: r }, (_, i) => i);
      return [axesAsInput ? w.node1(opType, [ins[0], w.int64s(axes)], { keepdims }) : w.node1(opType, [ins[0]], { axes, keepdims })];
    }
    const axes = (Array.isArray(dim) ? dim : [dim as number]).map((d) => norm(d, r));
    if (r === 0) return [w.node1('Identity', [ins[0]])];
    return [axesAsInput ? w.node1(opType, [ins[0], w.int64s(axes)], { keepdims }) : w.node1(opType, [ins[0]], { axes, keepdims })];
  };
}

function argReduce(opType: string): ExportRule {
  return (w, n, ins) => {
    const dim = n.attrs.dim as number | null;
    const keepdims = n.attrs.keepdim ? 1 : 0;
    let x = ins[0], axis = 0;
    if (dim === null) x = w.node1('Reshape', [x, w.int64s([-1])]);
    else axis = norm(dim, rank(n));
    const idx = w.node1(opType, [x], { axis, keepdims: dim === null ? 0 : keepdims, select_last_index: 0 });
    return [w.node1('Cast', [idx], { to: ONNX_DTYPE.INT32 })];
  };
}

/** Slice along one dim with Kiln's (start, end, step) where null means the dim's end. */
function slice1(w: OnnxWriter, x: string, dim: number, start: number | null, end: number | null, step: number): string {
  const s = start ?? (step > 0 ? 0 : -1);
  const e = end ?? (step > 0 ? INT64_MAX : -INT64_MAX);
  return w.node1('Slice', [x, w.int64s([s]), w.int64s([e]), w.int64s([dim]), w.int64s([step])]);
}

function conv(w: OnnxWriter, n: Node, ins: readonly string[]): string {
  const a = n.attrs as { stride: number[]; padding: number[]; dilation: number[]; groups: number };
  const inputs = ins[2] ? [ins[0], ins[1], ins[2]] : [ins[0], ins[1]];
  return w.node1('Conv', inputs, { strides: a.stride, pads: a.padding, dilations: a.dilation, group: a.groups });
}

function linear(w: OnnxWriter, n: Node, ins: readonly string[]): string {
  const [x, wt, b] = ins;
  if (rank(n, 0) === 2) return w.node1('Gemm', b ? [x, wt, b] : [x, wt], { transB: 1 });
  const y = w.node1('MatMul', [x, w.node1('Transpose', [wt], { perm: [1, 0] })]);
  return b ? w.node1('Add', [y, b]) : y;
}

/** Kiln's index_add / index_put along `dim` as ScatterND with reduction add on `dim` moved first. */
function indexAdd(w: OnnxWriter, n: Node, ins: readonly string[]): string {
  w.requireOpset(16, 'index_add (ScatterND with reduction)');
  const r = rank(n);
  const dim = norm(n.attrs.dim as number, r);
  const perm = [dim, ...Array.from({ length: r }, (_, i) => i).filter((i) => i !== dim)];
  const inv = perm.map((_, i) => perm.indexOf(i));
  const moved = (v: string) => (dim === 0 ? v : w.node1('Transpose', [v], { perm }));
  const idx = w.node1('Unsqueeze', [w.node1('Cast', [ins[1]], { to: ONNX_DTYPE.INT64 }), w.int64s([1])]);
  const out = w.node1('ScatterND', [moved(ins[0]), idx, moved(ins[2])], { reduction: 'add' });
  return dim === 0 ? out : w.node1('Transpose', [out], { perm: inv });
}

function maxPool(w: OnnxWriter, x: string, kernel: readonly number[], stride: readonly number[], padding: readonly number[] = [0, 0], dilation: readonly number[] = [1, 1], ceil = false): string {
  return w.node1('MaxPool', [x], { kernel_shape: kernel, strides: stride, pads: [padding[0], padding[1], padding[0], padding[1]], dilations: dilation, ceil_mode: ceil ? 1 : 0 });
}

function adaptivePool(global: string, local: string): ExportRule {
  return (w, n, ins) => {
    const [oh, ow] = n.attrs.output_size as number[];
    if (oh === 1 && ow === 1) return [w.node1(global, [ins[0]])];
    const [, , H, W] = tensorOf(n, 0).shape;
    if (typeof H !== 'number' || typeof W !== 'number' || H % oh || W % ow) {
      throw new OnnxExportError(`exportOnnx: ${n.op} to ${oh}x${ow} from ${H}x${W} has no ONNX form (ONNX pools adaptively only to 1x1; the input size must be a multiple of the output size)`);
    }
    const k = [H / oh, W / ow];
    return [w.node1(local, [ins[0]], { kernel_shape: k, strides: k })];
  };
}

const isFloat = (n: Node) => tensorOf(n, 0).dtype === 'float32';
/** Floor/Ceil/Round of a float; an int input is its own result. */
const rounding = (opType: string): ExportRule => (w, n, ins) => [isFloat(n) ? w.node1(opType, ins) : ins[0]];

function cast(w: OnnxWriter, x: string, to: DType): string { return w.node1('Cast', [x], { to: KILN_TO_ONNX_DTYPE[to] }); }

/**
 * Decomposes a fused_elementwise element body: each body node goes through its own op's export
 * rule (ONNX broadcasts as the body's loop does); literals become constants; inputs of another
 * dtype are cast to the output's first, as the CPU loop reads them.
 */
function fusedElementwise(w: OnnxWriter, n: Node, ins: readonly string[]): string[] {
  const body = n.regions[0];
  const dtype = outType(n).dtype;
  const names = new Map<Value, string>(body.args.map((a, i) => {
    const d = tensorOf(n, i).dtype;
    return [a, d === dtype || dtype === 'bool' ? ins[i] : cast(w, ins[i], dtype)];
  }));
  for (const b of body.nodes) {
    if (b.op === 'constant') { names.set(b.outputs[0], w.scalar(dtype === 'bool' ? 'float32' : dtype, b.attrs.value as number)); continue; }
    const rule = EXPORT_RULES[b.op];
    if (!rule) throw new OnnxExportError(`exportOnnx: no ONNX form for the elementwise op '${b.op}' in a fused_elementwise body`);
    names.set(b.outputs[0], rule(w, b, b.inputs.map((v) => names.get(v!)!))[0]);
  }
  return [names.get(body.yields[0])!];
}

export const EXPORT_RULES: Readonly<Record<string, ExportRule>> = {
  add: arith('Add'), sub: arith('Sub'), mul: arith('Mul'), div: arith('Div'), pow: arith('Pow'),
  maximum: arith('Max'), minimum: arith('Min'),
  eq: compare('Equal'), ne: notOf('Equal'), lt: compare('Less'), le: compare('LessOrEqual'), gt: compare('Greater'), ge: compare('GreaterOrEqual'),
  clone: same('Identity'), neg: same('Neg'), exp: same('Exp'), log: same('Log'), relu: same('Relu'),
  sqrt: same('Sqrt'), rsqrt: (w, _n, ins) => [unary(w, 'rsqrt', ins[0])], sin: same('Sin'), cos: same('Cos'),
  abs: same('Abs'), sign: same('Sign'), erf: same('Erf'), sigmoid: same('Sigmoid'), tanh: same('Tanh'),
  hardswish: (w, _n, ins) => [unary(w, 'hardswish', ins[0])],
  logical_not: (w, n, ins) => [unary(w, 'logical_not', ins[0], tensorOf(n, 0).dtype)],
  clamp: (w, n, ins) => {
    const { min, max } = n.attrs as { min: number | null; max: number | null };
    const dt = outType(n).dtype;
    const x = tensorOf(n, 0).dtype === dt ? ins[0] : cast(w, ins[0], dt);
    if (min !== null && max !== null && min > max) return [w.node1('Max', [w.node1('Mul', [x, w.scalar(dt, 0)]), w.scalar(dt, max)])];
    return [w.node1('Clip', [x, min === null ? '' : w.scalar(dt, min), max === null ? '' : w.scalar(dt, max)])];
  },
  where: (w, n, ins) => {
    const to = outType(n).dtype;
    const [a, b] = [1, 2].map((i) => (tensorOf(n, i).dtype === to ? ins[i] : cast(w, ins[i], to)));
    return [w.node1('Where', [tensorOf(n, 0).dtype === 'bool' ? ins[0] : cast(w, ins[0], 'bool'), a, b])];
  },
  cast: (w, n, ins) => [cast(w, ins[0], n.attrs.dtype as DType)],
  dropout: (w, n, ins) => {
    if (n.attrs.training) throw new OnnxExportError('exportOnnx: dropout in training mode has no deterministic ONNX form; call model.eval() before exporting');
    return [w.node1('Identity', [ins[0]])];
  },
  sum: reduce('ReduceSum', true), amax: reduce('ReduceMax', false), amin: reduce('ReduceMin', false), prod: reduce('ReduceProd', false),
  argmax: argReduce('ArgMax'), argmin: argReduce('ArgMin'),
  cumsum: (w, n, ins) => [w.node1('CumSum', [ins[0], w.constant(ONNX_DTYPE.INT64, [], [norm(n.attrs.dim as number, rank(n))])])],
  reshape: (w, n, ins) => [w.node1('Reshape', [ins[0], w.shape(outType(n).shape)])],
  expand: (w, n, ins) => [w.node1('Expand', [ins[0], w.shape(outType(n).shape)])],
  permute: (w, n, ins) => [w.node1('Transpose', [ins[0]], { perm: (n.attrs.dims as number[]).map((d) => norm(d, rank(n))) })],
  slice: (w, n, ins) => {
    const a = n.attrs as { dim: number; start: number | null; end: number | null; step: number };
    return [slice1(w, ins[0], norm(a.dim, rank(n)), a.start, a.end, a.step)];
  },
  cat: (w, n, ins) => [w.node1('Concat', ins, { axis: norm(n.attrs.dim as number, outType(n).shape.length) })],
  flip: (w, n, ins) => {
    const dims = (n.attrs.dims as number[]).map((d) => norm(d, rank(n)));
    return [w.node1('Slice', [ins[0], w.int64s(dims.map(() => -1)), w.int64s(dims.map(() => -INT64_MAX)), w.int64s(dims), w.int64s(dims.map(() => -1))])];
  },
  index_select: (w, n, ins) => [w.node1('Gather', [ins[0], ins[1]], { axis: norm(n.attrs.dim as number, rank(n)) })],
  index_add: (w, n, ins) => [indexAdd(w, n, ins)],
  gather: (w, n, ins) => [w.node1('GatherElements', [ins[0], ins[1]], { axis: norm(n.attrs.dim as number, rank(n)) })],
  scatter_add: (w, n, ins) => {
    w.requireOpset(16, 'scatter_add (ScatterElements with reduction)');
    return [w.node1('ScatterElements', ins, { axis: norm(n.attrs.dim as number, rank(n)), reduction: 'add' })];
  },
  tril: (w, n, ins) => { w.requireOpset(14, 'tril (Trilu)'); return [w.node1('Trilu', [ins[0], w.constant(ONNX_DTYPE.INT64, [], [n.attrs.diagonal as number])], { upper: 0 })]; },
  triu: (w, n, ins) => { w.requireOpset(14, 'triu (Trilu)'); return [w.node1('Trilu', [ins[0], w.constant(ONNX_DTYPE.INT64, [], [n.attrs.diagonal as number])], { upper: 1 })]; },
  matmul: same('MatMul'),
  linear: (w, n, ins) => [linear(w, n, ins)],
  conv2d: (w, n, ins) => [conv(w, n, ins)],
  conv_transpose2d: (w, n, ins) => {
    const a = n.attrs as { stride: number[]; padding: number[]; dilation: number[]; groups: number; output_padding: number[] };
    const inputs = ins[2] ? [ins[0], ins[1], ins[2]] : [ins[0], ins[1]];
    return [w.node1('ConvTranspose', inputs, { strides: a.stride, pads: a.padding, dilations: a.dilation, group: a.groups, output_padding: a.output_padding })];
  },
  max_pool2d: (w, n, ins) => {
    const a = n.attrs as { kernel_size: number[]; stride: number[]; padding: number[]; dilation: number[]; ceil_mode: boolean };
    // The second result (argmax indices, Kiln's layout) is checked unused by the exporter.
    return [maxPool(w, ins[0], a.kernel_size, a.stride, a.padding, a.dilation, a.ceil_mode), ''];
  },
  avg_pool2d: (w, n, ins) => {
    const a = n.attrs as { kernel_size: number[]; stride: number[]; padding: number[]; ceil_mode: boolean; count_include_pad: boolean; divisor_override: number | null };
    if (a.divisor_override !== null) throw new OnnxExportError('exportOnnx: avg_pool2d with divisor_override has no ONNX form');
    return [w.node1('AveragePool', [ins[0]], {
      kernel_shape: a.kernel_size, strides: a.stride, pads: [a.padding[0], a.padding[1], a.padding[0], a.padding[1]],
      ceil_mode: a.ceil_mode ? 1 : 0, count_include_pad: a.count_include_pad ? 1 : 0,
    })];
  },
  adaptive_avg_pool2d: adaptivePool('GlobalAveragePool', 'AveragePool'),
  adaptive_max_pool2d: (w, n, ins) => [adaptivePool('GlobalMaxPool', 'MaxPool')(w, n, ins)[0], ''],
  batch_norm: (w, n, ins) => {
    if (ins[3] && ins[4]) return [w.node1('BatchNormalization', [ins[0], ins[3], ins[4], ins[1], ins[2]], { epsilon: float(n.attrs.eps as number) })];
    // Without weight or bias (layer norm's form; C may be symbolic): (x − mean)/√(var + eps)·w + b,
    // with the [C] vectors unsqueezed to broadcast over dim 1.
    const r = rank(n);
    const axes = w.int64s([0, ...Array.from({ length: r - 2 }, (_, i) => i + 2)]);
    const perChannel = (v: string) => w.node1('Unsqueeze', [v, axes]);
    const std = w.node1('Sqrt', [w.node1('Add', [perChannel(ins[2]), w.scalar('float32', n.attrs.eps as number)])]);
    let y = w.node1('Div', [w.node1('Sub', [ins[0], perChannel(ins[1])]), std]);
    if (ins[3]) y = w.node1('Mul', [y, perChannel(ins[3])]);
    if (ins[4]) y = w.node1('Add', [y, perChannel(ins[4])]);
    return [y];
  },
  batch_norm_stats: (w, n, ins) => {
    // Mean and biased variance over every dim but 1, as [C] (the other dims reduce to 1).
    const axes = Array.from({ length: rank(n) }, (_, i) => i).filter((i) => i !== 1);
    const mean = w.node1('ReduceMean', [ins[0]], { axes, keepdims: 1 });
    const d = w.node1('Sub', [ins[0], mean]);
    const variance = w.node1('ReduceMean', [w.node1('Mul', [d, d])], { axes, keepdims: 1 });
    const flat = w.int64s([-1]);
    return [w.node1('Reshape', [mean, flat]), w.node1('Reshape', [variance, flat])];
  },
  floor: rounding('Floor'), ceil: rounding('Ceil'), round: rounding('Round'), // ONNX Round takes halves to even, as Kiln
  trunc: (w, n, ins) => [isFloat(n) ? w.node1('Where', [w.node1('Less', [ins[0], w.scalar(outType(n).dtype, 0)]), w.node1('Ceil', [ins[0]]), w.node1('Floor', [ins[0]])]) : ins[0]],
  log1p: (w, n, ins) => [w.node1('Log', [w.node1('Add', [ins[0], w.scalar(outType(n).dtype, 1)])])],
  expm1: (w, n, ins) => [w.node1('Sub', [w.node1('Exp', [ins[0]]), w.scalar(outType(n).dtype, 1)])],
  isnan: (w, n, ins) => [isFloat(n) ? w.node1('IsNaN', ins) : w.node1('Not', [w.node1('Equal', [ins[0], ins[0]])])],
  isfinite: (w, n, ins) => [isFloat(n) ? w.node1('Not', [w.node1('Or', [w.node1('IsNaN', ins), w.node1('IsInf', ins)])]) : w.node1('Equal', [ins[0], ins[0]])],
  sort: (w, n, ins) => {
    // TopK over the whole dim; ONNX breaks ties by the lower index first, as Kiln's stable sort.
    const r = rank(n), dim = norm(n.attrs.dim as number, r);
    const size = tensorOf(n, 0).shape[dim];
    const k = typeof size === 'number' ? w.int64s([size]) : w.node1('Gather', [w.node1('Shape', [ins[0]]), w.int64s([dim])]);
    const [values, indices] = w.node('TopK', [ins[0], k], 2, { axis: dim, largest: n.attrs.descending ? 1 : 0, sorted: 1 });
    return [values, cast(w, indices, 'int32')];
  },
  fused_elementwise: fusedElementwise,
  fused_linear: (w, n, ins) => {
    const y = linear(w, n, ins);
    const act = n.attrs.activation as string;
    return [act === 'none' ? y : unary(w, act, y)];
  },
  fused_conv2d: (w, n, ins) => {
    if (n.attrs.layout) throw new OnnxExportError(`exportOnnx: fused_conv2d with layout="${String(n.attrs.layout)}" stores a packed weight; compile the model again (it stores the OIHW weight)`);
    let y = conv(w, n, ins);
    const act = n.attrs.activation as string;
    if (act !== 'none') y = unary(w, act, y);
    const pool = n.attrs.pool as { kernel_size: number[]; stride: number[] } | null;
    return [pool ? maxPool(w, y, pool.kernel_size, pool.stride) : y];
  },
};

/** Why the ops without an entry have no ONNX form, for the exporter's error. */
export const NO_ONNX_FORM: Readonly<Record<string, string>> = {
  uniform: 'draws random numbers (dropout in training mode, rand in forward); ONNX Random* ops cannot reproduce Kiln\'s generator: call model.eval() or pass the noise as an input',
  normal: 'draws random numbers (randn in forward); ONNX Random* ops cannot reproduce Kiln\'s generator: pass the noise as an input',
  masked_select: 'has a data-dependent output size that this exporter does not write yet',
  masked_scatter: 'has no ONNX form in this exporter yet',
  slice_backward: 'is a gradient op: export the inference graph (model.eval(), no backward)',
  avg_pool2d_backward: 'is a gradient op: export the inference graph (model.eval(), no backward)',
  adaptive_avg_pool2d_backward: 'is a gradient op: export the inference graph (model.eval(), no backward)',
  conv2d_weight_grad: 'is a gradient op: export the inference graph (model.eval(), no backward)',
};

export { unary, cast };
