// AssemblyScript source: float32 max/min reductions (amax/amin) for the CPU primitive extreme
// (JavaScript side: runtime/src/wasm/extreme.ts), over x viewed as [K0, R1, K1, R2] like sumF32
// (reduce.ts): column reductions (R2 = 1: softmax over a middle or the first dim) keep one output
// per lane and walk the reduced rows in order; inner reductions (softmax over the last dim) run
// four lanes over each run and fold them at the end.
// Invariant: a later value wins when it is greater (max; smaller for min) or NaN — ir-spec's
// reduceExtreme rule, so NaN propagates; column reductions equal the reference bit for bit, inner
// ones but for which of two equal values (−0, +0) or NaN payloads is returned.

@inline function wins(max: bool, v: v128, acc: v128): v128 {
  return v128.or(max ? f32x4.gt(v, acc) : f32x4.lt(v, acc), f32x4.ne(v, v));
}
@inline function wins1(max: bool, v: f32, acc: f32): bool {
  return (max ? v > acc : v < acc) || v != v;
}

@inline function reduce(max: bool, K0: i32, R1: i32, K1: i32, R2: i32, x: usize, out: usize): void {
  const plane = <usize>(K1 * R2) << 2;
  if (R2 == 1) {
    for (let k0 = 0; k0 < K0; k0++) {
      const base = x + <usize>k0 * R1 * plane;
      const o = out + (<usize>(k0 * K1) << 2);
      let k1 = 0;
      for (; k1 + 4 <= K1; k1 += 4) {
        let p = base + (<usize>k1 << 2);
        let acc = v128.load(p);
        p += plane;
        for (let r1 = 1; r1 < R1; r1++, p += plane) { const v = v128.load(p); acc = v128.bitselect(v, acc, wins(max, v, acc)); }
        v128.store(o + (<usize>k1 << 2), acc);
      }
      for (; k1 < K1; k1++) {
        let p = base + (<usize>k1 << 2);
        let acc = load<f32>(p);
        p += plane;
        for (let r1 = 1; r1 < R1; r1++, p += plane) { const v = load<f32>(p); if (wins1(max, v, acc)) acc = v; }
        store<f32>(o + (<usize>k1 << 2), acc);
      }
    }
    return;
  }
  const run = <usize>R2 << 2;
  for (let k0 = 0; k0 < K0; k0++) {
    const base = x + <usize>k0 * R1 * plane;
    for (let k1 = 0; k1 < K1; k1++) {
      const first = base + <usize>k1 * run;
      // Starting every lane at the first value changes nothing: it never loses to itself.
      let a = load<f32>(first);
      let va = f32x4.splat(a);
      let p = first;
      for (let r1 = 0; r1 < R1; r1++, p += plane) {
        let q = p, k = 0;
        for (; k + 4 <= R2; k += 4, q += 16) { const v = v128.load(q); va = v128.bitselect(v, va, wins(max, v, va)); }
        for (; k < R2; k++, q += 4) { const v = load<f32>(q); if (wins1(max, v, a)) a = v; }
      }
      let v = f32x4.extract_lane(va, 0); if (wins1(max, v, a)) a = v;
      v = f32x4.extract_lane(va, 1); if (wins1(max, v, a)) a = v;
      v = f32x4.extract_lane(va, 2); if (wins1(max, v, a)) a = v;
      v = f32x4.extract_lane(va, 3); if (wins1(max, v, a)) a = v;
      store<f32>(out + (<usize>(k0 * K1 + k1) << 2), a);
    }
  }
}

/** out[k0, k1] = max (max != 0) or min over r1, r2 of x[k0, r1, k1, r2] (dense floats). */
export function extremeF32(max: i32, K0: i32, R1: i32, K1: i32, R2: i32, x: usize, out: usize): void {
  if (max != 0) reduce(true, K0, R1, K1, R2, x, out);
  else reduce(false, K0, R1, K1, R2, x, out);
}
