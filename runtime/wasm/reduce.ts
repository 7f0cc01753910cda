// AssemblyScript source: float32 sums and batch-norm loops for the CPU primitives sum,
// batchNormStats and batchNorm (JavaScript side: runtime/src/wasm/reduce.ts).
// Invariant: like ir-spec's reference loops, every sum accumulates in float64 (two lanes of
// float64 over pairs of the float32 inputs, added together at the end: the order differs from the
// reference's, the float64 rounding keeps the float32 results equal but for rare last-bit ties);
// batchNorm computes x·scale + shift in float64 per element and rounds once, exactly as the
// reference does.

/** Σ of n floats at x, in float64 (two lanes, then a scalar tail). */
@inline function sumRun(x: usize, n: i32): f64 {
  let s0 = f64x2.splat(0), s1 = f64x2.splat(0);
  let k = 0;
  for (; k + 4 <= n; k += 4, x += 16) {
    const v = v128.load(x);
    s0 = f64x2.add(s0, f64x2.promote_low_f32x4(v));
    s1 = f64x2.add(s1, f64x2.promote_low_f32x4(v128.shuffle<i32>(v, v, 2, 3, 0, 1)));
  }
  const s = f64x2.add(s0, s1);
  let t = f64x2.extract_lane(s, 0) + f64x2.extract_lane(s, 1);
  for (; k < n; k++, x += 4) t += <f64>load<f32>(x);
  return t;
}

/**
 * out[k0, k1] = Σ_{r1, r2} x[k0, r1, k1, r2] for x viewed as [K0, R1, K1, R2] (dense floats): every
 * reduction whose reduced dims form at most two runs, one of them innermost — last-dim sums
 * (R1 = 1), per-channel sums of NCHW (K0 = 1), column sums (R2 = 1).
 */
export function sumF32(K0: i32, R1: i32, K1: i32, R2: i32, x: usize, out: usize): void {
  const plane = <usize>(K1 * R2) << 2, run = <usize>R2 << 2;
  if (R2 == 1) {
    // Column sums: accumulate R1 rows of K1 floats into float64 pairs in the output order.
    for (let k0 = 0; k0 < K0; k0++) {
      const base = x + <usize>k0 * R1 * plane;
      const o = out + (<usize>(k0 * K1) << 2);
      let k1 = 0;
      for (; k1 + 2 <= K1; k1 += 2) {
        let s = f64x2.splat(0);
        let p = base + (<usize>k1 << 2);
        for (let r1 = 0; r1 < R1; r1++, p += plane) s = f64x2.add(s, f64x2.promote_low_f32x4(v128.load64_zero(p)));
        store<f32>(o + (<usize>k1 << 2), <f32>f64x2.extract_lane(s, 0));
        store<f32>(o + (<usize>k1 << 2), <f32>f64x2.extract_lane(s, 1), 4);
      }
      for (; k1 < K1; k1++) {
        let s: f64 = 0;
        let p = base + (<usize>k1 << 2);
        for (let r1 = 0; r1 < R1; r1++, p += plane) s += <f64>load<f32>(p);
        store<f32>(o + (<usize>k1 << 2), <f32>s);
      }
    }
    return;
  }
  for (let k0 = 0; k0 < K0; k0++) {
    const base = x + <usize>k0 * R1 * plane;
    for (let k1 = 0; k1 < K1; k1++) {
      let s: f64 = 0;
      let p = base + <usize>k1 * run;
      for (let r1 = 0; r1 < R1; r1++, p += plane) s += sumRun(p, R2);
      store<f32>(out + (<usize>(k0 * K1 + k1) << 2), <f32>s);
    }
  }
}

/**
 * Per-channel mean and biased variance of x [N, C, inner] (two passes in float64, as the
 * reference: the variance sums (x − mean)² so it never cancels).
 */
export function batchNormStats(N: i32, C: i32, inner: i32, x: usize, mean: usize, variance: usize): void {
  const n = <f64>N * <f64>inner;
  const chan = <usize>inner << 2, image = <usize>(C * inner) << 2;
  for (let c = 0; c < C; c++) {
    let s: f64 = 0;
    for (let i = 0; i < N; i++) s += sumRun(x + <usize>i * image + <usize>c * chan, inner);
    const m = s / n;
    const mv = f64x2.splat(m);
    let q: f64 = 0;
    for (let i = 0; i < N; i++) {
      let p = x + <usize>i * image + <usize>c * chan;
      let q0 = f64x2.splat(0), q1 = f64x2.splat(0);
      let k = 0;
      for (; k + 4 <= inner; k += 4, p += 16) {
        const v = v128.load(p);
        const d0 = f64x2.sub(f64x2.promote_low_f32x4(v), mv);
        const d1 = f64x2.sub(f64x2.promote_low_f32x4(v128.shuffle<i32>(v, v, 2, 3, 0, 1)), mv);
        q0 = f64x2.add(q0, f64x2.mul(d0, d0));
        q1 = f64x2.add(q1, f64x2.mul(d1, d1));
      }
      const qs = f64x2.add(q0, q1);
      q += f64x2.extract_lane(qs, 0) + f64x2.extract_lane(qs, 1);
      for (; k < inner; k++, p += 4) { const d = <f64>load<f32>(p) - m; q += d * d; }
    }
    store<f32>(mean + (<usize>c << 2), <f32>m);
    store<f32>(variance + (<usize>c << 2), <f32>(q / n));
  }
}

/** out = x·scale[c] + shift[c] over x [N, C, inner], scale and shift float64 [C]. */
export function batchNorm(N: i32, C: i32, inner: i32, x: usize, scale: usize, shift: usize, out: usize): void {
  for (let i = 0; i < N; i++) {
    for (let c = 0; c < C; c++) {
      const s = load<f64>(scale + (<usize>c << 3)), t = load<f64>(shift + (<usize>c << 3));
      const sv = f64x2.splat(s), tv = f64x2.splat(t);
      const off = <usize>((i * C + c) * inner) << 2;
      let p = x + off, o = out + off;
      let k = 0;
      for (; k + 4 <= inner; k += 4, p += 16, o += 16) {
        const v = v128.load(p);
        const lo = f64x2.add(f64x2.mul(f64x2.promote_low_f32x4(v), sv), tv);
        const hi = f64x2.add(f64x2.mul(f64x2.promote_low_f32x4(v128.shuffle<i32>(v, v, 2, 3, 0, 1)), sv), tv);
        const l = f32x4.demote_f64x2_zero(lo), h = f32x4.demote_f64x2_zero(hi);
        v128.store(o, v128.shuffle<i64>(l, h, 0, 2));
      }
      for (; k < inner; k++, p += 4, o += 4) store<f32>(o, <f32>(<f64>load<f32>(p) * s + t));
    }
  }
}
