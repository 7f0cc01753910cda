// Adam and AdamW — PyTorch 1.13's algorithms exactly, one fused loop per parameter:
//   Adam:  g = ±grad + wd·p (L2)          AdamW: p ·= 1 − lr·wd (decoupled), g = ±grad
//   m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  v̂ = amsgrad ? max(v̂, v) : v
//   p −= lr/(1−β1^t) · m / (sqrt(v̂)/sqrt(1−β2^t) + eps)

import { fastPrimitives } from '@kiln/runtime';
import type { Tensor } from '../tensor.js';
import { Optimizer, bump, checkRange, f32, newBuffer, type ParamGroup, type ParamsArg } from './optimizer.js';
import { adamStepGpu, stateZerosGpu } from './gpu-steps.js';

export interface AdamOptions {
  lr?: number;
  betas?: readonly [number, number];
  eps?: number;
  /** Adam: L2 penalty added to the gradient. AdamW: decoupled decay p ·= 1 − lr·weightDecay. */
  weightDecay?: number;
  /** Keeps the running maximum of the second moment (`max_exp_avg_sq`). */
  amsgrad?: boolean;
  maximize?: boolean;
}

/** PyTorch's state names; `step` counts this parameter's updates. */
export interface AdamState {
  [key: string]: Tensor | number | null;
  step: number;
  exp_avg: Tensor;
  exp_avg_sq: Tensor;
  max_exp_avg_sq: Tensor | null;
}

type Resolved = Required<AdamOptions>;

const defaults = (weightDecay: number, opts: AdamOptions): Resolved =>
  ({ lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay, amsgrad: false, maximize: false, ...opts });

/** The update shared by Adam and AdamW (as in PyTorch, neither subclasses the other). */
abstract class AdamFamily extends Optimizer<Resolved, AdamState> {
  /** AdamW decays the weights directly instead of adding wd·p to the gradient. */
  protected override readonly gpuSteps = true;
  protected abstract readonly decoupled: boolean;

  protected validate(g: ParamGroup<Resolved>): void {
    checkRange(this.name, 'learning rate lr', g.lr);
    checkRange(this.name, 'eps', g.eps);
    checkRange(this.name, 'beta parameter at index 0', g.betas[0], 1);
    checkRange(this.name, 'beta parameter at index 1', g.betas[1], 1);
    checkRange(this.name, 'weightDecay', g.weightDecay);
  }

  protected updateGroup(group: ParamGroup<Resolved>): void {
    const { lr, eps, weightDecay: wd, amsgrad, maximize } = group;
    const [beta1, beta2] = group.betas;
    const sign = maximize ? -1 : 1;
    const l2 = this.decoupled ? 0 : wd;
    const shrink = this.decoupled ? 1 - lr * wd : 1;
    for (const [p, g] of this.onGpu(group)) {
      const z = () => stateZerosGpu(p.shape);
      const st = this.stateOf(p, () => ({ step: 0, exp_avg: z(), exp_avg_sq: z(), max_exp_avg_sq: amsgrad ? z() : null }));
      const step = ++st.step;
      if (amsgrad && !st.max_exp_avg_sq) st.max_exp_avg_sq = z();
      adamStepGpu(p, g, st.exp_avg, st.exp_avg_sq, amsgrad ? st.max_exp_avg_sq : null,
        { shrink, sign, l2, beta1, beta2, stepSize: lr / (1 - beta1 ** step), bc2Sqrt: Math.sqrt(1 - beta2 ** step), eps });
      bump(p, st.exp_avg, st.exp_avg_sq, st.max_exp_avg_sq);
    }
    for (const [p, pd, gd] of this.withGrads(group)) {
      const st = this.stateOf(p, () => ({
        step: 0, exp_avg: newBuffer(p.shape), exp_avg_sq: newBuffer(p.shape), max_exp_avg_sq: amsgrad ? newBuffer(p.shape) : null,
      }));
      const step = ++st.step;
      const stepSize = lr / (1 - beta1 ** step);
      const bc2Sqrt = Math.sqrt(1 - beta2 ** step);
      const m = f32(st.exp_avg, 'exp_avg'), v = f32(st.exp_avg_sq, 'exp_avg_sq');
      if (amsgrad && !st.max_exp_avg_sq) st.max_exp_avg_sq = newBuffer(p.shape);
      const vmax = amsgrad && st.max_exp_avg_sq ? f32(st.max_exp_avg_sq, 'max_exp_avg_sq') : null;
      // The fused loop (ir-spec's adamStep), in WebAssembly SIMD where the engine has it.
      fastPrimitives().adamStep(pd, gd, m, v, vmax, { shrink, sign, l2, beta1, beta2, stepSize, bc2Sqrt, eps });
      bump(p, st.exp_avg, st.exp_avg_sq, st.max_exp_avg_sq);
    }
  }
}

/**
 * Adam (torch.optim.Adam); weight decay is an L2 term in the gradient.
 * @example const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
 */
export class Adam extends AdamFamily {
  protected readonly decoupled = false;
  constructor(params: ParamsArg<Resolved>, opts: AdamOptions = {}) { super('Adam', params, defaults(0, opts)); }
}

/**
 * AdamW (torch.optim.AdamW): Adam with decoupled weight decay (default 1e-2).
 * @example const opt = new optim.AdamW(model.parameters(), { lr: 1e-3, weightDecay: 0.05 });
 */
export class AdamW extends AdamFamily {
  protected readonly decoupled = true;
  constructor(params: ParamsArg<Resolved>, opts: AdamOptions = {}) { super('AdamW', params, defaults(1e-2, opts)); }
}
