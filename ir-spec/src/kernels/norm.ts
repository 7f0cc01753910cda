// Batch-norm loops over x viewed as [N, C, inner] (NCHW with its spatial dims flattened): the
// per-channel statistics of training mode and the per-channel affine map y = x·scale + shift that
// batch_norm reduces to. The reference the fast primitives (runtime/src/wasm) are tested against.
// Invariant: all arithmetic in float64, results rounded once to float32.

/** Per-channel mean and biased variance, two passes (the variance sums (x − mean)², no cancellation). */
export function batchNormStats(x: Float32Array, N: number, C: number, inner: number): [Float32Array, Float32Array] {
  const n = N * inner;
  const mean = new Float32Array(C), variance = new Float32Array(C);
  for (let c = 0; c < C; c++) {
    let s = 0;
    for (let i = 0; i < N; i++) {
      const o = (i * C + c) * inner;
      for (let k = 0; k < inner; k++) s += x[o + k];
    }
    const m = s / n;
    let q = 0;
    for (let i = 0; i < N; i++) {
      const o = (i * C + c) * inner;
      for (let k = 0; k < inner; k++) { const dx = x[o + k] - m; q += dx * dx; }
    }
    mean[c] = m;
    variance[c] = q / n;
  }
  return [mean, variance];
}

/** y = x·scale[c] + shift[c] per channel, computed in float64 and rounded once. */
export function batchNormAffine(x: Float32Array, N: number, C: number, inner: number, scale: Float64Array, shift: Float64Array): Float32Array {
  const out = new Float32Array(x.length);
  for (let n = 0, o = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      const s = scale[c], t = shift[c];
      for (let i = 0; i < inner; i++, o++) out[o] = x[o] * s + t;
    }
  }
  return out;
}

/**
 * batch_norm_backward over x [N, C, inner] (mean and variance the forward's batch statistics):
 * writes dx into `dx` and returns [dweight, dbias]. With `relu` (the relu of the batch norm's
 * output), g counts only where relu > 0. Per channel, in float64: Σg and Σg·(x − mean), then
 * dx = g·A + x·B + D with A = w·invstd, B = −A·invstd²·Σg(x − mean)/n, D = −A·Σg/n − B·mean (the
 * three terms of dx: direct, through mean, through var), rounded once.
 */
export function batchNormBackward(
  g: Float32Array, x: Float32Array, relu: Float32Array | null, N: number, C: number, inner: number,
  mean: Float32Array, variance: Float32Array, weight: Float32Array | null, eps: number, dx: Float32Array,
): [Float32Array, Float32Array] {
  const sums = new Float64Array(2 * C);
  for (let c = 0; c < C; c++) {
    const m = mean[c];
    let sg = 0, sgx = 0;
    for (let i = 0; i < N; i++) {
      for (let o = (i * C + c) * inner, e = o + inner; o < e; o++) {
        const gv = relu && !(relu[o] > 0) ? 0 : g[o];
        sg += gv;
        sgx += gv * (x[o] - m);
      }
    }
    sums[c] = sg;
    sums[C + c] = sgx;
  }
  const coef = batchNormBackwardCoefficients(sums, N * inner, mean, variance, weight, eps);
  for (let c = 0; c < C; c++) {
    const A = coef[c], B = coef[C + c], D = coef[2 * C + c];
    for (let i = 0; i < N; i++) {
      for (let o = (i * C + c) * inner, e = o + inner; o < e; o++) dx[o] = (relu && !(relu[o] > 0) ? 0 : g[o]) * A + x[o] * B + D;
    }
  }
  const dw = new Float32Array(C), db = new Float32Array(C);
  for (let c = 0; c < C; c++) {
    dw[c] = sums[C + c] * (1 / Math.sqrt(variance[c] + eps));
    db[c] = sums[c];
  }
  return [dw, db];
}

/** The per-channel A, B, D of batchNormBackward ([3C], float64) from its sums Σg [C] and Σg·(x − mean) [C]. */
export function batchNormBackwardCoefficients(sums: Float64Array, n: number, mean: Float32Array, variance: Float32Array, weight: Float32Array | null, eps: number): Float64Array {
  const C = mean.length, coef = new Float64Array(3 * C);
  for (let c = 0; c < C; c++) {
    const invstd = 1 / Math.sqrt(variance[c] + eps);
    const A = (weight ? weight[c] : 1) * invstd, B = (-A * invstd * invstd * sums[C + c]) / n;
    coef[c] = A;
    coef[C + c] = B;
    coef[2 * C + c] = (-A * sums[c]) / n - B * mean[c];
  }
  return coef;
}
