// Op family 'fused': kernels the optimizing compiler (compiler/src/passes) creates by fusion; a
// traced or eager program never produces them. Invariant: each fused op computes exactly what
// the chain of primitive ops it replaces computes (the pass tests check it numerically), so a
// graph that holds them runs in the runtime with no executor change.
//
//   fused_elementwise ({body})     a region of elementwise ops run in ONE loop over the output
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
// fused_elementwise owns one region, its ELEMENT BODY (as MLIR's linalg.generic holds its body):
// the block arguments are one element of each input (`f32[]`, broadcast to the output), the body
// holds ordinary elementwise nodes (add, mul, relu, sigmoid, erf… — fusable entries, see
// op-queries.ts isFusable) and float32 literal constants, reads nothing from outside, and yields
// the result element. relu(x0·2 + x1):
//
//   %y = fused_elementwise(%x, %b) ({
//   ^(%e0: f32[], %e1: f32[]):
//     %c = constant {dtype="float32", value=2} : f32[]
//     %m = mul(%e0, %c) : f32[]
//     %s = add(%m, %e1) : f32[]
//     %r = relu(%s) : f32[]
//     yield %r
//   }) : f32[N,4]
//
// The verifier types each body node with its own entry; this entry checks the body's form
// (checkBody); the CPU kernel compiles the body from the nodes' scalars (ir-spec/src/scalar.ts),
// the WGSL generator from the same entries. Everything is float32, computed in double precision
// per element and rounded once. Files written before issue 13 stored the body as a `program`
// attribute (a list of `[op, arg, arg?]`); the decoder turns one into a body (programToBody).

import * as z from 'zod';
import { defineOp, getOp, outputBuffer, type CpuTensor, type KernelContext } from '../op-def.js';
import { compileFormulaLoop, type Expr } from '../scalar.js';
import { Block, Node, Value, type Attrs } from '../ir/graph.js';
import { tensorType, typeToString, type IRType } from '../ir/types.js';
import { broadcastStrides } from '../kernels/broadcast.js';
import { reluLoop } from './elementwise.js';
import { epilogueActivations, fusableOps, isFusable, isNonDecreasing, scalarOf } from '../op-queries.js';
import { broadcastShapes, fmtShape, numel, OpError, type Dim, type TensorType } from '../shape.js';
import { primitivesOf, type CpuPrimitives } from '../kernels/primitives.js';
import { winograd4Applies, winograd4Unpack, WINOGRAD4_TILE } from '../kernels/winograd4.js';
import { conv2dKernel } from './conv.js';
import { linearKernel, linearWork } from './linalg.js';

export { winograd4Applies, winograd4Unpack, winograd4Weights } from '../kernels/winograd4.js';

// ---- fused_elementwise -------------------------------------------------------------------------

/** The type of one element: body arguments, body node results and the yield are `f32[]`. */
const ELEMENT = tensorType('float32', []);
const isElement = (t: IRType) => t.kind === 'tensor' && t.dtype === 'float32' && t.shape.length === 0;
const bodyError = (msg: string) => new OpError('fused_elementwise', msg);

/**
 * Checks `regions` as the element body of a node with `nInputs` inputs (see the header); throws
 * OpError naming the body node. Each body node's own typing is the verifier's (its entry's rule).
 */
function checkBody(regions: readonly Block[], nInputs: number): Block {
  if (regions.length !== 1) throw bodyError(`takes one region (its element body), got ${regions.length}`);
  const body = regions[0];
  if (body.args.length !== nInputs) throw bodyError(`its body takes ${body.args.length} argument(s) but the node has ${nInputs} input(s); the body's arguments are one element of each input`);
  body.args.forEach((a, i) => {
    if (!isElement(a.type)) throw bodyError(`body argument ${i} is ${typeToString(a.type)}; body arguments are f32[] (one element of input ${i})`);
  });
  const local = new Set<Value>(body.args);
  body.nodes.forEach((n, k) => {
    const where = `body node ${k} (${n.op})`;
    if (n.regions.length) throw bodyError(`${where}: a body node owns no regions`);
    if (n.op === 'constant') {
      if (typeof n.attrs.value !== 'number' || n.attrs.dtype !== 'float32') throw bodyError(`${where}: a body constant must be a float32 literal {dtype="float32", value=…}`);
    } else if (!isFusable(n.op)) {
      throw bodyError(`${where}: '${n.op}' is not a fusable elementwise op (${fusableOps().join(', ')})`);
    }
    n.inputs.forEach((v, i) => {
      if (!v || !local.has(v)) throw bodyError(`${where}: input ${i} is not a body argument or an earlier body node's result; a body reads nothing else (make an outer value an input of the fused node)`);
    });
    if (n.outputs.length !== 1 || !isElement(n.outputs[0].type)) throw bodyError(`${where}: a body node gives one f32[] result`);
    local.add(n.outputs[0]);
  });
  const [y] = body.yields;
  if (body.yields.length !== 1 || !local.has(y)) throw bodyError(`its body must yield one value computed in it (an argument or a body node's result), got ${body.yields.length}`);
  return body;
}

/** The body as one formula over its arguments: each node is a call of its entry's scalar. */
function bodyExpr(body: Block): Expr {
  const exprs = new Map<Value, Expr>(body.args.map((a, index) => [a, { kind: 'arg', index }]));
  for (const n of body.nodes) {
    exprs.set(n.outputs[0], n.op === 'constant'
      ? { kind: 'num', value: n.attrs.value as number }
      : { kind: 'call', op: n.op, args: n.inputs.map((v) => exprs.get(v!)!), attrs: n.attrs });
  }
  return exprs.get(body.yields[0])!;
}

type BodyLoop = ReturnType<typeof compileFormulaLoop>;
/** Each body's compiled loop (a Block is immutable; a loaded model keeps its blocks). */
const LOOPS = new WeakMap<Block, BodyLoop>();

function bodyLoop(body: Block): BodyLoop {
  let loop = LOOPS.get(body);
  if (!loop) {
    loop = compileFormulaLoop(bodyExpr(body), body.args.length, getOp);
    LOOPS.set(body, loop);
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

function floatInputs(op: string, inputs: readonly (TensorType | null)[]): TensorType[] {
  return inputs.map((t, i) => {
    if (!t) throw new OpError(op, `input ${i} is required`);
    if (t.dtype !== 'float32') throw new OpError(op, `input ${i} must be float32, got ${t.dtype}${fmtShape(t.shape)}`);
    return t;
  });
}

export const fused_elementwise = defineOp({
  name: 'fused_elementwise',
  doc: 'a region of float32 elementwise ops (its element body) evaluated in one loop over the broadcast output',
  inputs: ['...inputs'], attrs: z.object({}).strict(), elementBody: true,
  infer(inputs, _attrs, regions) {
    const ts = floatInputs('fused_elementwise', inputs);
    if (regions) checkBody(regions, ts.length);
    let shape: Dim[] = [];
    for (const t of ts) shape = broadcastShapes('fused_elementwise', shape, t.shape);
    return [{ dtype: 'float32', shape }];
  },
  /**
   * The body compiled once into block-wise loops (compileFormulaLoop: each body node one tight
   * loop in double precision, rounded once at the store), broadcast inputs expanded first. A
   * block of every input is read before that block is written, so `ctx.out` may be a same-sized input.
   */
  cpu(inputs, _attrs, ctx) {
    const ts = inputs.map((t, i) => {
      if (!t) throw new OpError('fused_elementwise', `input ${i} is required`);
      return t;
    });
    if (!ctx?.regions) throw bodyError('needs its element body (KernelContext.regions); run it through the executor or pass { regions: node.regions }');
    // A body already compiled was checked then (its arguments still have to match the inputs).
    const [known] = ctx.regions;
    const body = ctx.regions.length === 1 && LOOPS.has(known) && known.args.length === ts.length ? known : checkBody(ctx.regions, ts.length);
    let shape: Dim[] = [];
    for (const t of ts) shape = broadcastShapes('fused_elementwise', shape, t.shape);
    const out = shape as number[], n = out.reduce((a, d) => a * d, 1);
    const dst = outputBuffer(ctx, 0, 'float32', n) as Float32Array;
    const srcs = ts.map((t) => fullSize(t, out, n));
    if (!primitivesOf(ctx).elementBody?.(body, srcs, dst, n)) bodyLoop(body)(srcs, dst, n);
    return [{ data: dst, shape: out, dtype: 'float32' }];
  },
  grad: null,
});

/** One instruction of the pre-region `program` attribute: `[op, arg, arg?]`, an arg `"x<k>"`, `"t<k>"` or a number. */
export type LegacyInstruction = readonly (string | number)[];

/**
 * The body spelled as a pre-region program (body op node k is instruction k, literals inline):
 * WGSL kernel keys use it, so kernels stored in files written before issue 13 still match.
 */
export function bodyToProgram(body: Block): LegacyInstruction[] {
  const refs = new Map<Value, string | number>(body.args.map((a, i) => [a, `x${i}`]));
  const program: LegacyInstruction[] = [];
  for (const n of body.nodes) {
    if (n.op === 'constant') { refs.set(n.outputs[0], n.attrs.value as number); continue; }
    program.push([n.op, ...n.inputs.map((v) => refs.get(v!)!)]);
    refs.set(n.outputs[0], `t${program.length - 1}`);
  }
  return program;
}

/**
 * The element body a pre-region `program` attribute (files written before issue 13) stands for,
 * over `nInputs` inputs: instruction k becomes body node k (a number argument a float32 literal
 * node). Throws OpError naming the bad instruction. The decoder calls it; nothing writes programs.
 *
 * @example
 * programToBody([['mul', 'x0', 2], ['add', 't0', 'x1'], ['relu', 't1']], 2); // relu(x0·2 + x1)
 */
export function programToBody(program: unknown, nInputs: number): Block {
  if (!Array.isArray(program) || program.length === 0) throw bodyError(`attribute program must be a non-empty list of instructions, got ${JSON.stringify(program)}`);
  const args = Array.from({ length: nInputs }, () => new Value(ELEMENT));
  const nodes: Node[] = [], temps: Value[] = [];
  program.forEach((ins: unknown, k) => {
    const where = `instruction ${k} ${JSON.stringify(ins)}`;
    const [op, ...operands] = Array.isArray(ins) ? ins as unknown[] : [];
    const arity = typeof op === 'string' && isFusable(op) ? getOp(op).inputs.length : 0;
    if (!arity) throw bodyError(`${where}: '${String(op)}' is not a fusable elementwise op (${fusableOps().join(', ')})`);
    if (operands.length !== arity) throw bodyError(`${where}: '${op}' takes ${arity} argument(s)`);
    const inputs = operands.map((a) => {
      if (typeof a === 'number') {
        const lit = new Node('constant', [], { dtype: 'float32', value: Math.fround(a) }, [new Value(ELEMENT)]);
        nodes.push(lit);
        return lit.outputs[0];
      }
      if (typeof a !== 'string' || !/^[xt]\d+$/.test(a)) throw bodyError(`${where}: argument ${JSON.stringify(a)} must be "x<k>", "t<k>" or a number`);
      const i = Number(a.slice(1));
      if (a[0] === 'x' ? i >= nInputs : i >= k) throw bodyError(`${where}: ${a} refers to ${a[0] === 'x' ? `input ${i} of ${nInputs}` : 'a later instruction'}`);
      return a[0] === 'x' ? args[i] : temps[i];
    });
    const node = new Node(op as string, inputs, getOp(op as string).attrs.parse({}) as Attrs, [new Value(ELEMENT)]);
    nodes.push(node);
    temps.push(node.outputs[0]);
  });
  return new Block(args, nodes, [temps[temps.length - 1]]);
}

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

/**
 * convActPool's scratch (a conv tile and the pool's unused winner offsets), kept between calls:
 * a fresh zeroed array of a tile's size per call cost more than the pool itself (fresh pages,
 * then garbage). Grown to the largest call's need, at most TILE floats and ints. The kernel
 * calls nothing that uses them while it holds them (it is not reentrant; workers run no JS).
 */
let poolScratch: { tiles: Float32Array; winners: Int32Array } | undefined;

function scratchFor(tileFloats: number, winnerInts: number): { tiles: Float32Array; winners: Int32Array } {
  const have = poolScratch;
  if (have && have.tiles.length >= tileFloats && have.winners.length >= winnerInts) return have;
  poolScratch = { tiles: new Float32Array(Math.max(tileFloats, have?.tiles.length ?? 0)), winners: new Int32Array(Math.max(winnerInts, have?.winners.length ?? 0)) };
  return poolScratch;
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
  const { tiles, winners: scratch } = scratchFor((images > 1 ? Math.min(images, N) * Cout : block) * plane, (images > 1 ? images * Cout : block) * PH * PW);
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
  // As conv2d: each result element sums over a weight plane, Cin/groups·3·3 for the legacy
  // Winograd layout (a pooled result counts its windows once: a lower bound, which is what the
  // executor's check needs).
  work: ([x, w], a, [y]) => numel(y.shape) * (a.layout ? 9 * (x!.shape[1] as number) : numel(w!.shape.slice(1))),
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
  work: linearWork,
  cpu([x, w, bias], { activation: act }, ctx) {
    // relu runs in the gemm primitive's epilogue; any other activation over its output after.
    const y = linearKernel(x, w, bias, ctx, act === 'relu');
    if (act !== 'relu') applyActivation(y.data as Float32Array, act);
    return [y];
  },
  grad: null,
});
