// AssemblyScript source: batch_norm's backward for the CPU primitive batchNormBackward (JavaScript
// side: runtime/src/wasm/norm-backward.ts) — the gradient of batch norm in training mode and of
// layer norm (packages/core normalizes the rows of [1, rows, D] with batch_norm, so its backward
// is this over C = rows). Per channel: Σg and Σg·(x − mean) in float64 (two lanes of float64 over
// pairs of the float32 inputs), then dx = g·A + x·B + D per element in float64, rounded once.
// Invariant: the formulas and their operation order are ir-spec's kernels/norm.ts batchNormBackward;
// only the order of the float64 sums differs, so results equal the reference but for rare
// last-bit ties.

/**
 * dx [N, C, inner], dw [C] and db [C] from g and x [N, C, inner], float32 mean and var [C],
 * weight [C] (0: none) and relu output [N, C, inner] (0: none; g counts only where it is > 0).
 */
export function batchNormBackward(
  N: i32, C: i32, inner: i32, g: usize, x: usize, mean: usize, variance: usize, weight: usize, relu: usize, eps: f64,
  dx: usize, dw: usize, db: usize,
): void {
  const n = <f64>N * <f64>inner;
  const zero = f32x4.splat(0);
  for (let c = 0; c < C; c++) {
    const m = <f64>load<f32>(mean + (<usize>c << 2));
    const mv = f64x2.splat(m);
    let sg: f64 = 0, sgx: f64 = 0;
    for (let i = 0; i < N; i++) {
      const off = <usize>((i * C + c) * inner) << 2;
      let pg = g + off, px = x + off, pr = relu + off;
      let s0 = f64x2.splat(0), s1 = f64x2.splat(0), q0 = f64x2.splat(0), q1 = f64x2.splat(0);
      let k = 0;
      for (; k + 4 <= inner; k += 4, pg += 16, px += 16, pr += 16) {
        let v = v128.load(pg);
        if (relu != 0) v = v128.and(v, f32x4.gt(v128.load(pr), zero));
        const xv = v128.load(px);
        const g0 = f64x2.promote_low_f32x4(v), g1 = f64x2.promote_low_f32x4(v128.shuffle<i32>(v, v, 2, 3, 0, 1));
        const d0 = f64x2.sub(f64x2.promote_low_f32x4(xv), mv), d1 = f64x2.sub(f64x2.promote_low_f32x4(v128.shuffle<i32>(xv, xv, 2, 3, 0, 1)), mv);
        s0 = f64x2.add(s0, g0); s1 = f64x2.add(s1, g1);
        q0 = f64x2.add(q0, f64x2.mul(g0, d0)); q1 = f64x2.add(q1, f64x2.mul(g1, d1));
      }
      const s = f64x2.add(s0, s1), q = f64x2.add(q0, q1);
      sg += f64x2.extract_lane(s, 0) + f64x2.extract_lane(s, 1);
      sgx += f64x2.extract_lane(q, 0) + f64x2.extract_lane(q, 1);
      for (; k < inner; k++, pg += 4, px += 4, pr += 4) {
        const gv: f64 = relu != 0 && !(load<f32>(pr) > 0) ? 0 : <f64>load<f32>(pg);
        sg += gv;
        sgx += gv * (<f64>load<f32>(px) - m);
      }
    }
    const invstd = 1 / Math.sqrt(<f64>load<f32>(variance + (<usize>c << 2)) + eps);
    const A = (weight != 0 ? <f64>load<f32>(weight + (<usize>c << 2)) : 1) * invstd;
    const B = (-A * invstd * invstd * sgx) / n, D = (-A * sg) / n - B * m;
    const av = f64x2.splat(A), bv = f64x2.splat(B), dv = f64x2.splat(D);
    for (let i = 0; i < N; i++) {
      const off = <usize>((i * C + c) * inner) << 2;
      let pg = g + off, px = x + off, pr = relu + off, po = dx + off;
      let k = 0;
      for (; k + 4 <= inner; k += 4, pg += 16, px += 16, pr += 16, po += 16) {
        let v = v128.load(pg);
        if (relu != 0) v = v128.and(v, f32x4.gt(v128.load(pr), zero));
        const xv = v128.load(px);
        const lo = f64x2.add(f64x2.add(f64x2.mul(f64x2.promote_low_f32x4(v), av), f64x2.mul(f64x2.promote_low_f32x4(xv), bv)), dv);
        const hi = f64x2.add(f64x2.add(
          f64x2.mul(f64x2.promote_low_f32x4(v128.shuffle<i32>(v, v, 2, 3, 0, 1)), av),
          f64x2.mul(f64x2.promote_low_f32x4(v128.shuffle<i32>(xv, xv, 2, 3, 0, 1)), bv)), dv);
        v128.store(po, v128.shuffle<i64>(f32x4.demote_f64x2_zero(lo), f32x4.demote_f64x2_zero(hi), 0, 2));
      }
      for (; k < inner; k++, pg += 4, px += 4, pr += 4, po += 4) {
        const gv: f64 = relu != 0 && !(load<f32>(pr) > 0) ? 0 : <f64>load<f32>(pg);
        store<f32>(po, <f32>(gv * A + <f64>load<f32>(px) * B + D));
      }
    }
    store<f32>(dw + (<usize>c << 2), <f32>(sgx * invstd));
    store<f32>(db + (<usize>c << 2), <f32>sg);
  }
}
