// Op family 'fused': kernels the optimizing compiler (compiler/src/passes) creates by fusion; a
// traced or eager program never produces them. Invariant: each fused op computes exactly what
// the chain of primitive ops it replaces computes (the pass tests check it numerically), so a
// graph that holds them runs in the runtime with no executor change.
//
//   fused_elementwise {program}    a chain of elementwise ops in ONE loop over the output
//   fused_conv2d {…conv, activation, pool}  conv2d + bias, then the activation over the fresh
//                                  output buffer (no second tensor); with `pool`, the conv runs
//                                  a tile of ≤ TILE floats (some images, or some channels of one)
//                                  at a time into scratch that is activated and max-pooled, so
//                                  the full-size conv output never exists
//   fused_linear {activation}      linear + bias, then the activation over its fresh output
//   fused_conv2d {…, layout="winograd4x4"}  only in files written before issue 14 (the
//                                  prepack-weights pass): the weight as Winograd F(4×4, 3×3)
//                                  tiles in float32 hi/lo pairs [Cout, 36, 2, C]. Files now keep
//                                  plain OIHW weights and devices pack them at load time; the CPU
//                                  kernel unpacks such an old weight back to OIHW
//                                  (kernels/winograd4.ts) and runs the plain path
//
// A program is a list of instructions `[op, arg, arg?]`; an arg is `"x<k>"` (input k), `"t<k>"`
// (the result of instruction k, k earlier) or a number literal; the op is one of the
// elementwise op names below; the result is the last instruction's. Example: relu(x0·2 + x1) is
// `[["mul","x0",2], ["add","t0","x1"], ["relu","t1"]]`. Which ops a program may use, what each
// computes and which activations an epilogue may apply all come from the op entries
// (op-queries.ts: isFusable, scalarOf, epilogueActivations). Everything is float32, computed in
// double precision per element and rounded once.

import * as z from 'zod';
import { defineOp, getOp, outputBuffer, type CpuTensor, type KernelContext } from '../op-def.js';
import { compileFormulaLoop, type Expr } from '../scalar.js';
import { broadcastStrides } from '../kernels/broadcast.js';
import { reluLoop } from './elementwise.js';
import { epilogueActivations, fusableOps, isFusable, isNonDecreasing, scalarOf } from '../op-queries.js';
import { broadcastShapes, fmtShape, OpError, type Dim, type TensorType } from '../shape.js';
import { primitivesOf, type CpuPrimitives } from '../kernels/primitives.js';
import { winograd4Applies, winograd4Unpack, WINOGRAD4_TILE } from '../kernels/winograd4.js';
import { conv2dKernel } from './conv.js';

export { winograd4Applies, winograd4Unpack, winograd4Weights } from '../kernels/winograd4.js';

const arg = z.union([z.string().regex(/^[xt]\d+$/), z.number()]);
const instruction = z.array(z.union([z.string(), z.number()])).min(2).max(3);
const programAttrs = z.object({ program: z.array(instruction).min(1) }).strict();

type Program = z.output<typeof programAttrs>['program'];

/** Checks a program against `nInputs` inputs; throws OpError naming the bad instruction. */
function checkProgram(program: Program, nInputs: number): void {
  program.forEach((ins, k) => {
    const [op, ...args] = ins;
    const where = `instruction ${k} ${JSON.stringify(ins)}`;
    const arity = typeof op === 'string' && isFusable(op) ? getOp(op).inputs.length : 0;
    if (!arity) throw new OpError('fused_elementwise', `${where}: '${String(op)}' is not a fusable elementwise op (${fusableOps().join(', ')})`);
    if (args.length !== arity) throw new OpError('fused_elementwise', `${where}: '${op}' takes ${arity} argument(s)`);
    for (const a of args) {
      if (!arg.safeParse(a).success) throw new OpError('fused_elementwise', `${where}: argument ${JSON.stringify(a)} must be "x<k>", "t<k>" or a number`);
      if (typeof a === 'number') continue;
      const i = Number(a.slice(1));
      if (a[0] === 'x' ? i >= nInputs : i >= k) throw new OpError('fused_elementwise', `${where}: ${a} refers to ${a[0] === 'x' ? `input ${i} of ${nInputs}` : 'a later instruction'}`);
    }
  });
}

function floatInputs(op: string, inputs: readonly (TensorType | null)[]): TensorType[] {
  return inputs.map((t, i) => {
    if (!t) throw new OpError(op, `input ${i} is required`);
    if (t.dtype !== 'float32') throw new OpError(op, `input ${i} must be float32, got ${t.dtype}${fmtShape(t.shape)}`);
    return t;
  });
}

/** The program as one formula over its inputs: instruction k is a call of its op's entry scalar. */
function programExpr(program: Program): Expr {
  const temps: Expr[] = [];
  const operand = (a: string | number): Expr =>
    (typeof a === 'number' ? { kind: 'num', value: a } : a[0] === 'x' ? { kind: 'arg', index: Number(a.slice(1)) } : temps[Number(a.slice(1))]);
  for (const [op, ...args] of program) temps.push({ kind: 'call', op: String(op), args: args.map(operand), attrs: {} });
  return temps[temps.length - 1];
}

type ProgramLoop = ReturnType<typeof compileFormulaLoop>;
/** Compiled programs by text and input count (a model has a few; the cap bounds hostile files). */
const LOOPS = new Map<string, ProgramLoop>();
const MAX_LOOPS = 512;

function programLoop(program: Program, nIn: number): ProgramLoop {
  const key = `${nIn}:${JSON.stringify(program)}`;
  let loop = LOOPS.get(key);
  if (!loop) {
    loop = compileFormulaLoop(programExpr(program), nIn, getOp);
    if (LOOPS.size >= MAX_LOOPS) LOOPS.delete(LOOPS.keys().next().value!);
    LOOPS.set(key, loop);
  }
  return loop;
}

/** `t` broadcast to the full `out` shape (a new buffer; `t` itself when it already has every element). */
function fullSize(t: CpuTensor, out: readonly number[], n: number): ArrayLike<number> {
  if (t.data.length === n) return t.data;
  const src = t.data, dst = new Float32Array(n), strides = broadcastStrides(t.shape, out), coord = new Int32Array(out.length);
  for (let i = 0, off = 0; i < n; i++) {
    dst[i] = src[off];
    for (let d = out.length - 1; d >= 0; d--) {
      if (++coord[d] < out[d]) { off += strides[d]; break; }
      coord[d] = 0;
      off -= strides[d] * (out[d] - 1);
    }
  }
  return dst;
}

/**
 * Runs `program` over broadcast float inputs into a buffer of shape `out` (`dst`, else a new one):
 * the program compiled once into block-wise loops (compileFormulaLoop: each instruction one tight
 * loop in double precision, rounded once), broadcast inputs expanded first. A block of every input
 * is read before that block is written, so `dst` may be a same-sized input.
 */
function runProgram(program: Program, inputs: readonly CpuTensor[], out: readonly number[], dst?: Float32Array): Float32Array {
  const n = out.reduce((a, d) => a * d, 1);
  dst ??= new Float32Array(n);
  programLoop(program, inputs.length)(inputs.map((t) => fullSize(t, out, n)), dst, n);
  return dst;
}

export const fused_elementwise = defineOp({
  name: 'fused_elementwise',
  doc: 'a chain of float32 elementwise ops (attribute program) evaluated in one loop over the broadcast output',
  inputs: ['...inputs'], attrs: programAttrs,
  infer(inputs, { program }) {
    const ts = floatInputs('fused_elementwise', inputs);
    checkProgram(program, ts.length);
    let shape: Dim[] = [];
    for (const t of ts) shape = broadcastShapes('fused_elementwise', shape, t.shape);
    return [{ dtype: 'float32', shape }];
  },
  cpu(inputs, { program }, ctx) {
    const ts = inputs.map((t, i) => {
      if (!t) throw new OpError('fused_elementwise', `input ${i} is required`);
      return t;
    });
    checkProgram(program, ts.length);
    let shape: Dim[] = [];
    for (const t of ts) shape = broadcastShapes('fused_elementwise', shape, t.shape);
    const out = shape as number[];
    const dst = outputBuffer(ctx, 0, 'float32', out.reduce((a, d) => a * d, 1)) as Float32Array;
    return [{ data: runProgram(program, ts, out, dst), shape: out, dtype: 'float32' }];
  },
  grad: null,
});

/** 'none' or an op whose entry allows it as an epilogue (OpDef.epilogue). */
const activation = z.string().default('none').refine((a) => a === 'none' || epilogueActivations().includes(a), {
  message: 'activation must be none or an op whose entry allows it as an epilogue (OpDef.epilogue)',
});

/** Applies `act` in place to a buffer the kernel just produced (never to an input). */
function applyActivation(data: Float32Array, act: string): void {
  if (act === 'none') return;
  // relu, the common case: the entry's own branch-free loop (in place is safe: element by element).
  if (act === 'relu') { reluLoop(data, data); return; }
  const f = scalarOf(act);
  for (let i = 0; i < data.length; i++) data[i] = f(data[i]);
}

const int = z.number().int();
const pos2 = z.tuple([int.min(1), int.min(1)]);
const fusedConvAttrs = z.object({
  stride: pos2.default([1, 1]),
  padding: z.tuple([int.min(0), int.min(0), int.min(0), int.min(0)]).default([0, 0, 0, 0]),
  dilation: pos2.default([1, 1]),
  groups: int.min(1).default(1),
  activation,
  /** Max pooling (no padding, no dilation, floor mode) applied to the activated output; null for none. */
  pool: z.union([z.null(), z.object({ kernel_size: pos2, stride: pos2 }).strict()]).default(null),
  /**
   * Absent (what the compiler writes): the weight is OIHW [Cout, C/G, kh, kw]. "winograd4x4": read
   * from files written before issue 14 only, the weight as hi/lo Winograd tiles [Cout, 36, 2, C].
   */
  layout: z.enum(['winograd4x4']).optional(),
}).strict();
type FusedConvAttrs = z.output<typeof fusedConvAttrs>;
/** The OIHW weight type a packed weight stands for; throws OpError when the geometry is wrong. */
function unpackedWeightType(w: TensorType | null, a: FusedConvAttrs): TensorType | null {
  if (!a.layout || !w) return w;
  const [Cout, T, two, C] = w.shape;
  if (w.shape.length !== 4 || T !== WINOGRAD4_TILE || two !== 2) throw new OpError('fused_conv2d', `layout="${a.layout}" needs a packed weight [Cout, ${WINOGRAD4_TILE}, 2, C], got ${fmtShape(w.shape)}; this layout comes only from files written before issue 14: compile the model again, which stores the OIHW weight`);
  if (!winograd4Applies({ G: a.groups, win: { kh: 3, kw: 3, sh: a.stride[0], sw: a.stride[1], dh: a.dilation[0], dw: a.dilation[1], pt: 0, pl: 0 } })) {
    throw new OpError('fused_conv2d', `layout="${a.layout}" needs stride [1,1], dilation [1,1] and groups 1, got stride ${fmtShape(a.stride)}, dilation ${fmtShape(a.dilation)}, groups ${a.groups}`);
  }
  return { dtype: w.dtype, shape: [Cout, C, 3, 3] };
}

/** Output size of a floor-mode max pool along one dim. */
const pooled = (size: number, k: number, s: number) => Math.floor((size - k) / s) + 1;

function fusedConvType(inputs: readonly (TensorType | null)[], a: FusedConvAttrs): TensorType {
  const { activation: _a, pool, layout: _l, ...conv } = a;
  const [t] = getOp('conv2d').infer([inputs[0], unpackedWeightType(inputs[1], a), inputs[2] ?? null], conv);
  if (!pool) return t;
  if (!isNonDecreasing(a.activation)) throw new OpError('fused_conv2d', `a fused pool needs a non-decreasing activation (it pools before it activates), got '${a.activation}'`);
  const [N, C, H, W] = t.shape;
  if (typeof H !== 'number' || typeof W !== 'number') throw new OpError('fused_conv2d', `a fused pool needs concrete spatial dims, got ${fmtShape(t.shape)}`);
  if (a.groups !== 1) throw new OpError('fused_conv2d', 'a fused pool needs groups=1');
  const OH = pooled(H, pool.kernel_size[0], pool.stride[0]), OW = pooled(W, pool.kernel_size[1], pool.stride[1]);
  if (OH < 1 || OW < 1) throw new OpError('fused_conv2d', `pool ${fmtShape(pool.kernel_size)} is larger than the conv output ${fmtShape(t.shape)}`);
  return { dtype: 'float32', shape: [N, C, OH, OW] };
}

/**
 * Floats of conv output one pooled step may hold (the kernel's scratch tile, 1 MiB, whatever the
 * batch): several whole images when they fit, so the conv primitive's per-call setup (copies
 * into the kernel memory) is shared; otherwise a block of output channels of one image.
 */
const TILE = 1 << 18;

/**
 * The OIHW weight fused_conv2d computes with: its input, or a hi/lo weight of an old file
 * (layout="winograd4x4") unpacked back, so every weight runs the device's conv primitive.
 */
function oihwWeight(w: CpuTensor, a: FusedConvAttrs): CpuTensor {
  if (!a.layout) return w;
  const shape = unpackedWeightType({ dtype: 'float32', shape: w.shape }, a)!.shape as number[];
  return { dtype: 'float32', shape, data: winograd4Unpack(w.data as Float32Array, shape[0], shape[1]) };
}

/** conv2d + activation + max pool, a tile of images (or of one image's channels) at a time. */
function convActPool(x: CpuTensor, w: CpuTensor, bias: CpuTensor | null, a: FusedConvAttrs, out: readonly number[], prims: CpuPrimitives, ctx: KernelContext | undefined): Float32Array {
  const pool = a.pool!;
  const [N, C, H, W] = x.shape, [Cout, , kh, kw] = w.shape;
  const [conv] = getOp('conv2d').infer([{ dtype: 'float32', shape: x.shape }, { dtype: 'float32', shape: w.shape }, null], { stride: a.stride, padding: a.padding, dilation: a.dilation, groups: 1 });
  const CH = conv.shape[2] as number, CW = conv.shape[3] as number, [, , PH, PW] = out;
  const win = { kh, kw, sh: a.stride[0], sw: a.stride[1], pt: a.padding[0], pl: a.padding[1], dh: a.dilation[0], dw: a.dilation[1] };
  const K = w.data.length / Cout, plane = CH * CW, image = C * H * W;
  const images = Math.max(1, Math.floor(TILE / (Cout * plane)));
  const block = images > 1 ? Cout : Math.max(1, Math.min(Cout, Math.floor(TILE / plane)));
  const X = x.data as Float32Array, Wd = w.data as Float32Array, B = bias ? bias.data as Float32Array : null;
  // The offered result buffer (never an input's for this op) when it fits.
  const dst = outputBuffer(ctx, 0, 'float32', N * Cout * PH * PW) as Float32Array;
  // max_pool2d's kernel (the device's primitive); the winners' indices it also writes go unused.
  const poolWin = { kh: pool.kernel_size[0], kw: pool.kernel_size[1], sh: pool.stride[0], sw: pool.stride[1], ph: 0, pw: 0, dh: 1, dw: 1 };
  const scratch = new Int32Array((images > 1 ? images * Cout : block) * PH * PW);
  const tiles = new Float32Array((images > 1 ? Math.min(images, N) * Cout : block) * plane);
  for (let n0 = 0; n0 < N; n0 += images) {
    const nb = Math.min(images, N - n0);
    const xs = X.subarray(n0 * image, (n0 + nb) * image);
    for (let c0 = 0; c0 < Cout; c0 += block) {
      const cb = Math.min(block, Cout - c0);
      // A block of output channels is one slice of the weight (a pinned constant's slice stays
      // pinned for the device's primitive, see CpuPrimitives).
      const ws = Wd.subarray(c0 * K, (c0 + cb) * K), bs = B ? B.subarray(c0, c0 + cb) : null;
      // Every tile lands in one buffer, allocated once (the conv overwrites all of it).
      const tile = prims.conv2d(xs, ws, bs, { N: nb, C, H, W, Cout: cb, G: 1, OH: CH, OW: CW, win }, { out: tiles.subarray(0, nb * cb * plane) });
      // tile is [nb, cb, CH, CW]: either whole images (cb = Cout) or channels c0… of one image, so
      // its pooled planes are the contiguous output planes from (n0, c0) on.
      const planes = nb * cb, at = (n0 * Cout + c0) * PH * PW;
      prims.maxPool(tile, planes, CH, CW, poolWin, PH, PW, dst.subarray(at, at + planes * PH * PW), scratch.subarray(0, planes * PH * PW));
    }
  }
  // The activation is non-decreasing (checked by the shape rule), so act(max(window)) = max(act(window)), NaN included:
  // activating the pooled output touches 1/(window size) of the elements.
  applyActivation(dst, a.activation);
  return dst;
}

export const fused_conv2d = defineOp({
  name: 'fused_conv2d',
  doc: 'conv2d(input, weight, bias?) then an epilogue activation (none, or an op allowing it: relu, sigmoid, tanh, …) and optional max pool, in its output loop',
  inputs: ['input', 'weight', 'bias?'], attrs: fusedConvAttrs,
  infer(inputs, a) { return [fusedConvType(inputs, a)]; },
  cpu(inputs, a, ctx) {
    const t = fusedConvType(inputs.map((i) => (i ? { dtype: i.dtype, shape: i.shape } : null)), a);
    const [x, w0, b] = inputs, w = oihwWeight(w0!, a);
    if (a.pool) {
      return [{ data: convActPool(x!, w, b ?? null, a, t.shape as number[], primitivesOf(ctx), ctx), shape: t.shape as number[], dtype: 'float32' }];
    }
    const { activation: act, pool: _p, layout: _l, ...conv } = a;
    // relu runs in the conv primitive's epilogue; any other activation over its output after.
    const y = conv2dKernel(x!, w, b, conv, ctx, act === 'relu');
    if (act !== 'relu') applyActivation(y.data as Float32Array, act);
    return [y];
  },
  grad: null,
});

export const fused_linear = defineOp({
  name: 'fused_linear',
  doc: 'linear(input, weight, bias?) followed by an epilogue activation (none, or an op allowing it: relu, sigmoid, tanh, …) in its output loop',
  inputs: ['input', 'weight', 'bias?'], attrs: z.object({ activation }).strict(),
  infer(inputs) { return getOp('linear').infer(inputs, {}); },
  cpu(inputs, { activation: act }, ctx) {
    const [y] = getOp('linear').cpu(inputs, {}, ctx);
    applyActivation(y.data as Float32Array, act);
    return [y];
  },
  grad: null,
});
