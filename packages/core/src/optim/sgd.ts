// SGD with momentum, dampening, Nesterov, L2 weight decay and maximize — PyTorch 1.13's
// algorithm exactly (torch.optim.SGD), as one fused loop per parameter:
//   g = ±grad + wd·p;  buf = g on the first step, else momentum·buf + (1−dampening)·g;
//   d = nesterov ? g + momentum·buf : buf (or g without momentum);  p −= lr·d

import type { Tensor } from '../tensor.js';
import { Optimizer, bump, checkRange, f32, newBuffer, type ParamGroup, type ParamsArg } from './optimizer.js';
import { sgdStepGpu } from './gpu-steps.js';

export interface SGDOptions {
  /** Learning rate (required, as in PyTorch). */
  lr: number;
  momentum?: number;
  dampening?: number;
  /** L2 penalty added to the gradient. */
  weightDecay?: number;
  nesterov?: boolean;
  /** Ascend instead of descend. */
  maximize?: boolean;
}

/** `momentum_buffer` stays null without momentum (PyTorch stores None). */
export interface SGDState { [key: string]: Tensor | number | null; momentum_buffer: Tensor | null }

type Resolved = Required<SGDOptions>;

/**
 * Stochastic gradient descent (torch.optim.SGD).
 * @example const opt = new optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9, nesterov: true });
 */
export class SGD extends Optimizer<Resolved, SGDState> {
  protected override readonly gpuSteps = true;
  constructor(params: ParamsArg<Resolved>, opts: SGDOptions) {
    if (opts?.lr === undefined) throw new Error('SGD: the learning rate lr is required, e.g. new SGD(params, { lr: 0.01 })');
    super('SGD', params, { momentum: 0, dampening: 0, weightDecay: 0, nesterov: false, maximize: false, ...opts });
  }

  protected validate(g: ParamGroup<Resolved>): void {
    checkRange('SGD', 'learning rate lr', g.lr);
    checkRange('SGD', 'momentum', g.momentum);
    checkRange('SGD', 'weightDecay', g.weightDecay);
    if (!Number.isFinite(g.dampening)) throw new Error(`SGD: invalid dampening ${g.dampening}`);
    if (g.nesterov && (g.momentum <= 0 || g.dampening !== 0)) {
      throw new Error(`SGD: Nesterov momentum requires a momentum > 0 and zero dampening (got momentum ${g.momentum}, dampening ${g.dampening})`);
    }
  }

  protected updateGroup(group: ParamGroup<Resolved>): void {
    const { lr, momentum, dampening, weightDecay: wd, nesterov, maximize } = group;
    const sign = maximize ? -1 : 1;
    for (const [p, g] of this.onGpu(group)) {
      const st = this.stateOf(p, () => ({ momentum_buffer: null }));
      st.momentum_buffer = sgdStepGpu(p, g, st.momentum_buffer, { lr, sign, wd, momentum, dampening, nesterov });
      bump(p, st.momentum_buffer);
    }
    for (const [p, pd, gd] of this.withGrads(group)) {
      const n = p.numel();
      const st = this.stateOf(p, () => ({ momentum_buffer: null }));
      if (momentum === 0) {
        for (let i = 0; i < n; i++) pd[i] -= lr * (sign * gd[i] + wd * pd[i]);
        bump(p);
        continue;
      }
      const first = st.momentum_buffer === null;
      const buf = st.momentum_buffer ?? (st.momentum_buffer = newBuffer(p.shape));
      const bd = f32(buf, 'SGD: momentum_buffer');
      for (let i = 0; i < n; i++) {
        const g = sign * gd[i] + wd * pd[i];
        bd[i] = first ? g : momentum * bd[i] + (1 - dampening) * g;
        pd[i] -= lr * (nesterov ? g + momentum * bd[i] : bd[i]);
      }
      bump(p, buf);
    }
  }
}
