// Op family 'norm': batch_norm in its normalizing form, y = (x − mean)/√(var + eps)·w + b per
// channel (dim 1), and batch_norm_stats, the per-channel mean and biased variance. Statistics
// are inputs of batch_norm: eval mode passes the running ones, training mode the output of
// batch_norm_stats — the gradient rules of both cover every input, so gradients flow through the
// statistics back to x. batch_norm_stats is a primitive for speed only: as mean/sub/mul/sum ops
// its backward would run about twice as many full-size passes. Layer, group and instance norm
// are batch_norm over reshaped inputs (packages/core); a compiler pass folds an eval-mode
// batch_norm into a preceding conv2d or linear. batch_norm_backward is the gradient of the
// training-mode pair (batch_norm over batch_norm_stats of the same x) as one kernel: graph
// autodiff (jit.compile) emits it where it sees that pair; eager autograd, which sees the two
// ops one at a time, runs their own rules. Given relu_output, it is the gradient of
// relu(batch_norm(…)) as well: g counts only where relu_output > 0 (relu's own rule).

import * as z from 'zod';
import { defineOp, outputBuffer } from '../op-def.js';
import { primitivesOf } from '../kernels/primitives.js';
import { fmtShape, OpError, sameDim, type Dim, type TensorType } from '../shape.js';

const attrs = z.object({ eps: z.number().min(0).default(1e-5) }).strict();

function checkTypes(x: TensorType | null, rest: readonly (TensorType | null)[], op = 'batch_norm'): TensorType {
  if (!x) throw new OpError(op, "input 'input' is required");
  if (x.dtype !== 'float32') throw new OpError(op, `input must be float32, got ${x.dtype}`);
  if (x.shape.length < 2) throw new OpError(op, `input must have a channel dim 1, got ${fmtShape(x.shape)}`);
  const C = x.shape[1];
  ['mean', 'var', 'weight', 'bias'].forEach((name, i) => {
    const t = rest[i];
    if (!t) {
      if (i < 2) throw new OpError(op, `input '${name}' is required`);
      return;
    }
    if (t.dtype !== 'float32' || t.shape.length !== 1 || !sameDim(t.shape[0], C)) {
      throw new OpError(op, `${name} must be float32 of shape [${C}] for input ${fmtShape(x.shape)}, got ${t.dtype}${fmtShape(t.shape)}`);
    }
  });
  return x;
}

export const batch_norm = defineOp({
  name: 'batch_norm',
  doc: 'y = (x − mean)/sqrt(var + eps)·weight + bias with per-channel (dim 1) mean, var, weight?, bias?',
  inputs: ['input', 'mean', 'var', 'weight?', 'bias?'], attrs,
  infer([x, ...rest]) { return [{ dtype: 'float32', shape: checkTypes(x, rest).shape }]; },
  cpu([x, mean, v, w, bias], { eps }, ctx) {
    checkTypes(x, [mean, v, w, bias]);
    const shape = x!.shape, C = shape[1], N = shape[0];
    let inner = 1;
    for (let i = 2; i < shape.length; i++) inner *= shape[i];
    const M = mean!.data, V = v!.data, Wd = w?.data, Bd = bias?.data;
    // y = x·scale + shift with both folded per channel in double precision.
    const scale = new Float64Array(C), shift = new Float64Array(C);
    for (let c = 0; c < C; c++) {
      const s = (Wd ? Wd[c] : 1) / Math.sqrt(V[c] + eps);
      scale[c] = s;
      shift[c] = (Bd ? Bd[c] : 0) - M[c] * s;
    }
    // Into the runtime's planned slot when it offers one (compiled graphs), else a fresh array.
    const out = outputBuffer(ctx, 0, 'float32', x!.data.length) as Float32Array;
    return [{ data: primitivesOf(ctx).batchNormAffine(x!.data as Float32Array, N, C, inner, scale, shift, out), shape, dtype: 'float32' }];
  },
  grad: {
    saveInputs: [0, 1, 2, 3],
    rule: (b, { gradOutputs: [g], inputs: [x, mean, v, w], inputTypes: [tx], attrs: { eps }, needsInputGrad: [nx, nm, nv, nw, nb] }) => {
      if (!g) return [null, null, null, null, null];
      const perChannel = (t: Parameters<typeof b.reshape>[0]) => b.reshape(t, channelShape(tx!));
      const others = otherDims(tx!);
      // With scale = w·invstd per channel: dx = g·scale, dmean = −scale·Σg, dw = invstd·Σ g·(x−mean),
      // dvar = −½·w·invstd³·Σ g·(x−mean). Both sums are shared, so only three full-size ops run.
      const invstd = b.unary('rsqrt', b.addScalar(v!, eps));
      const scale = w ? b.mul(w, invstd) : invstd;
      const gx = nx ? b.mul(g, perChannel(scale)) : null;
      const sg = nm || nb ? b.sum(g, others) : null;
      const sgx = nv || nw ? b.sum(b.mul(g, b.sub(x!, perChannel(mean!))), others) : null;
      const gm = nm ? b.neg(b.mul(sg!, scale)) : null;
      const gv = nv ? b.mul(sgx!, b.mulScalar(b.mul(scale, b.mul(invstd, invstd)), -0.5)) : null;
      const gweight = nw ? b.mul(sgx!, invstd) : null;
      return [gx, gm, gv, gweight, nb ? sg : null];
    },
  },
});

/** [C, 1, …, 1]: a per-channel vector shaped to broadcast against an [N, C, …] tensor. */
function channelShape(t: TensorType): Dim[] {
  return [t.shape[1], ...Array<number>(t.shape.length - 2).fill(1)];
}
/** Every dim but the channel dim 1. */
function otherDims(t: TensorType): number[] {
  return [0, ...Array.from({ length: t.shape.length - 2 }, (_, i) => i + 2)];
}

export const batch_norm_stats = defineOp({
  name: 'batch_norm_stats',
  doc: 'per-channel mean and biased variance of x [N, C, …] over every dim but 1 → [mean [C], var [C]]',
  inputs: ['input'], attrs: z.object({}).strict(), outputs: 2,
  infer([x]) {
    if (!x) throw new OpError('batch_norm_stats', "input 'input' is required");
    if (x.dtype !== 'float32' || x.shape.length < 2) {
      throw new OpError('batch_norm_stats', `input must be float32 with a channel dim 1, got ${x.dtype}${fmtShape(x.shape)}`);
    }
    return [{ dtype: 'float32', shape: [x.shape[1]] }, { dtype: 'float32', shape: [x.shape[1]] }];
  },
  cpu([x], _attrs, ctx) {
    const shape = x!.shape, N = shape[0], C = shape[1];
    const inner = shape.slice(2).reduce((a, d) => a * d, 1);
    // Two passes in double precision: the variance never suffers E[x²] − E[x]² cancellation.
    const [mean, variance] = primitivesOf(ctx).batchNormStats(x!.data as Float32Array, N, C, inner);
    return [{ data: mean, shape: [C], dtype: 'float32' }, { data: variance, shape: [C], dtype: 'float32' }];
  },
  grad: {
    saveInputs: [0],
    saveOutputs: [0],
    rule: (b, { gradOutputs: [gm, gv], inputs: [x], outputs: [mean], inputTypes: [tx] }) => {
      const t = tx!;
      const n = (t.shape as number[]).reduce((a, d, i) => (i === 1 ? a : a * d), 1);
      const cs = channelShape(t);
      // dx = gm/n + (x − mean)·2·gv/n, each per channel.
      let gx = gv ? b.mul(b.sub(x!, b.reshape(mean!, cs)), b.reshape(b.mulScalar(gv, 2 / n), cs)) : null;
      if (gm) {
        const m = b.reshape(b.mulScalar(gm, 1 / n), cs);
        gx = gx ? b.add(gx, m) : b.expand(m, t.shape);
      }
      return [gx];
    },
  },
});

export const batch_norm_backward = defineOp({
  name: 'batch_norm_backward',
  doc: 'gradients of y = batch_norm(x, mean, var, weight?, bias) where (mean, var) = batch_norm_stats(x), from grad_output g: '
    + '[dx (through mean and var too), dweight [C], dbias [C]]; mean and var are the forward\'s; with relu_output (relu of y), '
    + 'g is the gradient of that relu, counted where relu_output > 0',
  inputs: ['grad', 'input', 'mean', 'var', 'weight?', 'relu_output?'], attrs, outputs: 3,
  infer([g, x, mean, v, w, r]) {
    const t = checkTypes(x, [mean, v, w, null], 'batch_norm_backward');
    for (const [name, u] of [['grad', g], ['relu_output', r]] as const) {
      if (!u && name === 'relu_output') continue;
      if (!u || u.dtype !== 'float32' || u.shape.length !== t.shape.length || u.shape.some((d, i) => !sameDim(d, t.shape[i]))) {
        throw new OpError('batch_norm_backward', `${name} must be float32 of the input's shape ${fmtShape(t.shape)}, got ${u ? `${u.dtype}${fmtShape(u.shape)}` : 'none'}`);
      }
    }
    const C = t.shape[1];
    return [{ dtype: 'float32', shape: t.shape }, { dtype: 'float32', shape: [C] }, { dtype: 'float32', shape: [C] }];
  },
  cpu([g, x, mean, v, w, r], { eps }, ctx) {
    checkTypes(x, [mean, v, w, null], 'batch_norm_backward');
    const shape = x!.shape, N = shape[0], C = shape[1];
    const inner = shape.slice(2).reduce((a, d) => a * d, 1);
    const X = x!.data as Float32Array, M = mean!.data, V = v!.data, Wd = w?.data;
    const G = g!.data as Float32Array, R = r?.data as Float32Array | undefined;
    const dx = outputBuffer(ctx, 0, 'float32', X.length) as Float32Array;
    const [dw, db] = primitivesOf(ctx).batchNormBackward(G, X, M, V, Wd, R, N, C, inner, eps, dx);
    return [{ data: dx, shape, dtype: 'float32' }, { data: dw, shape: [C], dtype: 'float32' }, { data: db, shape: [C], dtype: 'float32' }];
  },
  grad: null,
});
