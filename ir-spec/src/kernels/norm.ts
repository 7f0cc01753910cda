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

/**
 * y = x·scale[c] + shift[c] per channel, computed in float64 and rounded once; into `out` when
 * given (as many elements as x; it may be x itself: element k is read before it is written).
 */
export function batchNormAffine(x: Float32Array, N: number, C: number, inner: number, scale: Float64Array, shift: Float64Array, out: Float32Array = new Float32Array(x.length)): Float32Array {
  for (let n = 0, o = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      const s = scale[c], t = shift[c];
      for (let i = 0; i < inner; i++, o++) out[o] = x[o] * s + t;
    }
  }
  return out;
}

/**
 * batch_norm's backward from grad_output g (masked to relu_output > 0 when `relu` is given):
 * writes dx into `dx` and returns [dweight, dbias]. Per channel, in float64: Σg and Σg·(x − mean),
 * then dx = g·A + x·B + D with A = w·invstd, B = −A·invstd²·Σg(x − mean)/n, D = −A·Σg/n − B·mean
 * (the three terms of dx: direct, through mean, through var).
 */
export function batchNormBackward(
  G: Float32Array, X: Float32Array, M: ArrayLike<number>, V: ArrayLike<number>, Wd: ArrayLike<number> | undefined, R: Float32Array | undefined,
  N: number, C: number, inner: number, eps: number, dx: Float32Array,
): [Float32Array, Float32Array] {
  const n = N * inner;
  const dw = new Float32Array(C), db = new Float32Array(C);
  for (let c = 0; c < C; c++) {
    const m = M[c];
    let sg = 0, sgx = 0;
    for (let i = 0; i < N; i++) {
      if (R) for (let o = (i * C + c) * inner, e = o + inner; o < e; o++) { const gv = R[o] > 0 ? G[o] : 0; sg += gv; sgx += gv * (X[o] - m); }
      else for (let o = (i * C + c) * inner, e = o + inner; o < e; o++) { sg += G[o]; sgx += G[o] * (X[o] - m); }
    }
    const invstd = 1 / Math.sqrt(V[c] + eps);
    const A = (Wd ? Wd[c] : 1) * invstd, B = (-A * invstd * invstd * sgx) / n, D = (-A * sg) / n - B * m;
    for (let i = 0; i < N; i++) {
      if (R) for (let o = (i * C + c) * inner, e = o + inner; o < e; o++) dx[o] = (R[o] > 0 ? G[o] : 0) * A + X[o] * B + D;
      else for (let o = (i * C + c) * inner, e = o + inner; o < e; o++) dx[o] = G[o] * A + X[o] * B + D;
    }
    dw[c] = sgx * invstd;
    db[c] = sg;
  }
  return [dw, db];
}
