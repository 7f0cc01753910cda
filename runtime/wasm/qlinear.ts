// AssemblyScript source: dynamically quantized linear (quantized_linear) for the CPU primitive
// quantizedLinear (JavaScript side: runtime/src/wasm/qlinear.ts), in three steps over the one
// linear memory: rangeF32 (min and max of the activations), quantizeRows (uint8 codes minus the
// zero point, stored as int16 rows padded with zeros to K16 = K rounded up to 16), and qlinear
// (int32 sums against the weight packed by packWeight, then fbgemm's float epilogue).
// Packed weight: rows in groups of 4 (rows past N zero); group g, k-chunk c (16 columns) holds
// its 4 rows' 16 bytes one after the other at g·4·K16 + c·64, so the product streams it once.
// Invariant: bit-identical to ir-spec's quantizeActivations + qgemm + requantizeToFloat —
// every float step is the same float32 operation (multiply, round half to even, add), and the
// int32 sums are exact (|x − zp| ≤ 255, |w| ≤ 128: no pair sum overflows).

/** Rows of the weight that share each loaded activation chunk. */
const RB: i32 = 4;

/** Bytes packWeight writes for an int8 weight [N, K]. */
export function packedWeightBytes(N: i32, K: i32): i32 {
  return ((N + RB - 1) / RB) * RB * ((K + 15) & ~15);
}

/** Packs w (int8 [N, K], row-major) into dst (packedWeightBytes(N, K) bytes), layout above. */
export function packWeight(N: i32, K: i32, w: usize, dst: usize): void {
  const K16 = (K + 15) & ~15;
  const groups = (N + RB - 1) / RB;
  memory.fill(dst, 0, <usize>(groups * RB * K16));
  for (let n = 0; n < N; n++) {
    const g = n / RB, r = n % RB;
    const row = w + <usize>(n * K);
    const base = dst + <usize>(g * RB * K16 + r * 16);
    for (let k = 0; k < K; k++) store<i8>(base + <usize>((k >> 4) * RB * 16 + (k & 15)), load<i8>(row + <usize>k));
  }
}

@inline function lower(l: f32, v: f32): f32 { return v < l ? v : l; }
@inline function higher(h: f32, v: f32): f32 { return h < v ? v : h; }

/** out[0] = min, out[1] = max of n floats at x (NaN skipped, as the reference's comparisons). */
export function rangeF32(n: i32, x: usize, out: usize): void {
  let lo = f32x4.splat(Infinity), hi = f32x4.splat(-Infinity);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(x + (<usize>i << 2));
    lo = f32x4.pmin(lo, v); // v < lo ? v : lo
    hi = f32x4.pmax(hi, v); // hi < v ? v : hi
  }
  let l = f32x4.extract_lane(lo, 0), h = f32x4.extract_lane(hi, 0);
  l = lower(l, f32x4.extract_lane(lo, 1)); l = lower(l, f32x4.extract_lane(lo, 2)); l = lower(l, f32x4.extract_lane(lo, 3));
  h = higher(h, f32x4.extract_lane(hi, 1)); h = higher(h, f32x4.extract_lane(hi, 2)); h = higher(h, f32x4.extract_lane(hi, 3));
  for (; i < n; i++) {
    const v = load<f32>(x + (<usize>i << 2));
    l = lower(l, v);
    h = higher(h, v);
  }
  store<f32>(out, l);
  store<f32>(out, h, 4);
}

/** One code: clamp(nearbyint(v·inv) + zp, 0, 255) − zp (NaN → 0 − zp, as the reference). */
@inline function code(v: f32, inv: f32, zp: f32): i32 {
  const c = min<f32>(max<f32>(nearest<f32>(v * inv) + zp, 0), 255);
  return (c != c ? 0 : <i32>c) - <i32>zp;
}

/**
 * dst (int16 [M, K16]) = clamp(nearbyint(x·inv) + zp, 0, 255) − zp for x float32 [M, K],
 * columns K..K16 zero (they add nothing to the sums).
 */
export function quantizeRows(M: i32, K: i32, K16: i32, x: usize, inv: f32, zp: i32, dst: usize): void {
  const zf = <f32>zp;
  const vinv = f32x4.splat(inv), vzp = f32x4.splat(zf), izp = i32x4.splat(zp);
  const lo = f32x4.splat(0), hi = f32x4.splat(255);
  for (let m = 0; m < M; m++) {
    const xr = x + (<usize>(m * K) << 2), dr = dst + (<usize>(m * K16) << 1);
    let k = 0;
    for (; k + 8 <= K; k += 8) {
      // f32x4.max/min keep NaN and trunc_sat maps it to 0, as the reference's clamp does.
      const a = f32x4.min(f32x4.max(f32x4.add(f32x4.nearest(f32x4.mul(v128.load(xr + (<usize>k << 2)), vinv)), vzp), lo), hi);
      const b = f32x4.min(f32x4.max(f32x4.add(f32x4.nearest(f32x4.mul(v128.load(xr + (<usize>k << 2), 16), vinv)), vzp), lo), hi);
      const qa = i32x4.sub(i32x4.trunc_sat_f32x4_s(a), izp), qb = i32x4.sub(i32x4.trunc_sat_f32x4_s(b), izp);
      v128.store(dr + (<usize>k << 1), i16x8.narrow_i32x4_s(qa, qb));
    }
    for (; k < K; k++) store<i16>(dr + (<usize>k << 1), <i16>code(load<f32>(xr + (<usize>k << 2)), inv, zf));
    for (; k < K16; k++) store<i16>(dr + (<usize>k << 1), 0);
  }
}

@inline function dot16(xl: v128, xh: v128, p: usize): v128 {
  return i32x4.add(i32x4.dot_i16x8_s(xl, v128.load8x8_s(p)), i32x4.dot_i16x8_s(xh, v128.load8x8_s(p, 8)));
}

@inline function hsum(v: v128): i32 {
  return i32x4.extract_lane(v, 0) + i32x4.extract_lane(v, 1) + i32x4.extract_lane(v, 2) + i32x4.extract_lane(v, 3);
}

/** out[m, n] = f32(acc)·(xScale·wScale[n]) (+ bias[n]) in float32, fbgemm's ReQuantizeForFloat. */
@inline function epilogue(out: usize, n: i32, acc: i32, xScale: f32, ws: usize, perChannel: i32, bias: usize): void {
  const s = xScale * load<f32>(ws + (<usize>(perChannel != 0 ? n : 0) << <usize>2));
  let y = <f32>acc * s;
  if (bias != 0) y += load<f32>(bias + (<usize>n << 2));
  store<f32>(out + (<usize>n << 2), y);
}

/**
 * out (float32 [M, N]) = requantized Σ_k xq[m,k]·w[n,k] for xq from quantizeRows (int16
 * [M, K16]) and wp from packWeight; wScale has N floats (perChannel) or one; bias 0: none.
 * Weight groups outermost: a group (4·K16 bytes) stays in cache while every row of x passes.
 */
export function qlinear(M: i32, N: i32, K16: i32, xq: usize, wp: usize, xScale: f32, ws: usize, perChannel: i32, bias: usize, out: usize): void {
  const groups = (N + RB - 1) / RB;
  for (let g = 0; g < groups; g++) {
    const wg = wp + <usize>(g * RB * K16);
    const n0 = g * RB;
    for (let m = 0; m < M; m++) {
      const xr = xq + (<usize>(m * K16) << 1);
      let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
      let p = wg;
      for (let k = 0; k < K16; k += 16) {
        const xl = v128.load(xr + (<usize>k << 1)), xh = v128.load(xr + (<usize>k << 1), 16);
        a0 = i32x4.add(a0, dot16(xl, xh, p));
        a1 = i32x4.add(a1, dot16(xl, xh, p + 16));
        a2 = i32x4.add(a2, dot16(xl, xh, p + 32));
        a3 = i32x4.add(a3, dot16(xl, xh, p + 48));
        p += 64;
      }
      const o = out + (<usize>(m * N) << 2);
      epilogue(o, n0, hsum(a0), xScale, ws, perChannel, bias);
      if (n0 + 1 < N) epilogue(o, n0 + 1, hsum(a1), xScale, ws, perChannel, bias);
      if (n0 + 2 < N) epilogue(o, n0 + 2, hsum(a2), xScale, ws, perChannel, bias);
      if (n0 + 3 < N) epilogue(o, n0 + 3, hsum(a3), xScale, ws, perChannel, bias);
    }
  }
}
