// AssemblyScript source: the Adam/AdamW update for the CPU primitive adamStep (JavaScript side:
// runtime/src/wasm/optim.ts), two elements per float64x2 step.
// Invariant: the same float64 operations in the same order as ir-spec's adamStep, with p, m, v and
// vmax rounded to float32 where the reference stores them — so results are bit-identical.

@inline function load2(p: usize): v128 {
  return f64x2.promote_low_f32x4(v128.load64_zero(p));
}
@inline function round2(x: v128): v128 {
  return f64x2.promote_low_f32x4(f32x4.demote_f64x2_zero(x));
}
@inline function store2(p: usize, x: v128): void {
  v128.store64_lane(p, f32x4.demote_f64x2_zero(x), 0);
}

/** One element, the reference's loop body. */
@inline function step1(
  p: usize, g: usize, m: usize, v: usize, vmax: usize,
  shrink: f64, sign: f64, l2: f64, beta1: f64, beta2: f64, stepSize: f64, bc2Sqrt: f64, eps: f64,
): void {
  let pi = <f64>load<f32>(p);
  if (shrink != 1) { pi = <f64><f32>(pi * shrink); }
  const gi = sign * <f64>load<f32>(g) + l2 * pi;
  const mi = <f64><f32>(beta1 * <f64>load<f32>(m) + (1 - beta1) * gi);
  const vi = <f64><f32>(beta2 * <f64>load<f32>(v) + (1 - beta2) * gi * gi);
  store<f32>(m, <f32>mi);
  store<f32>(v, <f32>vi);
  let vh = vi;
  if (vmax) {
    const x = <f64>load<f32>(vmax);
    if (x > vh) vh = x; else store<f32>(vmax, <f32>vh);
  }
  store<f32>(p, <f32>(pi - (stepSize * mi) / (Math.sqrt(vh) / bc2Sqrt + eps)));
}

/** Updates n elements of p, m, v (vmax: 0 without amsgrad) in place from g. */
export function adamStep(
  n: i32, p: usize, g: usize, m: usize, v: usize, vmax: usize,
  shrink: f64, sign: f64, l2: f64, beta1: f64, beta2: f64, stepSize: f64, bc2Sqrt: f64, eps: f64,
): void {
  const vShrink = f64x2.splat(shrink), vSign = f64x2.splat(sign), vL2 = f64x2.splat(l2);
  const vB1 = f64x2.splat(beta1), vB2 = f64x2.splat(beta2), vC1 = f64x2.splat(1 - beta1), vC2 = f64x2.splat(1 - beta2);
  const vStep = f64x2.splat(stepSize), vBc = f64x2.splat(bc2Sqrt), vEps = f64x2.splat(eps);
  let k = 0;
  if (!vmax) {
    for (; k + 2 <= n; k += 2, p += 8, g += 8, m += 8, v += 8) {
      let pi = load2(p);
      if (shrink != 1) pi = round2(f64x2.mul(pi, vShrink));
      const gi = f64x2.add(f64x2.mul(vSign, load2(g)), f64x2.mul(vL2, pi));
      const mi = round2(f64x2.add(f64x2.mul(vB1, load2(m)), f64x2.mul(vC1, gi)));
      const vi = round2(f64x2.add(f64x2.mul(vB2, load2(v)), f64x2.mul(f64x2.mul(vC2, gi), gi)));
      store2(m, mi);
      store2(v, vi);
      const upd = f64x2.div(f64x2.mul(vStep, mi), f64x2.add(f64x2.div(f64x2.sqrt(vi), vBc), vEps));
      store2(p, f64x2.sub(pi, upd));
    }
  }
  const dv: usize = vmax ? 4 : 0;
  for (; k < n; k++, p += 4, g += 4, m += 4, v += 4, vmax += dv) step1(p, g, m, v, vmax, shrink, sign, l2, beta1, beta2, stepSize, bc2Sqrt, eps);
}
