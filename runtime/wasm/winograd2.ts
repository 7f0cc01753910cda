// AssemblyScript source: the output transform of conv2d as Winograd F(2×2, 3×3)
// (ir-spec/src/kernels/winograd.ts is the reference; JavaScript side: runtime/src/wasm/winograd2.ts).
// The input tiles come from winogradInputTiles (winograd-grad.ts), the products from the packed
// GEMM, laid out tile-major: Mt[ξ][t][co], 16 slabs MS floats apart, Cp floats (Cout rounded up
// to 4) per tile, so 4 output channels of a tile transform as one vector.
// Invariant: y = Aᵀ m A per tile with the reference's operations in its order, in float32; only
// the part of a tile inside the output is written (lanes past Cout never).

/** Stores lane l of v at out + plane·l floats, for the lanes below `lanes`. */
@inline function put(out: usize, plane: usize, v: v128, lanes: i32): void {
  v128.store32_lane(out, v, 0);
  if (lanes > 1) v128.store32_lane(out + plane, v, 1);
  if (lanes > 2) v128.store32_lane(out + 2 * plane, v, 2);
  if (lanes > 3) v128.store32_lane(out + 3 * plane, v, 3);
}

/**
 * y[n, co, 2ty + i, 2tx + j] = (Aᵀ m A)[i][j] for the 2×2 output tiles t = (n·TH + ty)·TW + tx,
 * with Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]] and m[ξ] = Mt[ξ][t][co] (bias and relu: convEpilogue).
 */
export function winograd2OutputTiles(N: i32, Cout: i32, OH: i32, OW: i32, TH: i32, TW: i32, Cp: i32, MS: i32, M: usize, out: usize): void {
  const s = <usize>MS << 2, plane = <usize>(OH * OW) << 2;
  for (let n = 0; n < N; n++) {
    for (let ty = 0; ty < TH; ty++) {
      for (let tx = 0; tx < TW; tx++) {
        const t = (n * TH + ty) * TW + tx, oy = 2 * ty, ox = 2 * tx;
        const right = ox + 1 < OW, down = oy + 1 < OH;
        for (let co = 0; co < Cout; co += 4) {
          const p = M + (<usize>(t * Cp + co) << 2);
          const m0 = v128.load(p), m1 = v128.load(p + s), m2 = v128.load(p + 2 * s), m3 = v128.load(p + 3 * s);
          const m4 = v128.load(p + 4 * s), m5 = v128.load(p + 5 * s), m6 = v128.load(p + 6 * s), m7 = v128.load(p + 7 * s);
          const m8 = v128.load(p + 8 * s), m9 = v128.load(p + 9 * s), m10 = v128.load(p + 10 * s), m11 = v128.load(p + 11 * s);
          const m12 = v128.load(p + 12 * s), m13 = v128.load(p + 13 * s), m14 = v128.load(p + 14 * s), m15 = v128.load(p + 15 * s);
          // Over the rows of m first …
          const a0 = f32x4.add(f32x4.add(m0, m4), m8), a1 = f32x4.add(f32x4.add(m1, m5), m9);
          const a2 = f32x4.add(f32x4.add(m2, m6), m10), a3 = f32x4.add(f32x4.add(m3, m7), m11);
          const b0 = f32x4.sub(f32x4.sub(m4, m8), m12), b1 = f32x4.sub(f32x4.sub(m5, m9), m13);
          const b2 = f32x4.sub(f32x4.sub(m6, m10), m14), b3 = f32x4.sub(f32x4.sub(m7, m11), m15);
          // … then along each row, writing the part of the tile inside the output.
          const lanes = min(4, Cout - co);
          const o = out + (<usize>(((n * Cout + co) * OH + oy) * OW + ox) << 2);
          put(o, plane, f32x4.add(f32x4.add(a0, a1), a2), lanes);
          if (right) put(o + 4, plane, f32x4.sub(f32x4.sub(a1, a2), a3), lanes);
          if (down) {
            const r = o + (<usize>OW << 2);
            put(r, plane, f32x4.add(f32x4.add(b0, b1), b2), lanes);
            if (right) put(r + 4, plane, f32x4.sub(f32x4.sub(b1, b2), b3), lanes);
          }
        }
      }
    }
  }
}

/**
 * U[ξ][f] = (G g Gᵀ)[ξ] for the S = Cout·C filters g = w[f] (3×3, row-major), 16 slabs S floats
 * apart: the reference's transformWeights, in float64 in its order, rounded once to float32.
 */
export function winograd2Weights(S: i32, w: usize, U: usize): void {
  const s = <usize>S << 2;
  for (let f = 0; f < S; f++) {
    const g = w + (<usize>(f * 9) << 2), u = U + (<usize>f << 2);
    for (let i = 0; i < 4; i++) {
      // Row i of G g: g's row 0, (r0 + r1 + r2)/2, (r0 − r1 + r2)/2 or row 2, one column at a time.
      let r0: f64, r1: f64, r2: f64;
      if (i == 0) { r0 = <f64>load<f32>(g); r1 = <f64>load<f32>(g, 4); r2 = <f64>load<f32>(g, 8); }
      else if (i == 3) { r0 = <f64>load<f32>(g, 24); r1 = <f64>load<f32>(g, 28); r2 = <f64>load<f32>(g, 32); }
      else {
        const sign: f64 = i == 1 ? 1 : -1;
        const a0 = <f64>load<f32>(g), a1 = <f64>load<f32>(g, 4), a2 = <f64>load<f32>(g, 8);
        const b0 = <f64>load<f32>(g, 12), b1 = <f64>load<f32>(g, 16), b2 = <f64>load<f32>(g, 20);
        const c0 = <f64>load<f32>(g, 24), c1 = <f64>load<f32>(g, 28), c2 = <f64>load<f32>(g, 32);
        r0 = 0.5 * (a0 + sign * b0 + c0); r1 = 0.5 * (a1 + sign * b1 + c1); r2 = 0.5 * (a2 + sign * b2 + c2);
      }
      const b = u + <usize>(i * 4) * s;
      store<f32>(b, <f32>r0);
      store<f32>(b + s, <f32>(0.5 * (r0 + r1 + r2)));
      store<f32>(b + 2 * s, <f32>(0.5 * (r0 - r1 + r2)));
      store<f32>(b + 3 * s, <f32>r2);
    }
  }
}
