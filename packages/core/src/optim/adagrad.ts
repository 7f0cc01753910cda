// Adagrad — PyTorch 1.13's algorithm exactly (torch.optim.Adagrad), one fused loop per parameter:
//   g = ±grad + wd·p;  clr = lr / (1 + (t−1)·lrDecay);  sum += g²;  p −= clr · g / (sqrt(sum) + eps)
// As in PyTorch, the state (`sum` filled with initialAccumulatorValue) is created in the constructor.

import type { Tensor } from '../tensor.js';
import { adagradStepGpu, stateZerosGpu } from './gpu-steps.js';
import { Optimizer, bump, checkRange, f32, newBuffer, type ParamGroup, type ParamsArg } from './optimizer.js';

export interface AdagradOptions {
  lr?: number;
  lrDecay?: number;
  weightDecay?: number;
  initialAccumulatorValue?: number;
  eps?: number;
  maximize?: boolean;
}

export interface AdagradState { [key: string]: Tensor | number | null; step: number; sum: Tensor }

type Resolved = Required<AdagradOptions>;

/**
 * Adagrad (torch.optim.Adagrad).
 * @example const opt = new optim.Adagrad(model.parameters(), { lr: 0.1 });
 */
export class Adagrad extends Optimizer<Resolved, AdagradState> {
  protected override readonly gpuSteps = true;
  constructor(params: ParamsArg<Resolved>, opts: AdagradOptions = {}) {
    super('Adagrad', params, { lr: 1e-2, lrDecay: 0, weightDecay: 0, initialAccumulatorValue: 0, eps: 1e-10, maximize: false, ...opts });
    for (const g of this.paramGroups) for (const p of g.params) this.stateOf(p, () => this.initState(p, g));
  }

  private initState(p: Tensor, g: ParamGroup<Resolved>): AdagradState {
    return { step: 0, sum: newBuffer(p.shape, undefined, g.initialAccumulatorValue) };
  }

  protected validate(g: ParamGroup<Resolved>): void {
    checkRange('Adagrad', 'learning rate lr', g.lr);
    checkRange('Adagrad', 'lrDecay', g.lrDecay);
    checkRange('Adagrad', 'weightDecay', g.weightDecay);
    checkRange('Adagrad', 'initialAccumulatorValue', g.initialAccumulatorValue);
    checkRange('Adagrad', 'eps', g.eps);
  }

  protected updateGroup(group: ParamGroup<Resolved>): void {
    const { lr, lrDecay, weightDecay: wd, eps, maximize } = group;
    const sign = maximize ? -1 : 1;
    for (const [p, pd, gd] of this.withGrads(group)) {
      const n = p.numel();
      // Parameters added later with addParamGroup get their state here.
      const st = this.stateOf(p, () => this.initState(p, group));
      const step = ++st.step;
      const clr = lr / (1 + (step - 1) * lrDecay);
      const s = f32(st.sum, 'sum');
      for (let i = 0; i < n; i++) {
        const g = sign * gd[i] + wd * pd[i];
        s[i] += g * g;
        pd[i] -= (clr * g) / (Math.sqrt(s[i]) + eps);
      }
      bump(p, st.sum);
    }
    for (const [p, g] of this.onGpu(group)) {
      const st = this.stateOf(p, () => this.initState(p, group));
      // The state made on the CPU (constructor) moves to the GPU at the parameter's first GPU step.
      if (st.sum.device !== 'webgpu') st.sum = stateZerosGpu(p.shape, f32(st.sum, 'sum'));
      const step = ++st.step;
      adagradStepGpu(p, g, st.sum, { clr: lr / (1 + (step - 1) * lrDecay), sign, wd, eps });
      bump(p, st.sum);
    }
  }
}
