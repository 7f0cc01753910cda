// AssemblyScript source: float32 e^x, sigmoid and tanh over n floats for the CPU primitive
// mapUnary (JavaScript side: runtime/src/wasm/math.ts), four lanes at a time; the last n mod 4
// floats go through the same vector code from a zero-padded block, so every element gets the
// same formula. Invariant: each element is lib/expf.ts's function of its input alone — no
// dependence on position, length or thread count.

import { expV, sigmoidV, tanhV } from './lib/expf';

/** Function codes (runtime/src/wasm/math.ts keeps the same table). */
const EXP = 0, SIGMOID = 1, TANH = 2;

@inline function apply(fn: i32, v: v128): v128 {
  if (fn == EXP) return expV(v);
  if (fn == SIGMOID) return sigmoidV(v);
  return tanhV(v);
}

@inline function run(fn: i32, n: i32, x: usize, out: usize): void {
  let k = 0;
  for (; k + 4 <= n; k += 4, x += 16, out += 16) v128.store(out, apply(fn, v128.load(x)));
  if (k == n) return;
  // The tail: lanes past n read zeros and are not stored.
  let v = f32x4.splat(0);
  v = f32x4.replace_lane(v, 0, load<f32>(x));
  if (k + 1 < n) v = f32x4.replace_lane(v, 1, load<f32>(x, 4));
  if (k + 2 < n) v = f32x4.replace_lane(v, 2, load<f32>(x, 8));
  const r = apply(fn, v);
  store<f32>(out, f32x4.extract_lane(r, 0));
  if (k + 1 < n) store<f32>(out, f32x4.extract_lane(r, 1), 4);
  if (k + 2 < n) store<f32>(out, f32x4.extract_lane(r, 2), 8);
}

/** out[i] = fn(x[i]) for i < n, fn one of EXP, SIGMOID, TANH (out may equal x). */
export function mathF32(fn: i32, n: i32, x: usize, out: usize): void {
  if (fn == EXP) run(EXP, n, x, out);
  else if (fn == SIGMOID) run(SIGMOID, n, x, out);
  else run(TANH, n, x, out);
}
