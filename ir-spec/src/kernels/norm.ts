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
