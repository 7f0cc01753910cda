// AssemblyScript helpers the kernel files share (not an entry of the build, so nothing here is
// a module export): the multiply-add the build variant allows and the store of a micro-kernel's
// row of 8 columns.

/** Columns of a packed B panel (gemm.ts) and of a micro-kernel's row of C. */
export const NR: i32 = 8;

/** c + a·b: relaxed-SIMD fused multiply-add where the variant has it. */
@inline export function fma(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(c, f32x4.mul(a, b));
}

@inline export function storeRow(c: usize, lo: v128, hi: v128, w: i32, acc: bool): void {
  if (w == NR) {
    if (acc) {
      lo = f32x4.add(v128.load(c), lo);
      hi = f32x4.add(v128.load(c, 16), hi);
    }
    v128.store(c, lo);
    v128.store(c, hi, 16);
  } else {
    storePartial(c, lo, hi, w, acc);
  }
}

/**
 * The last panel's columns past N are not stored. No scratch memory: several threads store
 * partial panels at once, so lanes are extracted from the registers.
 */
export function storePartial(c: usize, lo: v128, hi: v128, w: i32, acc: bool): void {
  for (let t = 0; t < w; t++) {
    const v = lane(lo, hi, t);
    const at = c + (<usize>t << 2);
    store<f32>(at, acc ? load<f32>(at) + v : v);
  }
}

/** Lane t (0..7) of the 8 columns held in lo (0..3) and hi (4..7). */
export function lane(lo: v128, hi: v128, t: i32): f32 {
  switch (t) {
    case 0: return f32x4.extract_lane(lo, 0);
    case 1: return f32x4.extract_lane(lo, 1);
    case 2: return f32x4.extract_lane(lo, 2);
    case 3: return f32x4.extract_lane(lo, 3);
    case 4: return f32x4.extract_lane(hi, 0);
    case 5: return f32x4.extract_lane(hi, 1);
    case 6: return f32x4.extract_lane(hi, 2);
    default: return f32x4.extract_lane(hi, 3);
  }
}
