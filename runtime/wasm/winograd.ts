// AssemblyScript source of conv2d as Winograd F(4×4, 3×3) (JavaScript side:
// runtime/src/wasm/winograd.ts): each 4×4 output tile is Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A over a 6×6
// input tile d, so a 3×3 unit-stride convolution becomes 36 GEMMs over the channels with 4×
// fewer multiplications than the direct form.
// Layouts: U [36][Cout][C] (transformed weights, the GEMMs' A operands, made once per constant
// weight); tiles are numbered t = (n·TH + ty)·TWp + tx with TWp a multiple of 4 (tiles past the
// image read its zero border and are never stored), so 4 consecutive tiles share one tile row
// and one packed panel; per chunk of tiles, V [36] × gemm.ts's packed B layout of [C][tiles] and
// M [36][Cout][tiles] (the products). ξ = 6i + j indexes a 6×6 transform position.
// Invariant: no function writes memory other than its outputs and the chunk scratch it is
// given; the input is read from a zero-bordered copy (padPlanes) of 4·TH + 2 rows of Wp ≥ 4·TWp
// + 4 floats, so tiles need no bounds tests.

import { gemmPacked, KC, packedSize } from './gemm';

/**
 * U[ξ][co][c] = (G g Gᵀ)[ξ] for every 3×3 filter g = w[co, c] (OIHW), computed in float64 and
 * rounded once. G = [[¼, 0, 0], [−⅙, −⅙, −⅙], [−⅙, ⅙, −⅙], [1/24, 1/12, ⅙], [1/24, −1/12, ⅙], [0, 0, 1]].
 * Four filters at a time (two float64x2 pairs), so each U[ξ] gets one 16-byte store per group: the
 * 36 output rows lie S·4 bytes apart (a power of two in most nets), and the former one-float-per-row
 * stores thrashed the cache sets they alias in (~330 ns a filter warm, ~45 ns now). A last group
 * of fewer than 4 repeats its last filter in the missing lanes and stores only its own. Filters
 * f0..f1 of the S = Cout·C (f0 a multiple of 4): threads may split the filters (each is independent).
 */
export function winograd4Weights(S: i32, f0: i32, f1: i32, w: usize, U: usize): void {
  const s = <usize>S << 2;
  for (let f = f0; f < f1; f += 4) {
    const n = min(4, f1 - f);
    const g = w + (<usize>(f * 9) << 2), o = U + (<usize>f << 2), r = <usize>6 * s;
    // Filter j of the group at g + 36·min(j, n − 1) bytes: lanes (0, 1) and (2, 3).
    const d1 = <usize>min(1, n - 1) * 36, d2 = <usize>min(2, n - 1) * 36, d3 = <usize>min(3, n - 1) * 36;
    transformRow(0, o, s, n, g, d1, d2, d3);
    transformRow(1, o + r, s, n, g, d1, d2, d3);
    transformRow(2, o + 2 * r, s, n, g, d1, d2, d3);
    transformRow(3, o + 3 * r, s, n, g, d1, d2, d3);
    transformRow(4, o + 4 * r, s, n, g, d1, d2, d3);
    transformRow(5, o + 5 * r, s, n, g, d1, d2, d3);
  }
}

/** Tap k (0..8) of the filters at g and g + d as float64x2. */
@inline function taps(g: usize, d: usize, k: i32): v128 {
  const p = g + (<usize>k << 2);
  return f64x2.replace_lane(f64x2.splat(<f64>load<f32>(p)), 1, <f64>load<f32>(p + d));
}

/** Row i of G g (over the filter's columns), times Gᵀ: U[6i + k] for k = 0..5 at o + k·s, for the group's n filters. */
@inline function transformRow(i: i32, o: usize, s: usize, n: i32, g: usize, d1: usize, d2: usize, d3: usize): void {
  const ga = g + d2;
  const a0 = gRow(i, taps(g, d1, 0), taps(g, d1, 3), taps(g, d1, 6));
  const a1 = gRow(i, taps(g, d1, 1), taps(g, d1, 4), taps(g, d1, 7));
  const a2 = gRow(i, taps(g, d1, 2), taps(g, d1, 5), taps(g, d1, 8));
  const b0 = gRow(i, taps(ga, d3 - d2, 0), taps(ga, d3 - d2, 3), taps(ga, d3 - d2, 6));
  const b1 = gRow(i, taps(ga, d3 - d2, 1), taps(ga, d3 - d2, 4), taps(ga, d3 - d2, 7));
  const b2 = gRow(i, taps(ga, d3 - d2, 2), taps(ga, d3 - d2, 5), taps(ga, d3 - d2, 8));
  put(o, n, gRow(0, a0, a1, a2), gRow(0, b0, b1, b2));
  put(o + s, n, gRow(1, a0, a1, a2), gRow(1, b0, b1, b2));
  put(o + 2 * s, n, gRow(2, a0, a1, a2), gRow(2, b0, b1, b2));
  put(o + 3 * s, n, gRow(3, a0, a1, a2), gRow(3, b0, b1, b2));
  put(o + 4 * s, n, gRow(4, a0, a1, a2), gRow(4, b0, b1, b2));
  put(o + 5 * s, n, gRow(5, a0, a1, a2), gRow(5, b0, b1, b2));
}

/** The pairs lo, hi rounded to float32 at o: all 4 lanes, or the first n. */
@inline function put(o: usize, n: i32, lo: v128, hi: v128): void {
  const v = v128.shuffle<i64>(f32x4.demote_f64x2_zero(lo), f32x4.demote_f64x2_zero(hi), 0, 2);
  if (n == 4) { v128.store(o, v); return; }
  v128.store32_lane(o, v, 0);
  if (n > 1) v128.store32_lane(o, v, 1, 4);
  if (n > 2) v128.store32_lane(o, v, 2, 8);
}

// G's entries as float64 constants: multiplying by them instead of dividing by 6, 12 and 24
// (a float64 division costs ~15 cycles; the transform of ResNet-18's weights made ~2·10^8 of them)
// moves a product by at most an ulp of float64, far below the final float32 rounding.
const SIXTH: f64 = 1.0 / 6.0, TWELFTH: f64 = 1.0 / 12.0, TWENTY_FOURTH: f64 = 1.0 / 24.0;

/** Row i of G times (g0, g1, g2), lane-wise over float64x2. */
@inline function gRow(i: i32, g0: v128, g1: v128, g2: v128): v128 {
  if (i == 0) return f64x2.mul(g0, f64x2.splat(0.25));
  if (i == 1) return f64x2.mul(f64x2.neg(f64x2.add(f64x2.add(g0, g1), g2)), f64x2.splat(SIXTH));
  if (i == 2) return f64x2.mul(f64x2.neg(f64x2.add(f64x2.sub(g0, g1), g2)), f64x2.splat(SIXTH));
  if (i == 3) return f64x2.add(f64x2.add(f64x2.mul(g0, f64x2.splat(TWENTY_FOURTH)), f64x2.mul(g1, f64x2.splat(TWELFTH))), f64x2.mul(g2, f64x2.splat(SIXTH)));
  if (i == 4) return f64x2.add(f64x2.sub(f64x2.mul(g0, f64x2.splat(TWENTY_FOURTH)), f64x2.mul(g1, f64x2.splat(TWELFTH))), f64x2.mul(g2, f64x2.splat(SIXTH)));
  return g2;
}

/** Column s (0..3) of four consecutive 4-float vectors: lanes a[s], b[s], c[s], d[s] (a 4×4 transpose). */
@inline function col(a: v128, b: v128, c: v128, d: v128, s: i32): v128 {
  if (s == 0) return v128.shuffle<f32>(v128.shuffle<f32>(a, b, 0, 4, 1, 5), v128.shuffle<f32>(c, d, 0, 4, 1, 5), 0, 1, 4, 5);
  if (s == 1) return v128.shuffle<f32>(v128.shuffle<f32>(a, b, 0, 4, 1, 5), v128.shuffle<f32>(c, d, 0, 4, 1, 5), 2, 3, 6, 7);
  if (s == 2) return v128.shuffle<f32>(v128.shuffle<f32>(a, b, 2, 6, 3, 7), v128.shuffle<f32>(c, d, 2, 6, 3, 7), 0, 1, 4, 5);
  return v128.shuffle<f32>(v128.shuffle<f32>(a, b, 2, 6, 3, 7), v128.shuffle<f32>(c, d, 2, 6, 3, 7), 2, 3, 6, 7);
}

/**
 * Bᵀ applied to the 6 values d0..d5 (lanes: 4 tiles), result into scratch `dst` at stride
 * `step` bytes. Bᵀ = [[4, 0, −5, 0, 1, 0], [0, −4, −4, 1, 1, 0], [0, 4, −4, −1, 1, 0],
 * [0, −2, −1, 2, 1, 0], [0, 2, −1, −2, 1, 0], [0, 4, 0, −5, 0, 1]].
 */
@inline function inputRow(d0: v128, d1: v128, d2: v128, d3: v128, d4: v128, d5: v128, dst: usize, step: usize): void {
  const four = f32x4.splat(4), five = f32x4.splat(5), two = f32x4.splat(2);
  const a = f32x4.sub(d4, f32x4.mul(four, d2)), b = f32x4.sub(d3, f32x4.mul(four, d1));
  const c = f32x4.sub(d4, d2), e = f32x4.mul(two, f32x4.sub(d3, d1));
  v128.store(dst, f32x4.add(f32x4.sub(f32x4.mul(four, d0), f32x4.mul(five, d2)), d4));
  v128.store(dst + step, f32x4.add(a, b));
  v128.store(dst + 2 * step, f32x4.sub(a, b));
  v128.store(dst + 3 * step, f32x4.add(c, e));
  v128.store(dst + 4 * step, f32x4.sub(c, e));
  v128.store(dst + 5 * step, f32x4.add(f32x4.sub(f32x4.mul(four, d1), f32x4.mul(five, d3)), d5));
}

/** Bytes of the scratch block the tile transforms take (one group's 6×6 vectors, and the output's 4×4 rows). */
export const WINOGRAD4_SCRATCH: i32 = 48 * 16;

/**
 * V for tiles [t0, t0 + n) of the chunk (n a multiple of 4): slab ξ (packedSize(C, n) floats
 * apart) holds (Bᵀ d B)[ξ] of tile t0 + l, channel c in gemm.ts's packed layout (K = C rows,
 * l the column). `img` holds the N·C zero-bordered planes of Hp×Wp floats.
 */
export function winograd4InputTiles(t0: i32, n: i32, C: i32, TH: i32, TWp: i32, img: usize, Hp: i32, Wp: i32, V: usize, scratch: usize): void {
  const slabBytes = <usize>packedSize(C, n) << 2, panels = (n + 7) >> 3;
  const row = <usize>Wp << 2, plane = <usize>(Hp * Wp) << 2;
  const per = TH * TWp;
  for (let l = 0; l < n; l += 4) {
    const t = t0 + l, img0 = t / per, r = t - img0 * per, ty = r / TWp, tx = r - ty * TWp;
    let src = img + <usize>(img0 * C) * plane + (<usize>(4 * ty * Wp + 4 * tx) << 2);
    for (let c = 0; c < C; c++, src += plane) {
      // Rows: Bᵀ along x of each of the 6 input rows (a 4×4 transpose gives columns s across the 4 tiles).
      for (let y = 0; y < 6; y++) {
        const p = src + <usize>y * row;
        const v0 = v128.load(p), v1 = v128.load(p, 16), v2 = v128.load(p, 32), v3 = v128.load(p, 48), v4 = v128.load(p, 64);
        inputRow(col(v0, v1, v2, v3, 0), col(v0, v1, v2, v3, 1), col(v0, v1, v2, v3, 2), col(v0, v1, v2, v3, 3),
          col(v1, v2, v3, v4, 0), col(v1, v2, v3, v4, 1), scratch + <usize>y * 16, 96);
      }
      // Columns: Bᵀ along y of each j, into the packed slabs at (c, l..l+3).
      const k0 = (c / KC) * KC, kb = min(KC, C - k0);
      const at = V + (<usize>(k0 * panels * 8 + (l >> 3) * kb * 8 + (c - k0) * 8 + (l & 7)) << 2);
      for (let j = 0; j < 6; j++) {
        const s = scratch + <usize>j * 96;
        inputRow(v128.load(s), v128.load(s, 16), v128.load(s, 32), v128.load(s, 48), v128.load(s, 64), v128.load(s, 80),
          scratch + <usize>j * 96, 16);
      }
      // scratch[j][i] now holds V[6i + j]: scatter into the slabs.
      for (let j = 0; j < 6; j++) {
        for (let i = 0; i < 6; i++) v128.store(at + <usize>(6 * i + j) * slabBytes, v128.load(scratch + <usize>(j * 96 + i * 16)));
      }
    }
  }
}

/** Aᵀ = [[1, 1, 1, 1, 1, 0], [0, 1, −1, 2, −2, 0], [0, 1, 1, 4, 4, 0], [0, 1, −1, 8, −8, 1]] on m0..m5 into dst at stride `step`. */
@inline function outputRow(m0: v128, m1: v128, m2: v128, m3: v128, m4: v128, m5: v128, dst: usize, step: usize): void {
  const p = f32x4.add(m1, m2), q = f32x4.sub(m1, m2), s = f32x4.add(m3, m4), u = f32x4.sub(m3, m4);
  v128.store(dst, f32x4.add(f32x4.add(m0, p), s));
  v128.store(dst + step, f32x4.add(q, f32x4.mul(f32x4.splat(2), u)));
  v128.store(dst + 2 * step, f32x4.add(p, f32x4.mul(f32x4.splat(4), s)));
  v128.store(dst + 3 * step, f32x4.add(f32x4.add(q, f32x4.mul(f32x4.splat(8), u)), m5));
}

/**
 * out[img, co, 4ty + a, 4tx + b] = act((Aᵀ m A)[a][b] + bias[co]) for tiles [t0, t0 + n) from M
 * (slab ξ at ξ·Cout·n floats, [Cout][n]); the parts of tiles past OH×OW are not stored. bias = 0:
 * none; relu != 0: max(·, 0) with NaN kept.
 */
export function winograd4OutputTiles(t0: i32, n: i32, Cout: i32, TH: i32, TWp: i32, OH: i32, OW: i32, M: usize, out: usize, bias: usize, relu: i32, scratch: usize): void {
  const slabBytes = <usize>(Cout * n) << 2, per = TH * TWp, zero = f32x4.splat(0);
  for (let co = 0; co < Cout; co++) {
    const bv = f32x4.splat(bias != 0 ? load<f32>(bias + (<usize>co << 2)) : 0);
    for (let l = 0; l < n; l += 4) {
      const m = M + (<usize>(co * n + l) << 2);
      // Aᵀ along i for each column j: scratch[j][a].
      for (let j = 0; j < 6; j++) {
        const q = m + <usize>j * slabBytes;
        outputRow(v128.load(q), v128.load(q + 6 * slabBytes), v128.load(q + 12 * slabBytes), v128.load(q + 18 * slabBytes),
          v128.load(q + 24 * slabBytes), v128.load(q + 30 * slabBytes), scratch + <usize>j * 64, 16);
      }
      // … then along j for each row a: row a's 4 vectors (pixel b) at scratch + 384 + 64a, past the 6×4 above.
      for (let a = 0; a < 4; a++) {
        const s = scratch + <usize>a * 16;
        outputRow(v128.load(s), v128.load(s, 64), v128.load(s, 128), v128.load(s, 192), v128.load(s, 256), v128.load(s, 320),
          scratch + 384 + <usize>a * 64, 16);
      }
      const t = t0 + l, img0 = t / per, r = t - img0 * per, ty = r / TWp, tx = r - ty * TWp;
      const oy0 = 4 * ty, ox0 = 4 * tx;
      if (ox0 >= OW) continue;
      const plane = out + (<usize>((img0 * Cout + co) * OH * OW) << 2);
      for (let a = 0; a < 4 && oy0 + a < OH; a++) {
        const s = scratch + 384 + <usize>a * 64;
        let y0 = f32x4.add(v128.load(s), bv), y1 = f32x4.add(v128.load(s, 16), bv);
        let y2 = f32x4.add(v128.load(s, 32), bv), y3 = f32x4.add(v128.load(s, 48), bv);
        if (relu != 0) { y0 = f32x4.max(y0, zero); y1 = f32x4.max(y1, zero); y2 = f32x4.max(y2, zero); y3 = f32x4.max(y3, zero); }
        // Lane L of y_b is pixel b of tile L: transposed, each vector is one tile's 4 pixels.
        const dst = plane + (<usize>((oy0 + a) * OW + ox0) << 2);
        const left = OW - ox0;
        if (left >= 16) {
          v128.store(dst, col(y0, y1, y2, y3, 0)); v128.store(dst, col(y0, y1, y2, y3, 1), 16);
          v128.store(dst, col(y0, y1, y2, y3, 2), 32); v128.store(dst, col(y0, y1, y2, y3, 3), 48);
        } else {
          const tmp = scratch + 320; // the j = 5 vectors, read already
          v128.store(tmp, col(y0, y1, y2, y3, 0)); v128.store(tmp, col(y0, y1, y2, y3, 1), 16);
          v128.store(tmp, col(y0, y1, y2, y3, 2), 32); v128.store(tmp, col(y0, y1, y2, y3, 3), 48);
          memory.copy(dst, tmp, <usize>left << 2);
        }
      }
    }
  }
}

/**
 * The convolution's tile chunks c0..c1 of its T = N·TH·TWp tiles in chunks of Tc (a multiple of
 * 8; all of them: 0..⌈T/Tc⌉): per chunk the input tiles (V), the 36 products M_ξ = U_ξ·V_ξ
 * (gemm.ts's micro-kernel) and the output tiles with the epilogue. V and M are scratch for one
 * chunk (36·packedSize(C, Tc) and 36·Cout·Tc floats), `scratch` WINOGRAD4_SCRATCH bytes; threads
 * running disjoint chunk ranges each need their own.
 */
export function winograd4Conv(c0: i32, c1: i32, N: i32, C: i32, Cout: i32, OH: i32, OW: i32, TH: i32, TWp: i32, Tc: i32, img: usize, Hp: i32, Wp: i32, U: usize, V: usize, M: usize, out: usize, bias: usize, relu: i32, scratch: usize): void {
  const T = N * TH * TWp, uSlab = <usize>(Cout * C) << 2;
  for (let t0 = c0 * Tc; t0 < min(T, c1 * Tc); t0 += Tc) {
    const n = min(Tc, T - t0);
    winograd4InputTiles(t0, n, C, TH, TWp, img, Hp, Wp, V, scratch);
    const vSlab = <usize>packedSize(C, n) << 2, mSlab = <usize>(Cout * n) << 2, panels = (n + 7) >> 3;
    for (let xi = 0; xi < 36; xi++) {
      gemmPacked(0, Cout, 0, panels, n, C, U + <usize>xi * uSlab, C, V + <usize>xi * vSlab, M + <usize>xi * mSlab, n, 0);
    }
    winograd4OutputTiles(t0, n, Cout, TH, TWp, OH, OW, M, out, bias, relu, scratch);
  }
}
