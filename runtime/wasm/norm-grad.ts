// AssemblyScript source: batch_norm_backward's two passes over x [N, C, inner] for the CPU
// primitive batchNormBackward (JavaScript side: runtime/src/wasm/norm-grad.ts), four float32
// elements per step, each widened to two float64x2 halves; the relu mask is a lane select.
// Invariant: the reference's float64 operations per element (ir-spec/src/kernels/norm.ts), so
// dx is bit-identical for given coefficients; the sums only add in another order.

@inline function lo(v: v128): v128 { return f64x2.promote_low_f32x4(v); }
@inline function hi(v: v128): v128 { return f64x2.promote_low_f32x4(v128.shuffle<i32>(v, v, 2, 3, 0, 1)); }

/** g where relu > 0 (relu 0: no mask), as the reference counts it: 0 elsewhere and for NaN. */
@inline function masked(g: usize, relu: usize, off: usize): v128 {
  const v = v128.load(g + off);
  return relu ? v128.and(v, f32x4.gt(v128.load(relu + off), f32x4.splat(0))) : v;
}
@inline function masked1(g: usize, relu: usize, off: usize): f64 {
  return relu != 0 && !(load<f32>(relu + off) > 0) ? 0 : <f64>load<f32>(g + off);
}

/** sums[c] = Σ g, sums[C + c] = Σ g·(x − mean[c]) per channel, float64 (mean float32 [C]). */
export function batchNormGradSums(N: i32, C: i32, inner: i32, g: usize, x: usize, relu: usize, mean: usize, sums: usize): void {
  const chan = <usize>inner << 2, image = <usize>(C * inner) << 2;
  for (let c = 0; c < C; c++) {
    const m = <f64>load<f32>(mean + (<usize>c << 2)), mv = f64x2.splat(m);
    let s0 = f64x2.splat(0), s1 = f64x2.splat(0), q0 = f64x2.splat(0), q1 = f64x2.splat(0);
    let sg: f64 = 0, sgx: f64 = 0;
    for (let i = 0; i < N; i++) {
      const base = <usize>i * image + <usize>c * chan;
      let k = 0, off = base;
      for (; k + 4 <= inner; k += 4, off += 16) {
        const gv = masked(g, relu, off), xv = v128.load(x + off);
        const gl = lo(gv), gh = hi(gv);
        s0 = f64x2.add(s0, gl);
        s1 = f64x2.add(s1, gh);
        q0 = f64x2.add(q0, f64x2.mul(gl, f64x2.sub(lo(xv), mv)));
        q1 = f64x2.add(q1, f64x2.mul(gh, f64x2.sub(hi(xv), mv)));
      }
      for (; k < inner; k++, off += 4) {
        const gv = masked1(g, relu, off);
        sg += gv;
        sgx += gv * (<f64>load<f32>(x + off) - m);
      }
    }
    const s = f64x2.add(s0, s1), q = f64x2.add(q0, q1);
    store<f64>(sums + (<usize>c << 3), sg + f64x2.extract_lane(s, 0) + f64x2.extract_lane(s, 1));
    store<f64>(sums + (<usize>(C + c) << 3), sgx + f64x2.extract_lane(q, 0) + f64x2.extract_lane(q, 1));
  }
}

/** dx = g·A[c] + x·B[c] + D[c] (coef float64 [3C]: A, B, D), rounded once to float32. */
export function batchNormGradInput(N: i32, C: i32, inner: i32, g: usize, x: usize, relu: usize, coef: usize, dx: usize): void {
  const chan = <usize>inner << 2, image = <usize>(C * inner) << 2;
  for (let c = 0; c < C; c++) {
    const A = load<f64>(coef + (<usize>c << 3)), B = load<f64>(coef + (<usize>(C + c) << 3)), D = load<f64>(coef + (<usize>(2 * C + c) << 3));
    const av = f64x2.splat(A), bv = f64x2.splat(B), dv = f64x2.splat(D);
    for (let i = 0; i < N; i++) {
      let k = 0, off = <usize>i * image + <usize>c * chan;
      for (; k + 4 <= inner; k += 4, off += 16) {
        const gv = masked(g, relu, off), xv = v128.load(x + off);
        const l = f64x2.add(f64x2.add(f64x2.mul(lo(gv), av), f64x2.mul(lo(xv), bv)), dv);
        const h = f64x2.add(f64x2.add(f64x2.mul(hi(gv), av), f64x2.mul(hi(xv), bv)), dv);
        v128.store(dx + off, v128.shuffle<i64>(f32x4.demote_f64x2_zero(l), f32x4.demote_f64x2_zero(h), 0, 2));
      }
      for (; k < inner; k++, off += 4) store<f32>(dx + off, <f32>(masked1(g, relu, off) * A + <f64>load<f32>(x + off) * B + D));
    }
  }
}
