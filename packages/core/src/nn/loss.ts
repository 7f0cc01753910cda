// nn loss modules (torch.nn.*Loss): thin modules over the functional losses in F. Class and
// positive-class weights are buffers named as in PyTorch (`weight`, `pos_weight`), so they move
// with stateDict() like any other buffer; the other options are plain fields.

import type { Tensor } from '../tensor.js';
import { Module } from './module.js';
import * as L from '../functional/loss.js';
import { bindLayerArgs, type ArgSpec, type LayerSignature } from './layer-args.js';

type Reduction = L.Reduction;

const REDUCTION: ArgSpec = { name: 'reduction', kind: { oneOf: ['none', 'mean', 'sum'] } };
const WEIGHT: ArgSpec = { name: 'weight', kind: 'tensor', nullable: true };
const IGNORE_INDEX: ArgSpec = { name: 'ignoreIndex', kind: 'int' };
// Only `weight` is positional in PyTorch's losses beyond deprecated arguments (size_average,
// reduce), which Kiln does not take; everything else is named in the options object.
const SIGS = new Map<string, LayerSignature>([
  ['CrossEntropyLoss', { layer: 'CrossEntropyLoss', positional: [WEIGHT], keywordOnly: [IGNORE_INDEX, REDUCTION, { name: 'labelSmoothing', kind: 'number' }] }],
  ['NLLLoss', { layer: 'NLLLoss', positional: [WEIGHT], keywordOnly: [IGNORE_INDEX, REDUCTION] }],
  ['MSELoss', { layer: 'MSELoss', positional: [], keywordOnly: [REDUCTION] }],
  ['L1Loss', { layer: 'L1Loss', positional: [], keywordOnly: [REDUCTION] }],
  ['SmoothL1Loss', { layer: 'SmoothL1Loss', positional: [], keywordOnly: [REDUCTION, { name: 'beta', kind: 'number' }] }],
  ['HuberLoss', { layer: 'HuberLoss', positional: [], keywordOnly: [REDUCTION, { name: 'delta', kind: 'number' }] }],
  ['BCELoss', { layer: 'BCELoss', positional: [WEIGHT], keywordOnly: [REDUCTION] }],
  ['BCEWithLogitsLoss', { layer: 'BCEWithLogitsLoss', positional: [WEIGHT], keywordOnly: [REDUCTION, { name: 'posWeight', kind: 'tensor', nullable: true }] }],
  ['KLDivLoss', { layer: 'KLDivLoss', positional: [], keywordOnly: [{ name: 'reduction', kind: { oneOf: ['none', 'mean', 'sum', 'batchmean'] } }, { name: 'logTarget', kind: 'bool' }] }],
]);

/** Binds a loss constructor's arguments against its PyTorch signature (see layer-args.ts). */
function lossArgs<T>(layer: string, args: readonly unknown[]): T {
  const sig = SIGS.get(layer);
  if (!sig) throw new Error(`${layer}: internal error: no constructor signature`);
  return bindLayerArgs<T>(sig, args);
}

type WeightedArgs<O> = [opts?: O & { weight?: Tensor | null }] | [weight: Tensor | null, opts?: O];

abstract class Loss extends Module {
  readonly reduction: Reduction;
  constructor(opts: { reduction?: Reduction }) {
    super();
    this.reduction = opts.reduction ?? 'mean';
  }
  abstract override forward(input: Tensor, target: Tensor): Tensor;
  override extraRepr(): string { return this.reduction === 'mean' ? '' : `reduction='${this.reduction}'`; }
}

/** A loss with an optional per-class `weight` buffer (PyTorch's _WeightedLoss). */
abstract class WeightedLoss extends Loss {
  declare weight: Tensor | null;
  constructor(opts: { weight?: Tensor | null; reduction?: Reduction }) {
    super(opts);
    this.registerBuffer('weight', opts.weight ?? null);
  }
}

/**
 * Cross entropy of logits with class-index or class-probability targets.
 * @example const lossFn = new nn.CrossEntropyLoss({ labelSmoothing: 0.1 }); lossFn.forward(logits, labels)
 */
export class CrossEntropyLoss extends WeightedLoss {
  readonly ignoreIndex: number;
  readonly labelSmoothing: number;
  constructor(...args: WeightedArgs<{ ignoreIndex?: number; reduction?: Reduction; labelSmoothing?: number }>) {
    const opts = lossArgs<{ weight?: Tensor | null; ignoreIndex?: number; reduction?: Reduction; labelSmoothing?: number }>('CrossEntropyLoss', args);
    super(opts);
    this.ignoreIndex = opts.ignoreIndex ?? -100;
    this.labelSmoothing = opts.labelSmoothing ?? 0;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.crossEntropy(input, target, { weight: this.weight, ignoreIndex: this.ignoreIndex, reduction: this.reduction, labelSmoothing: this.labelSmoothing });
  }
}

/** Negative log-likelihood of log-probabilities. @example new nn.NLLLoss().forward(logp, labels) */
export class NLLLoss extends WeightedLoss {
  readonly ignoreIndex: number;
  constructor(...args: WeightedArgs<{ ignoreIndex?: number; reduction?: Reduction }>) {
    const opts = lossArgs<{ weight?: Tensor | null; ignoreIndex?: number; reduction?: Reduction }>('NLLLoss', args);
    super(opts);
    this.ignoreIndex = opts.ignoreIndex ?? -100;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.nllLoss(input, target, { weight: this.weight, ignoreIndex: this.ignoreIndex, reduction: this.reduction });
  }
}

/** Mean squared error. @example new nn.MSELoss().forward(pred, target) */
export class MSELoss extends Loss {
  constructor(...args: [opts?: { reduction?: Reduction }]) { super(lossArgs('MSELoss', args)); }
  forward(input: Tensor, target: Tensor): Tensor { return L.mseLoss(input, target, { reduction: this.reduction }); }
}

/** Mean absolute error. @example new nn.L1Loss().forward(pred, target) */
export class L1Loss extends Loss {
  constructor(...args: [opts?: { reduction?: Reduction }]) { super(lossArgs('L1Loss', args)); }
  forward(input: Tensor, target: Tensor): Tensor { return L.l1Loss(input, target, { reduction: this.reduction }); }
}

/** Smooth L1 (quadratic below `beta`). @example new nn.SmoothL1Loss({ beta: 0.5 }).forward(pred, target) */
export class SmoothL1Loss extends Loss {
  readonly beta: number;
  constructor(...args: [opts?: { reduction?: Reduction; beta?: number }]) {
    const opts = lossArgs<{ reduction?: Reduction; beta?: number }>('SmoothL1Loss', args);
    super(opts);
    this.beta = opts.beta ?? 1;
  }
  forward(input: Tensor, target: Tensor): Tensor { return L.smoothL1Loss(input, target, { reduction: this.reduction, beta: this.beta }); }
}

/** Huber loss (quadratic below `delta`). @example new nn.HuberLoss({ delta: 1.5 }).forward(pred, target) */
export class HuberLoss extends Loss {
  readonly delta: number;
  constructor(...args: [opts?: { reduction?: Reduction; delta?: number }]) {
    const opts = lossArgs<{ reduction?: Reduction; delta?: number }>('HuberLoss', args);
    super(opts);
    this.delta = opts.delta ?? 1;
  }
  forward(input: Tensor, target: Tensor): Tensor { return L.huberLoss(input, target, { reduction: this.reduction, delta: this.delta }); }
}

/** Binary cross entropy on probabilities. @example new nn.BCELoss().forward(probs, targets) */
export class BCELoss extends WeightedLoss {
  constructor(...args: WeightedArgs<{ reduction?: Reduction }>) { super(lossArgs('BCELoss', args)); }
  forward(input: Tensor, target: Tensor): Tensor { return L.binaryCrossEntropy(input, target, { weight: this.weight, reduction: this.reduction }); }
}

/** Binary cross entropy on logits (stable). @example new nn.BCEWithLogitsLoss({ posWeight: tensor([2]) }).forward(logits, targets) */
export class BCEWithLogitsLoss extends WeightedLoss {
  declare pos_weight: Tensor | null;
  constructor(...args: WeightedArgs<{ posWeight?: Tensor | null; reduction?: Reduction }>) {
    const opts = lossArgs<{ weight?: Tensor | null; posWeight?: Tensor | null; reduction?: Reduction }>('BCEWithLogitsLoss', args);
    super(opts);
    this.registerBuffer('pos_weight', opts.posWeight ?? null);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.binaryCrossEntropyWithLogits(input, target, { weight: this.weight, posWeight: this.pos_weight, reduction: this.reduction });
  }
}

/** KL divergence of log-probabilities from a target distribution. @example new nn.KLDivLoss({ reduction: 'batchmean' }).forward(logp, q) */
export class KLDivLoss extends Module {
  readonly reduction: Reduction | 'batchmean';
  readonly logTarget: boolean;
  constructor(...args: [opts?: { reduction?: Reduction | 'batchmean'; logTarget?: boolean }]) {
    const opts = lossArgs<{ reduction?: Reduction | 'batchmean'; logTarget?: boolean }>('KLDivLoss', args);
    super();
    this.reduction = opts.reduction ?? 'mean';
    this.logTarget = opts.logTarget ?? false;
  }
  forward(input: Tensor, target: Tensor): Tensor { return L.klDiv(input, target, { reduction: this.reduction, logTarget: this.logTarget }); }
}
