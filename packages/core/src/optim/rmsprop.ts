// RMSprop — PyTorch 1.13's algorithm exactly (torch.optim.RMSprop), one fused loop per parameter:
//   g = ±grad + wd·p;  s = α·s + (1−α)·g²;  centered: a = α·a + (1−α)·g, avg = sqrt(s − a²) + eps
//   else avg = sqrt(s) + eps;  momentum: buf = μ·buf + g/avg, p −= lr·buf;  else p −= lr·g/avg

import type { Tensor } from '../tensor.js';
import { rmspropStepGpu, stateZerosGpu } from './gpu-steps.js';
import { Optimizer, bump, checkRange, f32, newBuffer, type ParamGroup, type ParamsArg } from './optimizer.js';

export interface RMSpropOptions {
  lr?: number;
  /** Smoothing constant of the squared-gradient average. */
  alpha?: number;
  eps?: number;
  weightDecay?: number;
  momentum?: number;
  /** Normalizes by the estimated variance (subtracts the squared mean gradient). */
  centered?: boolean;
  maximize?: boolean;
}

export interface RMSpropState {
  [key: string]: Tensor | number | null;
  step: number;
  square_avg: Tensor;
  /** Only with momentum > 0. */
  momentum_buffer: Tensor | null;
  /** Only when centered. */
  grad_avg: Tensor | null;
}

type Resolved = Required<RMSpropOptions>;

/**
 * RMSprop (torch.optim.RMSprop).
 * @example const opt = new optim.RMSprop(model.parameters(), { lr: 1e-2, alpha: 0.9 });
 */
export class RMSprop extends Optimizer<Resolved, RMSpropState> {
  protected override readonly gpuSteps = true;
  constructor(params: ParamsArg<Resolved>, opts: RMSpropOptions = {}) {
    super('RMSprop', params, { lr: 1e-2, alpha: 0.99, eps: 1e-8, weightDecay: 0, momentum: 0, centered: false, maximize: false, ...opts });
  }

  protected validate(g: ParamGroup<Resolved>): void {
    checkRange('RMSprop', 'learning rate lr', g.lr);
    checkRange('RMSprop', 'eps', g.eps);
    checkRange('RMSprop', 'momentum', g.momentum);
    checkRange('RMSprop', 'weightDecay', g.weightDecay);
    checkRange('RMSprop', 'alpha', g.alpha);
  }

  protected updateGroup(group: ParamGroup<Resolved>): void {
    const { lr, alpha, eps, weightDecay: wd, momentum, centered, maximize } = group;
    const sign = maximize ? -1 : 1;
    for (const [p, pd, gd] of this.withGrads(group)) {
      const n = p.numel();
      const st = this.stateOf(p, () => ({ step: 0, square_avg: newBuffer(p.shape), momentum_buffer: null, grad_avg: null }));
      st.step++;
      if (momentum > 0 && !st.momentum_buffer) st.momentum_buffer = newBuffer(p.shape);
      if (centered && !st.grad_avg) st.grad_avg = newBuffer(p.shape);
      const s = f32(st.square_avg, 'square_avg');
      const buf = momentum > 0 && st.momentum_buffer ? f32(st.momentum_buffer, 'momentum_buffer') : null;
      const a = centered && st.grad_avg ? f32(st.grad_avg, 'grad_avg') : null;
      for (let i = 0; i < n; i++) {
        const g = sign * gd[i] + wd * pd[i];
        s[i] = alpha * s[i] + (1 - alpha) * g * g;
        let avg: number;
        if (a) {
          a[i] = alpha * a[i] + (1 - alpha) * g;
          avg = Math.sqrt(s[i] - a[i] * a[i]) + eps;
        } else avg = Math.sqrt(s[i]) + eps;
        if (buf) {
          buf[i] = momentum * buf[i] + g / avg;
          pd[i] -= lr * buf[i];
        } else pd[i] -= (lr * g) / avg;
      }
      bump(p, st.square_avg, st.momentum_buffer, st.grad_avg);
    }
    for (const [p, g] of this.onGpu(group)) {
      const st = this.stateOf(p, () => ({ step: 0, square_avg: stateZerosGpu(p.shape), momentum_buffer: null, grad_avg: null }));
      st.step++;
      if (momentum > 0 && !st.momentum_buffer) st.momentum_buffer = stateZerosGpu(p.shape);
      if (centered && !st.grad_avg) st.grad_avg = stateZerosGpu(p.shape);
      rmspropStepGpu(p, g, st.square_avg, momentum > 0 ? st.momentum_buffer : null, centered ? st.grad_avg : null, { lr, sign, wd, alpha, eps, momentum });
      bump(p, st.square_avg, st.momentum_buffer, st.grad_avg);
    }
  }
}
