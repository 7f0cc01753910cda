// AssemblyScript source: float32 elementwise maps for the CPU primitives mapBinary/mapUnary
// (JavaScript side: runtime/src/wasm/elementwise.ts). A binary op runs over an output of up to
// three coalesced dims [d0, d1, d2] (dense, row-major) reading each input with its own element
// strides per dim; along the innermost dim an input's stride is 1 (SIMD loads) or 0 (a splat).
// Invariant: every lane computes exactly what ir-spec's JavaScript loop computes — an IEEE
// float32 add/sub/mul/div equals the double result rounded to float32, comparisons follow IEEE
// (NaN compares false, except `ne`), relu maps the bit patterns as ir-spec's reluLoop does.

/** Binary arithmetic codes (runtime/src/wasm/elementwise.ts keeps the same table). */
const ADD = 0, SUB = 1, MUL = 2, DIV = 3;
/** Comparison codes. */
const EQ = 0, NE = 1, LT = 2, LE = 3, GT = 4, GE = 5;

@inline function arith(op: i32, x: v128, y: v128): v128 {
  if (op == ADD) return f32x4.add(x, y);
  if (op == SUB) return f32x4.sub(x, y);
  if (op == MUL) return f32x4.mul(x, y);
  return f32x4.div(x, y);
}
@inline function arith1(op: i32, x: f32, y: f32): f32 {
  if (op == ADD) return x + y;
  if (op == SUB) return x - y;
  if (op == MUL) return x * y;
  return x / y;
}

/** One inner run of n floats: out[k] = A[k·sa] ∘ B[k·sb] with sa, sb ∈ {0, 1}. */
@inline function arithRow(op: i32, n: i32, a: usize, sa: i32, b: usize, sb: i32, o: usize): void {
  let k = 0;
  if (sa == 1 && sb == 1) {
    for (; k + 4 <= n; k += 4, a += 16, b += 16, o += 16) v128.store(o, arith(op, v128.load(a), v128.load(b)));
  } else if (sa == 1) {
    const y = v128.load32_splat(b);
    for (; k + 4 <= n; k += 4, a += 16, o += 16) v128.store(o, arith(op, v128.load(a), y));
  } else if (sb == 1) {
    const x = v128.load32_splat(a);
    for (; k + 4 <= n; k += 4, b += 16, o += 16) v128.store(o, arith(op, x, v128.load(b)));
  }
  const da = <usize>sa << 2, db = <usize>sb << 2;
  for (; k < n; k++, a += da, b += db, o += 4) store<f32>(o, arith1(op, load<f32>(a), load<f32>(b)));
}

/** out[i0,i1,i2] = A[i0·sa0 + i1·sa1 + i2·sa2] ∘ B[…] for op ADD/SUB/MUL/DIV (strides in floats). */
export function binaryF32(
  op: i32, d0: i32, d1: i32, d2: i32,
  a: usize, sa0: i32, sa1: i32, sa2: i32, b: usize, sb0: i32, sb1: i32, sb2: i32, out: usize,
): void {
  let o = out;
  const rowBytes = <usize>d2 << 2;
  for (let i0 = 0; i0 < d0; i0++) {
    for (let i1 = 0; i1 < d1; i1++) {
      const pa = a + (<usize>(i0 * sa0 + i1 * sa1) << 2), pb = b + (<usize>(i0 * sb0 + i1 * sb1) << 2);
      if (op == ADD) arithRow(ADD, d2, pa, sa2, pb, sb2, o);
      else if (op == SUB) arithRow(SUB, d2, pa, sa2, pb, sb2, o);
      else if (op == MUL) arithRow(MUL, d2, pa, sa2, pb, sb2, o);
      else arithRow(DIV, d2, pa, sa2, pb, sb2, o);
      o += rowBytes;
    }
  }
}

@inline function cmp(op: i32, x: v128, y: v128): v128 {
  if (op == EQ) return f32x4.eq(x, y);
  if (op == NE) return f32x4.ne(x, y);
  if (op == LT) return f32x4.lt(x, y);
  if (op == LE) return f32x4.le(x, y);
  if (op == GT) return f32x4.gt(x, y);
  return f32x4.ge(x, y);
}
@inline function cmp1(op: i32, x: f32, y: f32): u8 {
  if (op == EQ) return <u8>(x == y);
  if (op == NE) return <u8>(x != y);
  if (op == LT) return <u8>(x < y);
  if (op == LE) return <u8>(x <= y);
  if (op == GT) return <u8>(x > y);
  return <u8>(x >= y);
}

/** Narrows four all-ones/zero masks of 4 lanes to 16 bytes of 1/0. */
@inline function maskBytes(m0: v128, m1: v128, m2: v128, m3: v128): v128 {
  const lo = i16x8.narrow_i32x4_s(m0, m1), hi = i16x8.narrow_i32x4_s(m2, m3);
  return v128.and(i8x16.narrow_i16x8_s(lo, hi), i8x16.splat(1));
}

@inline function cmpRow(op: i32, n: i32, a: usize, sa: i32, b: usize, sb: i32, o: usize): void {
  let k = 0;
  if (sa == 1 && sb == 1) {
    for (; k + 16 <= n; k += 16, a += 64, b += 64, o += 16) {
      v128.store(o, maskBytes(
        cmp(op, v128.load(a), v128.load(b)), cmp(op, v128.load(a, 16), v128.load(b, 16)),
        cmp(op, v128.load(a, 32), v128.load(b, 32)), cmp(op, v128.load(a, 48), v128.load(b, 48))));
    }
  } else if (sa == 1) {
    const y = v128.load32_splat(b);
    for (; k + 16 <= n; k += 16, a += 64, o += 16) {
      v128.store(o, maskBytes(cmp(op, v128.load(a), y), cmp(op, v128.load(a, 16), y), cmp(op, v128.load(a, 32), y), cmp(op, v128.load(a, 48), y)));
    }
  } else if (sb == 1) {
    const x = v128.load32_splat(a);
    for (; k + 16 <= n; k += 16, b += 64, o += 16) {
      v128.store(o, maskBytes(cmp(op, x, v128.load(b)), cmp(op, x, v128.load(b, 16)), cmp(op, x, v128.load(b, 32)), cmp(op, x, v128.load(b, 48))));
    }
  }
  const da = <usize>sa << 2, db = <usize>sb << 2;
  for (; k < n; k++, a += da, b += db, o++) store<u8>(o, cmp1(op, load<f32>(a), load<f32>(b)));
}

/** out (bytes 0/1) = A ∘ B for op EQ…GE, over the same index space as binaryF32. */
export function compareF32(
  op: i32, d0: i32, d1: i32, d2: i32,
  a: usize, sa0: i32, sa1: i32, sa2: i32, b: usize, sb0: i32, sb1: i32, sb2: i32, out: usize,
): void {
  let o = out;
  for (let i0 = 0; i0 < d0; i0++) {
    for (let i1 = 0; i1 < d1; i1++) {
      const pa = a + (<usize>(i0 * sa0 + i1 * sa1) << 2), pb = b + (<usize>(i0 * sb0 + i1 * sb1) << 2);
      if (op == EQ) cmpRow(EQ, d2, pa, sa2, pb, sb2, o);
      else if (op == NE) cmpRow(NE, d2, pa, sa2, pb, sb2, o);
      else if (op == LT) cmpRow(LT, d2, pa, sa2, pb, sb2, o);
      else if (op == LE) cmpRow(LE, d2, pa, sa2, pb, sb2, o);
      else if (op == GT) cmpRow(GT, d2, pa, sa2, pb, sb2, o);
      else cmpRow(GE, d2, pa, sa2, pb, sb2, o);
      o += <usize>d2;
    }
  }
}

/** relu on n float32 bit patterns: a set sign bit gives +0 unless the value is a NaN. */
export function reluF32(n: i32, x: usize, out: usize): void {
  let k = 0;
  const abs = i32x4.splat(0x7fffffff), inf = i32x4.splat(0x7f800000);
  for (; k + 4 <= n; k += 4, x += 16, out += 16) {
    const b = v128.load(x);
    const neg = i32x4.shr_s(b, 31), notNan = i32x4.shr_s(i32x4.sub(inf, v128.and(b, abs)), 31);
    v128.store(out, v128.andnot(b, v128.andnot(neg, notNan)));
  }
  for (; k < n; k++, x += 4, out += 4) {
    const b = load<i32>(x);
    store<i32>(out, b & ~((b >> 31) & ~((0x7f800000 - (b & 0x7fffffff)) >> 31)));
  }
}

/**
 * out[i] = cond[i·sc] ? A[i·sa] : B[i·sb] for n floats, cond bytes (nonzero = true), each stride
 * 0 (a scalar) or 1: where() over full-size or scalar operands.
 */
export function whereF32(n: i32, c: usize, sc: i32, a: usize, sa: i32, b: usize, sb: i32, out: usize): void {
  let k = 0;
  if (sc == 1) {
    // Four condition bytes widened to four lane masks per step.
    const sa4 = <usize>sa << 4, sb4 = <usize>sb << 4;
    const zero = i32x4.splat(0);
    for (; k + 4 <= n; k += 4, c += 4, a += sa4, b += sb4, out += 16) {
      const bytes = v128.load32_zero(c);
      const m = i32x4.ne(i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(bytes)), zero);
      const x = sa ? v128.load(a) : v128.load32_splat(a), y = sb ? v128.load(b) : v128.load32_splat(b);
      v128.store(out, v128.bitselect(x, y, m));
    }
  }
  const da = <usize>sa << 2, db = <usize>sb << 2, dc = <usize>sc;
  for (; k < n; k++, c += dc, a += da, b += db, out += 4) store<f32>(out, load<u8>(c) ? load<f32>(a) : load<f32>(b));
}
