// AssemblyScript source: the int8 product of dynamic quantization, for the CPU primitive qgemm
// (JavaScript side: runtime/src/wasm/qgemm.ts). acc[m,n] = Σ_k (x[m,k] − zp)·w[n,k] with x uint8
// and w int8: 16 bytes a step, widened to int16 (x − zp fits: −255..255) and multiplied pairwise
// into int32 lanes by i32x4.dot_i16x8_s; eight (then four, then one) weight rows share each
// widened x chunk.
// Invariant: exact int32 sums, equal to ir-spec's qgemm (no product or pair sum overflows int32).

@inline function dot16(xl: v128, xh: v128, w: usize): v128 {
  const wv = v128.load(w);
  return i32x4.add(i32x4.dot_i16x8_s(xl, i16x8.extend_low_i8x16_s(wv)), i32x4.dot_i16x8_s(xh, i16x8.extend_high_i8x16_s(wv)));
}

@inline function hsum(v: v128): i32 {
  return i32x4.extract_lane(v, 0) + i32x4.extract_lane(v, 1) + i32x4.extract_lane(v, 2) + i32x4.extract_lane(v, 3);
}

/** acc (int32 [M,N]) = Σ_k (x[m,k] − zp)·w[n,k]; x uint8 [M,K], w int8 [N,K], row-major. */
export function qgemm(M: i32, N: i32, K: i32, x: usize, zp: i32, w: usize, acc: usize): void {
  const zv = i16x8.splat(<i16>zp);
  const K16 = K & ~15;
  for (let m = 0; m < M; m++) {
    const xr = x + <usize>(m * K);
    let n = 0;
    for (; n + 8 <= N; n += 8) {
      const w0 = w + <usize>(n * K), w1 = w0 + <usize>K, w2 = w1 + <usize>K, w3 = w2 + <usize>K;
      const w4 = w3 + <usize>K, w5 = w4 + <usize>K, w6 = w5 + <usize>K, w7 = w6 + <usize>K;
      let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
      let a4 = i32x4.splat(0), a5 = i32x4.splat(0), a6 = i32x4.splat(0), a7 = i32x4.splat(0);
      for (let k = 0; k < K16; k += 16) {
        const xv = v128.load(xr + <usize>k);
        const xl = i16x8.sub(i16x8.extend_low_i8x16_u(xv), zv), xh = i16x8.sub(i16x8.extend_high_i8x16_u(xv), zv);
        a0 = i32x4.add(a0, dot16(xl, xh, w0 + <usize>k));
        a1 = i32x4.add(a1, dot16(xl, xh, w1 + <usize>k));
        a2 = i32x4.add(a2, dot16(xl, xh, w2 + <usize>k));
        a3 = i32x4.add(a3, dot16(xl, xh, w3 + <usize>k));
        a4 = i32x4.add(a4, dot16(xl, xh, w4 + <usize>k));
        a5 = i32x4.add(a5, dot16(xl, xh, w5 + <usize>k));
        a6 = i32x4.add(a6, dot16(xl, xh, w6 + <usize>k));
        a7 = i32x4.add(a7, dot16(xl, xh, w7 + <usize>k));
      }
      let s0 = hsum(a0), s1 = hsum(a1), s2 = hsum(a2), s3 = hsum(a3), s4 = hsum(a4), s5 = hsum(a5), s6 = hsum(a6), s7 = hsum(a7);
      for (let k = K16; k < K; k++) {
        const xk = <i32>load<u8>(xr + <usize>k) - zp;
        s0 += xk * <i32>load<i8>(w0 + <usize>k); s1 += xk * <i32>load<i8>(w1 + <usize>k);
        s2 += xk * <i32>load<i8>(w2 + <usize>k); s3 += xk * <i32>load<i8>(w3 + <usize>k);
        s4 += xk * <i32>load<i8>(w4 + <usize>k); s5 += xk * <i32>load<i8>(w5 + <usize>k);
        s6 += xk * <i32>load<i8>(w6 + <usize>k); s7 += xk * <i32>load<i8>(w7 + <usize>k);
      }
      const o = acc + (<usize>(m * N + n) << 2);
      store<i32>(o, s0); store<i32>(o + 4, s1); store<i32>(o + 8, s2); store<i32>(o + 12, s3);
      store<i32>(o + 16, s4); store<i32>(o + 20, s5); store<i32>(o + 24, s6); store<i32>(o + 28, s7);
    }
    for (; n + 4 <= N; n += 4) {
      const w0 = w + <usize>(n * K), w1 = w0 + <usize>K, w2 = w1 + <usize>K, w3 = w2 + <usize>K;
      let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
      for (let k = 0; k < K16; k += 16) {
        const xv = v128.load(xr + <usize>k);
        const xl = i16x8.sub(i16x8.extend_low_i8x16_u(xv), zv), xh = i16x8.sub(i16x8.extend_high_i8x16_u(xv), zv);
        a0 = i32x4.add(a0, dot16(xl, xh, w0 + <usize>k));
        a1 = i32x4.add(a1, dot16(xl, xh, w1 + <usize>k));
        a2 = i32x4.add(a2, dot16(xl, xh, w2 + <usize>k));
        a3 = i32x4.add(a3, dot16(xl, xh, w3 + <usize>k));
      }
      let s0 = hsum(a0), s1 = hsum(a1), s2 = hsum(a2), s3 = hsum(a3);
      for (let k = K16; k < K; k++) {
        const xk = <i32>load<u8>(xr + <usize>k) - zp;
        s0 += xk * <i32>load<i8>(w0 + <usize>k);
        s1 += xk * <i32>load<i8>(w1 + <usize>k);
        s2 += xk * <i32>load<i8>(w2 + <usize>k);
        s3 += xk * <i32>load<i8>(w3 + <usize>k);
      }
      const o = acc + (<usize>(m * N + n) << 2);
      store<i32>(o, s0); store<i32>(o + 4, s1); store<i32>(o + 8, s2); store<i32>(o + 12, s3);
    }
    for (; n < N; n++) {
      const wr = w + <usize>(n * K);
      let a = i32x4.splat(0);
      for (let k = 0; k < K16; k += 16) {
        const xv = v128.load(xr + <usize>k);
        a = i32x4.add(a, dot16(i16x8.sub(i16x8.extend_low_i8x16_u(xv), zv), i16x8.sub(i16x8.extend_high_i8x16_u(xv), zv), wr + <usize>k));
      }
      let s = hsum(a);
      for (let k = K16; k < K; k++) s += (<i32>load<u8>(xr + <usize>k) - zp) * <i32>load<i8>(wr + <usize>k);
      store<i32>(acc + (<usize>(m * N + n) << 2), s);
    }
  }
}
