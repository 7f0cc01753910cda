// AssemblyScript source: dynamically quantized linear (quantized_linear) for the CPU primitive
// quantizedLinear (JavaScript side: runtime/src/wasm/qlinear.ts), in three steps over the one
// linear memory: rangeF32 (min and max of the activations), quantizeRows (uint8 codes minus the
// zero point, stored as int16 rows padded with zeros to K16 = K rounded up to 16), and qlinear
// (int32 sums against the weight packed by packWeight, then fbgemm's float epilogue and, for
// quantized_linear {relu}, the relu).
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

/**
 * out[m, n] = f32(acc)·(xScale·wScale[n]) (+ bias[n]) in float32, fbgemm's ReQuantizeForFloat,
 * then (relu != 0) ir-spec's relu bit rule: a set sign bit gives +0 unless the value is a NaN.
 */
@inline function epilogue(out: usize, n: i32, acc: i32, xScale: f32, ws: usize, perChannel: i32, bias: usize, relu: i32): void {
  const s = xScale * load<f32>(ws + (<usize>(perChannel != 0 ? n : 0) << <usize>2));
  let y = <f32>acc * s;
  if (bias != 0) y += load<f32>(bias + (<usize>n << 2));
  if (relu != 0) {
    const b = reinterpret<i32>(y);
    y = reinterpret<f32>(b & ~((b >> 31) & ~((0x7f800000 - (b & 0x7fffffff)) >> 31)));
  }
  store<f32>(out + (<usize>n << 2), y);
}

/**
 * out (float32 [M, N]) = requantized Σ_k xq[m,k]·w[n,k] for xq from quantizeRows (int16
 * [M, K16]) and wp from packWeight, over the weight's 4-row groups g0..g1 only (the columns
 * 4·g0 .. 4·g1 of out: the unit a worker thread's chunk takes); xScale: the float32 at sx; wScale
 * has N floats (perChannel) or one; bias 0: none; relu != 0: relu applied (see epilogue).
 * Weight groups outermost: a group (4·K16 bytes) stays in cache while every row of x passes,
 * two rows at a time so each widened weight chunk serves both.
 */
export function qlinear(g0: i32, g1: i32, M: i32, N: i32, K16: i32, xq: usize, wp: usize, sx: usize, ws: usize, perChannel: i32, bias: usize, relu: i32, out: usize): void {
  const xScale = load<f32>(sx);
  for (let g = g0; g < g1; g++) {
    const wg = wp + <usize>(g * RB * K16);
    const n0 = g * RB;
    let m = 0;
    for (; m + 2 <= M; m += 2) {
      const xr = xq + (<usize>(m * K16) << 1), xs = xr + (<usize>K16 << 1);
      let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
      let b0 = i32x4.splat(0), b1 = i32x4.splat(0), b2 = i32x4.splat(0), b3 = i32x4.splat(0);
      let p = wg;
      for (let k = 0; k < K16; k += 16) {
        const o = <usize>k << 1;
        const xl = v128.load(xr + o), xh = v128.load(xr + o, 16), yl = v128.load(xs + o), yh = v128.load(xs + o, 16);
        let wl = v128.load8x8_s(p), wh = v128.load8x8_s(p, 8);
        a0 = i32x4.add(a0, i32x4.add(i32x4.dot_i16x8_s(xl, wl), i32x4.dot_i16x8_s(xh, wh)));
        b0 = i32x4.add(b0, i32x4.add(i32x4.dot_i16x8_s(yl, wl), i32x4.dot_i16x8_s(yh, wh)));
        wl = v128.load8x8_s(p, 16); wh = v128.load8x8_s(p, 24);
        a1 = i32x4.add(a1, i32x4.add(i32x4.dot_i16x8_s(xl, wl), i32x4.dot_i16x8_s(xh, wh)));
        b1 = i32x4.add(b1, i32x4.add(i32x4.dot_i16x8_s(yl, wl), i32x4.dot_i16x8_s(yh, wh)));
        wl = v128.load8x8_s(p, 32); wh = v128.load8x8_s(p, 40);
        a2 = i32x4.add(a2, i32x4.add(i32x4.dot_i16x8_s(xl, wl), i32x4.dot_i16x8_s(xh, wh)));
        b2 = i32x4.add(b2, i32x4.add(i32x4.dot_i16x8_s(yl, wl), i32x4.dot_i16x8_s(yh, wh)));
        wl = v128.load8x8_s(p, 48); wh = v128.load8x8_s(p, 56);
        a3 = i32x4.add(a3, i32x4.add(i32x4.dot_i16x8_s(xl, wl), i32x4.dot_i16x8_s(xh, wh)));
        b3 = i32x4.add(b3, i32x4.add(i32x4.dot_i16x8_s(yl, wl), i32x4.dot_i16x8_s(yh, wh)));
        p += 64;
      }
      const o = out + (<usize>(m * N) << 2);
      groupEpilogue(o, n0, N, a0, a1, a2, a3, xScale, ws, perChannel, bias, relu);
      groupEpilogue(o + (<usize>N << 2), n0, N, b0, b1, b2, b3, xScale, ws, perChannel, bias, relu);
    }
    if (m < M) {
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
      groupEpilogue(out + (<usize>(m * N) << 2), n0, N, a0, a1, a2, a3, xScale, ws, perChannel, bias, relu);
    }
  }
}

/** The epilogue of one row's outputs n0..n0+3 (those below N) from their lane sums. */
@inline function groupEpilogue(o: usize, n0: i32, N: i32, a0: v128, a1: v128, a2: v128, a3: v128, xScale: f32, ws: usize, perChannel: i32, bias: usize, relu: i32): void {
  epilogue(o, n0, hsum(a0), xScale, ws, perChannel, bias, relu);
  if (n0 + 1 < N) epilogue(o, n0 + 1, hsum(a1), xScale, ws, perChannel, bias, relu);
  if (n0 + 2 < N) epilogue(o, n0 + 2, hsum(a2), xScale, ws, perChannel, bias, relu);
  if (n0 + 3 < N) epilogue(o, n0 + 3, hsum(a3), xScale, ws, perChannel, bias, relu);
}
