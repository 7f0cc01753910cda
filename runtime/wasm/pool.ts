// AssemblyScript source: the 2×2, stride-2 max pool without padding for the CPU primitive maxPool
// (JavaScript side: runtime/src/wasm/pool.ts), four outputs per step: even and odd columns of
// two input rows are split into lanes and the four taps are compared in scan order.
// Invariant: values and winner offsets equal ir-spec's maxPool2x2 — a later tap wins when it is
// greater or NaN, so the first maximum in scan order wins and a NaN always does.

@inline function take(v: v128, best: v128): v128 {
  return v128.or(f32x4.gt(v, best), f32x4.ne(v, v));
}

/** val/idx [planes, OH, OW] from x [planes, H, W] (2·OH ≤ H, 2·OW ≤ W); idx holds h·W + w. */
export function maxPool2x2(planes: i32, H: i32, W: i32, OH: i32, OW: i32, x: usize, val: usize, idx: usize): void {
  const step = i32x4(0, 2, 4, 6);
  for (let p = 0; p < planes; p++) {
    const base = x + (<usize>(p * H * W) << 2);
    for (let oy = 0; oy < OH; oy++) {
      const r0 = 2 * oy * W, r1 = r0 + W;
      const row0 = base + (<usize>r0 << 2), row1 = base + (<usize>r1 << 2);
      let ox = 0;
      for (; ox + 4 <= OW; ox += 4) {
        const a0 = v128.load(row0 + (<usize>(2 * ox) << 2)), a1 = v128.load(row0 + (<usize>(2 * ox) << 2), 16);
        const b0 = v128.load(row1 + (<usize>(2 * ox) << 2)), b1 = v128.load(row1 + (<usize>(2 * ox) << 2), 16);
        const i0 = i32x4.add(i32x4.splat(r0 + 2 * ox), step), i2 = i32x4.add(i32x4.splat(r1 + 2 * ox), step);
        let best = v128.shuffle<i32>(a0, a1, 0, 2, 4, 6), bi = i0;
        const v1 = v128.shuffle<i32>(a0, a1, 1, 3, 5, 7);
        const v2 = v128.shuffle<i32>(b0, b1, 0, 2, 4, 6);
        const v3 = v128.shuffle<i32>(b0, b1, 1, 3, 5, 7);
        let m = take(v1, best);
        best = v128.bitselect(v1, best, m); bi = v128.bitselect(i32x4.add(i0, i32x4.splat(1)), bi, m);
        m = take(v2, best);
        best = v128.bitselect(v2, best, m); bi = v128.bitselect(i2, bi, m);
        m = take(v3, best);
        best = v128.bitselect(v3, best, m); bi = v128.bitselect(i32x4.add(i2, i32x4.splat(1)), bi, m);
        const o = <usize>((p * OH + oy) * OW + ox) << 2;
        v128.store(val + o, best);
        v128.store(idx + o, bi);
      }
      for (; ox < OW; ox++) {
        const i0 = r0 + 2 * ox, i2 = r1 + 2 * ox;
        let best = load<f32>(base + (<usize>i0 << 2)), bi = i0;
        const v1 = load<f32>(base + (<usize>(i0 + 1) << 2)), v2 = load<f32>(base + (<usize>i2 << 2)), v3 = load<f32>(base + (<usize>(i2 + 1) << 2));
        if (v1 > best || v1 != v1) { best = v1; bi = i0 + 1; }
        if (v2 > best || v2 != v2) { best = v2; bi = i2; }
        if (v3 > best || v3 != v3) { best = v3; bi = i2 + 1; }
        const o = <usize>((p * OH + oy) * OW + ox) << 2;
        store<f32>(val + o, best);
        store<i32>(idx + o, bi);
      }
    }
  }
}
