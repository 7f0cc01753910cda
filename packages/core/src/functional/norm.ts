// F: normalization (torch.nn.functional.batch_norm, layer_norm, group_norm, instance_norm).
// All four end in the batch_norm primitive: training mode computes the batch statistics with
// the batch_norm_stats op and passes them in, so autograd differentiates through them;
// layer/group/instance norm view their input as [1, rows, …] so each normalized group becomes
// one "channel".
// Running statistics are updated in place under noGrad, with the unbiased variance (PyTorch).

import { autocastFloat32 } from '../amp/autocast.js';
import { fmtShape, OpError } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch, dispatch1 } from '../dispatch.js';
import { noGrad } from '../autograd/grad-mode.js';
import * as R from '../ops/reduce.js';
import * as E from '../ops/elementwise.js';

export interface BatchNormOptions {
  weight?: Tensor | null;
  bias?: Tensor | null;
  /** Normalize with batch statistics and update the running ones (default false). */
  training?: boolean;
  /** Weight of the new statistic in the running average (default 0.1); null = cumulative
   * average, which needs `numBatchesTracked`. A 0-d tensor is a weight computed by ops
   * (nn.BatchNorm's 1/num_batches_tracked), which compiled graphs compute at run time. */
  momentum?: number | null | Tensor;
  /** With momentum null: the number of batches seen including this one. */
  numBatchesTracked?: number;
  eps?: number;
}

/** The [C, 1, …, 1] shape that broadcasts a per-channel vector against an [N, C, …] tensor. */
function channelShape(x: Tensor): number[] {
  return [x.shape[1], ...Array<number>(x.ndim - 2).fill(1)];
}

/** Biased per-channel mean and variance over every dim but 1, as [C] tensors. */
function batchStats(x: Tensor): [Tensor, Tensor] {
  const [mean, variance] = dispatch('batch_norm_stats', [x]);
  return [mean, variance];
}

/**
 * running = (1 − m)·running + m·stat, in place and outside autograd. In place on the buffer
 * (through the dispatch), so a trace or jit.script records the new value as a buffer update.
 */
function updateRunning(running: Tensor, stat: Tensor, m: number | Tensor): void {
  noGrad(() => running.mul_(typeof m === 'number' ? 1 - m : E.sub(1, m)).add_(stat.detach().mul(m)));
}

function momentumOf(op: string, opts: { momentum?: number | null | Tensor; numBatchesTracked?: number }): number | Tensor {
  if (opts.momentum instanceof Tensor) return opts.momentum;
  if (opts.momentum !== null) return opts.momentum ?? 0.1;
  if (!opts.numBatchesTracked || opts.numBatchesTracked < 1) {
    throw new OpError(op, 'momentum null (cumulative average) needs numBatchesTracked, the number of batches seen including this one');
  }
  return 1 / opts.numBatchesTracked;
}

/**
 * Batch normalization over dim 1 of `x` [N, C, …]. Training mode normalizes with the batch
 * statistics (biased variance) and updates `runningMean`/`runningVar` in place when given (with
 * the unbiased variance); eval mode normalizes with the running statistics.
 * @example batchNorm(x, runningMean, runningVar, { weight, bias, training: true })
 */
export function batchNorm(x: Tensor, runningMean: Tensor | null, runningVar: Tensor | null, opts: BatchNormOptions = {}): Tensor {
  const op = 'batch_norm';
  if (x.ndim < 2) throw new OpError(op, `input must have a channel dim 1, got ${fmtShape(x.shape)}`);
  const w = opts.weight ?? null, b = opts.bias ?? null, eps = opts.eps ?? 1e-5;
  if (!opts.training) {
    if (!runningMean || !runningVar) throw new OpError(op, 'eval mode (training: false) needs runningMean and runningVar');
    return dispatch1(op, [x, runningMean, runningVar, w, b], { eps });
  }
  const n = x.numel() / x.shape[1];
  if (n <= 1) throw new OpError(op, `expected more than 1 value per channel when training, got input ${fmtShape(x.shape)}`);
  const [mean, variance] = batchStats(x);
  const m = momentumOf(op, opts);
  if (runningMean) updateRunning(runningMean, mean, m);
  if (runningVar) {
    // The unbiased correction n/(n−1) from a 0-d count: a trace generalizes the count to the
    // (dynamic) batch size, so a compiled graph corrects with its own batch's n.
    const count = Tensor._scalar(n, 'float32');
    updateRunning(runningVar, noGrad(() => variance.mul(E.div(count, E.sub(count, 1)))), m);
  }
  return dispatch1(op, [x, mean, variance, w, b], { eps });
}

/** Normalizes `x` viewed as [1, rows, cols], each row by its own statistics. */
function normalizeRows(x: Tensor, rows: number, eps: number): Tensor {
  const x3 = x.reshape([1, rows, -1]);
  const [mean, variance] = batchStats(x3);
  return dispatch1('batch_norm', [x3, mean, variance, null, null], { eps }).reshape(x.shape);
}

/**
 * Layer normalization over the trailing dims `normalizedShape`, then `weight`·y + `bias` (both of
 * that shape).
 * @example layerNorm(randn([2, 3, 8]), [8], { weight: ones([8]), bias: zeros([8]) })
 */
export function layerNorm(x: Tensor, normalizedShape: number | readonly number[], opts: { weight?: Tensor | null; bias?: Tensor | null; eps?: number } = {}): Tensor {
  x = autocastFloat32(x); // PyTorch autocast: fp32 list
  const shape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
  const k = shape.length, lead = x.shape.slice(0, x.ndim - k);
  if (k === 0 || k > x.ndim || shape.some((d, i) => d !== x.shape[x.ndim - k + i])) {
    throw new OpError('layer_norm', `input ${fmtShape(x.shape)} does not end in normalizedShape ${fmtShape(shape)}`);
  }
  let y = normalizeRows(x, lead.reduce((a, d) => a * d, 1), opts.eps ?? 1e-5);
  if (opts.weight) y = y.mul(opts.weight);
  if (opts.bias) y = y.add(opts.bias);
  return y;
}

/** Per-channel affine transform of an [N, C, …] tensor. */
function channelAffine(y: Tensor, weight?: Tensor | null, bias?: Tensor | null): Tensor {
  const cs = channelShape(y);
  if (weight) y = y.mul(weight.reshape(cs));
  if (bias) y = y.add(bias.reshape(cs));
  return y;
}

/**
 * Group normalization: the channels of `x` [N, C, …] split into `numGroups` groups, each
 * normalized over its channels and positions, then a per-channel `weight`/`bias`.
 * @example groupNorm(randn([2, 6, 4, 4]), 3, { weight: ones([6]), bias: zeros([6]) })
 */
export function groupNorm(x: Tensor, numGroups: number, opts: { weight?: Tensor | null; bias?: Tensor | null; eps?: number } = {}): Tensor {
  x = autocastFloat32(x); // PyTorch autocast: fp32 list
  if (x.ndim < 2) throw new OpError('group_norm', `input must be [N, C, …], got ${fmtShape(x.shape)}`);
  const C = x.shape[1];
  if (!Number.isInteger(numGroups) || numGroups < 1 || C % numGroups !== 0) {
    throw new OpError('group_norm', `numGroups ${numGroups} must divide the ${C} channels of input ${fmtShape(x.shape)}`);
  }
  return channelAffine(normalizeRows(x, x.shape[0] * numGroups, opts.eps ?? 1e-5), opts.weight, opts.bias);
}

export interface InstanceNormOptions {
  runningMean?: Tensor | null;
  runningVar?: Tensor | null;
  weight?: Tensor | null;
  bias?: Tensor | null;
  /** Normalize with each instance's own statistics (default true); false uses the running ones. */
  useInputStats?: boolean;
  momentum?: number;
  eps?: number;
}

/**
 * Instance normalization: each (sample, channel) plane of `x` [N, C, …] normalized by its own
 * statistics, then a per-channel `weight`/`bias`. Running statistics, when given, are updated
 * with the batch average of the instance statistics.
 * @example instanceNorm(randn([2, 3, 4, 4]), { weight: ones([3]), bias: zeros([3]) })
 */
export function instanceNorm(x: Tensor, opts: InstanceNormOptions = {}): Tensor {
  const op = 'instance_norm';
  if (x.ndim < 3) throw new OpError(op, `input must be [N, C, L, …], got ${fmtShape(x.shape)}`);
  const eps = opts.eps ?? 1e-5, rm = opts.runningMean ?? null, rv = opts.runningVar ?? null;
  if (opts.useInputStats === false) {
    if (!rm || !rv) throw new OpError(op, 'useInputStats: false needs runningMean and runningVar');
    return dispatch1('batch_norm', [x, rm, rv, opts.weight ?? null, opts.bias ?? null], { eps });
  }
  const [N, C] = x.shape, n = x.numel() / (N * C);
  if (n <= 1) throw new OpError(op, `expected more than 1 spatial element per channel, got input ${fmtShape(x.shape)}`);
  const x3 = x.reshape([1, N * C, -1]);
  const [mean, variance] = batchStats(x3);
  const m = opts.momentum ?? 0.1;
  if (rm) updateRunning(rm, R.mean(mean.reshape([N, C]), 0), m);
  if (rv) updateRunning(rv, R.mean(variance.reshape([N, C]), 0).mul(n / (n - 1)), m);
  const y = dispatch1('batch_norm', [x3, mean, variance, null, null], { eps }).reshape(x.shape);
  return channelAffine(y, opts.weight, opts.bias);
}
