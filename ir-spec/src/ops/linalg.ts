// Op family 'linalg': matmul (PyTorch's torch.matmul, including the 1-D forms and broadcast
// batch dims) and linear (x·Wᵀ + b). Both run on the strided GEMM in kernels/gemm.ts.
// `linear` stays a primitive although it is matmul + add: a compiler pass folds a following
// BatchNorm into its weight, and its NT layout needs no transpose copy of W.

import * as z from 'zod';
import { defineOp, outputBuffer, type CpuTensor, type KernelContext } from '../op-def.js';
import { broadcastShapes, dimProduct, fmtShape, numel, OpError, sameDim, type Dim, type Shape, type TensorType } from '../shape.js';
import { broadcastIndex } from '../kernels/broadcast.js';
import { primitivesOf } from '../kernels/primitives.js';

const noAttrs = z.object({}).strict();

function needFloat(op: string, t: TensorType | null, name: string): TensorType {
  if (!t) throw new OpError(op, `input '${name}' is required`);
  if (t.dtype !== 'float32') throw new OpError(op, `${name} must be float32, got ${t.dtype}; call .float() first`);
  return t;
}

/** How matmul sees its operands: batch dims, the matrix sizes, and which dims the 1-D forms drop. */
interface MatmulPlan {
  batchA: Dim[]; batchB: Dim[]; batch: Dim[];
  M: Dim; K: Dim; N: Dim;
  out: Dim[];
}

/** PyTorch's matmul shape rule: 1-D `a` is a row [1,K], 1-D `b` a column [K,1]; both dropped after. */
export function planMatmul(op: string, a: Shape, b: Shape): MatmulPlan {
  if (a.length === 0 || b.length === 0) {
    throw new OpError(op, `both arguments need at least 1 dimension, got ${fmtShape(a)} and ${fmtShape(b)}`);
  }
  const aa = a.length === 1 ? [1, a[0]] : [...a];
  const bb = b.length === 1 ? [b[0], 1] : [...b];
  const M = aa[aa.length - 2], K = aa[aa.length - 1], Kb = bb[bb.length - 2], N = bb[bb.length - 1];
  if (!sameDim(K, Kb)) throw new OpError(op, `${fmtShape(a)} @ ${fmtShape(b)}: inner dimensions ${K} and ${Kb} differ`);
  const batchA = aa.slice(0, -2), batchB = bb.slice(0, -2);
  let batch: Dim[];
  try {
    batch = broadcastShapes(op, batchA, batchB);
  } catch {
    throw new OpError(op, `${fmtShape(a)} @ ${fmtShape(b)}: batch dimensions ${fmtShape(batchA)} and ${fmtShape(batchB)} cannot be broadcast`);
  }
  const out = [...batch];
  if (a.length > 1) out.push(M);
  if (b.length > 1) out.push(N);
  return { batchA, batchB, batch, M, K, N, out };
}

export const matmul = defineOp({
  name: 'matmul',
  doc: 'matrix product with PyTorch semantics: 1-D·1-D dot, 1-D operands promoted to a row/column and the added dim dropped, batch dims broadcast',
  inputs: ['a', 'b'], attrs: noAttrs,
  infer([a, b]) {
    const ta = needFloat('matmul', a, 'a'), tb = needFloat('matmul', b, 'b');
    return [{ dtype: 'float32', shape: planMatmul('matmul', ta.shape, tb.shape).out }];
  },
  work([a, b]) {
    const p = planMatmul('matmul', a!.shape, b!.shape);
    return numel(p.batch) * (p.M as number) * (p.K as number) * (p.N as number);
  },
  cpu([a, b], _attrs, ctx) {
    const { gemm } = primitivesOf(ctx);
    const p = planMatmul('matmul', a!.shape, b!.shape);
    const M = p.M as number, K = p.K as number, N = p.N as number;
    const batch = p.batch as number[], batchA = p.batchA as number[], batchB = p.batchB as number[];
    const A = a!.data as Float32Array, B = b!.data as Float32Array;
    // The products overwrite every element, so an offered (stale) slot needs no clearing; K = 0 writes none.
    const n = numel(batch) * M * N;
    const out = K === 0 ? new Float32Array(n) : outputBuffer(ctx, 0, 'float32', n) as Float32Array;
    if (numel(batchB) === 1 && numel(batchA) === numel(batch)) {
      // One B for every batch: the batches of A are consecutive rows of one [batch·M, K] matrix.
      gemm(numel(batch) * M, N, K, A, 0, K, 1, B, 0, N, 1, out, 0, N);
    } else {
      const [ia, ib] = broadcastIndex([batchA, batchB], batch);
      for (let o = 0; o < ia.length; o++) {
        gemm(M, N, K, A, ia[o] * M * K, K, 1, B, ib[o] * K * N, N, 1, out, o * M * N, N);
      }
    }
    return [{ data: out, shape: p.out as number[], dtype: 'float32' }];
  },
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, y], inputTypes: [ta, tb], needsInputGrad: [na, nb] }) => {
      if (!g) return [null, null];
      const ra = ta!.shape.length, rb = tb!.shape.length;
      // dot: g is 0-d and broadcasts against the other vector.
      if (ra === 1 && rb === 1) return [na ? b.mul(g, y!) : null, nb ? b.mul(g, x!) : null];
      const gs = b.shape(g);
      // Restore the dims the 1-D forms dropped, so every operand is a (batched) matrix.
      const g2 = ra === 1 ? b.reshape(g, [...gs.slice(0, -1), 1, gs[gs.length - 1]])
        : rb === 1 ? b.reshape(g, [...gs, 1]) : g;
      const x2 = ra === 1 ? b.reshape(x!, [1, ta!.shape[0]]) : x!;
      const y2 = rb === 1 ? b.reshape(y!, [tb!.shape[0], 1]) : y!;
      let ga = na ? b.matmul(g2, b.transposeLast(y2)) : null;
      let gb = nb ? b.matmul(b.transposeLast(x2), g2) : null;
      // Drop the restored dim again; the engine then sums broadcast batch dims away.
      if (ga && ra === 1) { const s = b.shape(ga); ga = b.reshape(ga, [...s.slice(0, -2), s[s.length - 1]]); }
      if (gb && rb === 1) { const s = b.shape(gb); gb = b.reshape(gb, s.slice(0, -1)); }
      return [ga, gb];
    },
  },
});

/** Shape rule of linear: x[..., K], weight[N, K], bias[N] → [..., N]. */
function linearType(x: TensorType | null, w: TensorType | null, bias: TensorType | null): TensorType {
  const tx = needFloat('linear', x, 'input'), tw = needFloat('linear', w, 'weight');
  if (tx.shape.length < 1) throw new OpError('linear', `input must have at least 1 dimension, got ${fmtShape(tx.shape)}`);
  if (tw.shape.length !== 2) throw new OpError('linear', `weight must be 2-D [out_features, in_features], got ${fmtShape(tw.shape)}`);
  const K = tx.shape[tx.shape.length - 1];
  if (!sameDim(tw.shape[1], K)) {
    throw new OpError('linear', `input ${fmtShape(tx.shape)} has ${K} features but weight ${fmtShape(tw.shape)} expects ${tw.shape[1]}`);
  }
  if (bias) {
    needFloat('linear', bias, 'bias');
    if (bias.shape.length !== 1 || !sameDim(bias.shape[0], tw.shape[0])) {
      throw new OpError('linear', `bias must have shape [${tw.shape[0]}] to match weight ${fmtShape(tw.shape)}, got ${fmtShape(bias.shape)}`);
    }
  }
  return { dtype: 'float32', shape: [...tx.shape.slice(0, -1), tw.shape[0]] };
}

/** Multiply-adds of linear: each result element sums over the input's last dim. */
export function linearWork([x]: readonly (TensorType | null)[], _attrs: unknown, [y]: readonly TensorType[]): number {
  return numel(y.shape) * (x!.shape[x!.shape.length - 1] as number);
}

/**
 * linear's CPU kernel, with relu applied in the product's epilogue when asked (fused_linear):
 * the bias and the activation run in the gemm primitive's output loop, not in passes of their own.
 */
export function linearKernel(x: CpuTensor | null, w: CpuTensor | null, bias: CpuTensor | null, ctx: KernelContext | undefined, relu: boolean): CpuTensor {
  const t = linearType(x, w, bias);
  const K = w!.shape[1], N = w!.shape[0], M = K === 0 ? numel(x!.shape.slice(0, -1)) : x!.data.length / K;
  // The product overwrites every element, so an offered (stale) buffer needs no clearing.
  const out = K === 0 ? new Float32Array(M * N) : outputBuffer(ctx, 0, 'float32', M * N) as Float32Array;
  const epilogue = bias || relu ? { bias: bias?.data as Float32Array | undefined, relu } : undefined;
  primitivesOf(ctx).gemm(M, N, K, x!.data as Float32Array, 0, K, 1, w!.data as Float32Array, 0, 1, K, out, 0, N, false, epilogue);
  return { data: out, shape: t.shape as number[], dtype: 'float32' };
}

export const linear = defineOp({
  name: 'linear', doc: 'y = x·weightᵀ + bias over the last dim of x (weight [out, in], bias [out] optional)',
  inputs: ['input', 'weight', 'bias?'], attrs: noAttrs,
  infer([x, w, bias]) { return [linearType(x, w, bias)]; },
  work: linearWork,
  cpu([x, w, bias], _attrs, ctx) { return [linearKernel(x, w, bias, ctx, false)]; },
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, w], inputTypes: [tx, tw], needsInputGrad: [nx, nw, nb] }) => {
      if (!g) return [null, null, null];
      const N = tw!.shape[0], K = tw!.shape[1];
      const lead = tx!.shape.slice(0, -1);
      const M = dimProduct(lead);
      // dx = g·W ([..., N]·[N, K]); dW = gᵀ·x over all leading dims; db = Σ g over them.
      const gx = nx ? b.matmul(g, w!) : null;
      const g2 = nw || nb ? b.reshape(g, [M, N]) : null;
      const gw = nw ? b.matmul(b.transposeLast(g2!), b.reshape(x!, [M, K])) : null;
      const gb = nb ? b.sum(g2!, [0]) : null;
      return [gx, gw, gb];
    },
  },
});
