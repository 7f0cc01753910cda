// The Adam/AdamW update of one parameter (PyTorch 1.13's algorithm, see packages/core/src/optim/
// adam.ts), the reference the fast primitive (runtime/src/wasm/optim.ts) is tested against.
// Invariant: every element is computed in float64 from the float32 state, and p, m, v (and the
// running max of v) are rounded to float32 where they are stored, in this order of operations.

/** The per-step scalars of an Adam update (all float64). */
export interface AdamScalars {
  /** AdamW's decoupled decay factor 1 − lr·wd (1 for Adam). */
  shrink: number;
  /** −1 when maximizing, else 1. */
  sign: number;
  /** Adam's L2 weight decay (0 for AdamW). */
  l2: number;
  beta1: number;
  beta2: number;
  /** lr / (1 − β1^t). */
  stepSize: number;
  /** sqrt(1 − β2^t). */
  bc2Sqrt: number;
  eps: number;
}

/** Updates p, m, v (and vmax with amsgrad) in place from the gradient g. */
export function adamStep(p: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, vmax: Float32Array | null, s: AdamScalars): void {
  const { shrink, sign, l2, beta1, beta2, stepSize, bc2Sqrt, eps } = s;
  for (let i = 0; i < p.length; i++) {
    if (shrink !== 1) p[i] *= shrink;
    const gi = sign * g[i] + l2 * p[i];
    m[i] = beta1 * m[i] + (1 - beta1) * gi;
    v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
    let vh = v[i];
    if (vmax) { if (vmax[i] > vh) vh = vmax[i]; else vmax[i] = vh; }
    p[i] -= (stepSize * m[i]) / (Math.sqrt(vh) / bc2Sqrt + eps);
  }
}
