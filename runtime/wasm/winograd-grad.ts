// AssemblyScript source: the two tile transforms of conv2d's Winograd F(2×2, 3×3) weight gradient
// (ir-spec/src/kernels/winograd.ts; JavaScript side: runtime/src/wasm/winograd-grad.ts) — the
// input tiles V = Bᵀ d B and the output-gradient tiles dM = A dY Aᵀ, in the reference's layouts
// (16 slabs ξ of V [T][C] TC floats apart, of dM [Cout][T] CT floats apart).
// Invariant: every value is computed in float64 with the reference's operations in its order and
// rounded once to float32, so V and dM equal the reference's bit for bit.

/** The 4 float32 at p, p+2 (lane 0) and p+2, p+4 … : column j of two neighbouring tiles as float64x2. */
@inline function pair(lo: v128, hi: v128, j: i32): v128 {
  // lo holds columns 0..3 of the pair's span, hi columns 4..7; tile 0 reads column j, tile 1 column j + 2.
  if (j == 0) return f64x2.promote_low_f32x4(v128.shuffle<i32>(lo, hi, 0, 2, 0, 0));
  if (j == 1) return f64x2.promote_low_f32x4(v128.shuffle<i32>(lo, hi, 1, 3, 0, 0));
  if (j == 2) return f64x2.promote_low_f32x4(v128.shuffle<i32>(lo, hi, 2, 4, 0, 0));
  return f64x2.promote_low_f32x4(v128.shuffle<i32>(lo, hi, 3, 5, 0, 0));
}

/** Stores lane 0 at V + o and, when `both`, lane 1 at V + o + C (the next tile), rounded to float32. */
@inline function put(V: usize, o: usize, C: usize, x: v128, both: bool): void {
  const f = f32x4.demote_f64x2_zero(x);
  v128.store32_lane(V + (o << 2), f, 0);
  if (both) v128.store32_lane(V + ((o + C) << 2), f, 1);
}

/**
 * V[ξ][t][c] for x [N, C, H, W] with padding (pt, pl), TH×TW tiles per image. `pad` is scratch of
 * C·(2TH+2)·(2TW+2) + 8 floats: each image is copied into a zero border first, as the reference does.
 */
export function winogradInputTiles(N: i32, C: i32, H: i32, W: i32, pt: i32, pl: i32, TH: i32, TW: i32, TC: i32, x: usize, pad: usize, V: usize): void {
  const Hp = 2 * TH + 2, Wp = 2 * TW + 2, plane = Hp * Wp;
  const yHi = min(H, Hp - pt), xHi = min(W, Wp - pl);
  memory.fill(pad, 0, <usize>(C * plane + 8) << 2);
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      for (let iy = 0; iy < yHi; iy++) {
        memory.copy(pad + (<usize>(c * plane + (iy + pt) * Wp + pl) << 2), x + (<usize>(((n * C + c) * H + iy) * W) << 2), <usize>xHi << 2);
      }
    }
    const tc = <usize>TC, cc = <usize>C;
    for (let c = 0; c < C; c++) {
      for (let ty = 0; ty < TH; ty++) {
        for (let tx = 0; tx < TW; tx += 2) {
          const both = tx + 1 < TW;
          const p = pad + (<usize>(c * plane + 2 * ty * Wp + 2 * tx) << 2), row = <usize>Wp << 2;
          const p0 = v128.load(p), p1 = v128.load(p, 16);
          const q0 = v128.load(p + row), q1 = v128.load(p + row, 16);
          const r0 = v128.load(p + 2 * row), r1 = v128.load(p + 2 * row, 16);
          const u0 = v128.load(p + 3 * row), u1 = v128.load(p + 3 * row, 16);
          // Bᵀ d over the rows, per column j: (d0 − d2, d1 + d2, d2 − d1, d1 − d3).
          const dp0 = pair(p0, p1, 0), dp1 = pair(p0, p1, 1), dp2 = pair(p0, p1, 2), dp3 = pair(p0, p1, 3);
          const dq0 = pair(q0, q1, 0), dq1 = pair(q0, q1, 1), dq2 = pair(q0, q1, 2), dq3 = pair(q0, q1, 3);
          const dr0 = pair(r0, r1, 0), dr1 = pair(r0, r1, 1), dr2 = pair(r0, r1, 2), dr3 = pair(r0, r1, 3);
          const du0 = pair(u0, u1, 0), du1 = pair(u0, u1, 1), du2 = pair(u0, u1, 2), du3 = pair(u0, u1, 3);
          const a0 = f64x2.sub(dp0, dr0), a1 = f64x2.sub(dp1, dr1), a2 = f64x2.sub(dp2, dr2), a3 = f64x2.sub(dp3, dr3);
          const b0 = f64x2.add(dq0, dr0), b1 = f64x2.add(dq1, dr1), b2 = f64x2.add(dq2, dr2), b3 = f64x2.add(dq3, dr3);
          const c0 = f64x2.sub(dr0, dq0), c1 = f64x2.sub(dr1, dq1), c2 = f64x2.sub(dr2, dq2), c3 = f64x2.sub(dr3, dq3);
          const e0 = f64x2.sub(dq0, du0), e1 = f64x2.sub(dq1, du1), e2 = f64x2.sub(dq2, du2), e3 = f64x2.sub(dq3, du3);
          // … then the same combination along each row: V[4i + j].
          const o = <usize>(((n * TH + ty) * TW + tx) * C + c);
          put(V, o, cc, f64x2.sub(a0, a2), both); put(V, o + tc, cc, f64x2.add(a1, a2), both);
          put(V, o + 2 * tc, cc, f64x2.sub(a2, a1), both); put(V, o + 3 * tc, cc, f64x2.sub(a1, a3), both);
          put(V, o + 4 * tc, cc, f64x2.sub(b0, b2), both); put(V, o + 5 * tc, cc, f64x2.add(b1, b2), both);
          put(V, o + 6 * tc, cc, f64x2.sub(b2, b1), both); put(V, o + 7 * tc, cc, f64x2.sub(b1, b3), both);
          put(V, o + 8 * tc, cc, f64x2.sub(c0, c2), both); put(V, o + 9 * tc, cc, f64x2.add(c1, c2), both);
          put(V, o + 10 * tc, cc, f64x2.sub(c2, c1), both); put(V, o + 11 * tc, cc, f64x2.sub(c1, c3), both);
          put(V, o + 12 * tc, cc, f64x2.sub(e0, e2), both); put(V, o + 13 * tc, cc, f64x2.add(e1, e2), both);
          put(V, o + 14 * tc, cc, f64x2.sub(e2, e1), both); put(V, o + 15 * tc, cc, f64x2.sub(e1, e3), both);
        }
      }
    }
  }
}

@inline function st(p: usize, v: f64): void { store<f32>(p, <f32>v); }

/** dM[ξ][co][t] = (A dY Aᵀ)[ξ] for the 2×2 tiles of gy [N, Cout, OH, OW] (zero past the edge). */
export function winogradGradTiles(N: i32, Cout: i32, OH: i32, OW: i32, TH: i32, TW: i32, CT: i32, gy: usize, dM: usize): void {
  const T = N * TH * TW, s = <usize>CT << 2;
  for (let n = 0; n < N; n++) {
    for (let co = 0; co < Cout; co++) {
      const plane = (n * Cout + co) * OH * OW;
      for (let ty = 0; ty < TH; ty++) {
        for (let tx = 0; tx < TW; tx++) {
          const oy = 2 * ty, ox = 2 * tx, o = plane + oy * OW + ox;
          const right = ox + 1 < OW, down = oy + 1 < OH;
          const y00 = <f64>load<f32>(gy + (<usize>o << 2));
          const y01: f64 = right ? <f64>load<f32>(gy + (<usize>(o + 1) << 2)) : 0;
          const y10: f64 = down ? <f64>load<f32>(gy + (<usize>(o + OW) << 2)) : 0;
          const y11: f64 = right && down ? <f64>load<f32>(gy + (<usize>(o + OW + 1) << 2)) : 0;
          const at = dM + (<usize>(co * T + (n * TH + ty) * TW + tx) << 2);
          const p0 = y00 + y10, p1 = y01 + y11, q0 = y00 - y10, q1 = y01 - y11;
          st(at, y00); st(at + s, y00 + y01); st(at + 2 * s, y00 - y01); st(at + 3 * s, -y01);
          st(at + 4 * s, p0); st(at + 5 * s, p0 + p1); st(at + 6 * s, p0 - p1); st(at + 7 * s, -p1);
          st(at + 8 * s, q0); st(at + 9 * s, q0 + q1); st(at + 10 * s, q0 - q1); st(at + 11 * s, -q1);
          st(at + 12 * s, -y10); st(at + 13 * s, -y10 - y11); st(at + 14 * s, y11 - y10); st(at + 15 * s, y11);
        }
      }
    }
  }
}
