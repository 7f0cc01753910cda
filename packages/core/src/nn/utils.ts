// nn.utils: gradient clipping (clipGradNorm_, clipGradValue_) and flattening parameters to one
// vector and back (parametersToVector, vectorToParameters). Invariant: gradients and parameters
// are changed in place under noGrad (storage identity kept, so optimizers and modules see the
// change), with PyTorch's float32 arithmetic: total norm = ‖(‖g₁‖, ‖g₂‖, …)‖, scale =
// min(maxNorm / (total + 1e-6), 1).

import { fmtShape } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { zeros } from '../creation.js';
import { noGrad } from '../autograd/grad-mode.js';
import { cat, stack } from '../ops/shape.js';

function asList(where: string, parameters: Tensor | Iterable<Tensor>): Tensor[] {
  const list = parameters instanceof Tensor ? [parameters] : Array.from(parameters);
  list.forEach((p, i) => { if (!(p instanceof Tensor)) throw new Error(`${where}: parameter ${i} is not a Tensor`); });
  return list;
}

export interface ClipGradNormOptions {
  /** The p of the p-norm (default 2; Infinity for the max-abs norm). */
  normType?: number;
  /** Throw when the total norm is nan or infinite (default false: scale anyway, as PyTorch). */
  errorIfNonfinite?: boolean;
}

/**
 * Scales the gradients of `parameters` in place so that their total norm is at most `maxNorm`;
 * returns the total norm before clipping (a 0-d tensor). Parameters without a gradient are skipped.
 * @example loss.backward(); nn.utils.clipGradNorm_(model.parameters(), 1.0); opt.step();
 */
export function clipGradNorm_(parameters: Tensor | Iterable<Tensor>, maxNorm: number, opts: ClipGradNormOptions = {}): Tensor {
  const normType = opts.normType ?? 2;
  if (!(maxNorm >= 0)) throw new Error(`clipGradNorm_: maxNorm must be a number >= 0, got ${maxNorm}`);
  if (!(normType > 0)) throw new Error(`clipGradNorm_: normType must be > 0 (or Infinity), got ${normType}`);
  const grads = asList('clipGradNorm_', parameters).map((p) => p.grad).filter((g): g is Tensor => g !== null);
  return noGrad(() => {
    if (grads.length === 0) return zeros([]);
    const total = normType === Infinity
      ? stack(grads.map((g) => g.abs().amax()), 0).amax()
      : stack(grads.map((g) => g.norm(normType)), 0).norm(normType);
    const t = total.item();
    if (opts.errorIfNonfinite && !Number.isFinite(t)) {
      throw new Error(`clipGradNorm_: the total norm of order ${normType} of the gradients is ${t}; pass { errorIfNonfinite: false } to clip anyway`);
    }
    const coef = total.add(1e-6).reciprocal().mul(maxNorm).clamp(null, 1);
    for (const g of grads) g.mul_(coef);
    return total;
  });
}

/** Clamps every gradient entry of `parameters` to [-clipValue, clipValue] in place. */
export function clipGradValue_(parameters: Tensor | Iterable<Tensor>, clipValue: number): void {
  if (!(clipValue >= 0)) throw new Error(`clipGradValue_: clipValue must be a number >= 0, got ${clipValue}`);
  noGrad(() => {
    for (const p of asList('clipGradValue_', parameters)) if (p.grad) p.grad.clamp_(-clipValue, clipValue);
  });
}

/** The parameters flattened and concatenated into one 1-D tensor (a copy; differentiable). */
export function parametersToVector(parameters: Iterable<Tensor>): Tensor {
  const list = asList('parametersToVector', parameters);
  if (list.length === 0) return zeros([0]);
  return cat(list.map((p) => p.reshape([-1])), 0);
}

/** Copies consecutive slices of the 1-D `vec` into the parameters, in order (in place). */
export function vectorToParameters(vec: Tensor, parameters: Iterable<Tensor>): void {
  if (vec.ndim !== 1) throw new Error(`vectorToParameters: expected a 1-D vector, got shape ${fmtShape(vec.shape)}`);
  const list = asList('vectorToParameters', parameters);
  const need = list.reduce((n, p) => n + p.numel(), 0);
  if (need !== vec.shape[0]) throw new Error(`vectorToParameters: the vector has ${vec.shape[0]} entries, the parameters ${need}`);
  noGrad(() => {
    let off = 0;
    for (const p of list) {
      p.copy_(vec.slice(0, off, off + p.numel()).reshape(p.shape));
      off += p.numel();
    }
  });
}
