// AssemblyScript source: the element body of fused_elementwise as a small register program over
// float32 blocks (JavaScript side, which compiles a body into a program and keeps the fallback:
// runtime/src/wasm/fused.ts). A register is a run of floats in the memory: an input or the output
// (addresses that advance with the block) or a temporary/constant block (fixed addresses).
// Invariant: each instruction is one IEEE float32 operation per lane, so a body of one arithmetic
// node (add, sub, mul, div) equals ir-spec's double-precision loop rounded once; a longer body
// differs from it only by the float32 rounding of each intermediate (and exp/sigmoid/tanh by
// their ≤ 2 ulp, runtime/wasm/lib/expf.ts).

import { expV, sigmoidV, tanhV } from './lib/expf';

/** Floats per block: a few temporaries of 1 KiB stay in L1. */
const BLOCK: i32 = 256;

/** Instruction codes (runtime/src/wasm/fused.ts keeps the same table). */
const ADD = 0, SUB = 1, MUL = 2, DIV = 3, MAX = 4, MIN = 5, NEG = 6, RELU = 7, ABS = 8;
/** e^x, sigmoid and tanh (lib/expf.ts: within 2 ulp of the correctly rounded value, not one IEEE operation). */
const EXP = 9, SIGMOID = 10, TANH = 11;

/** One instruction over `bytes` bytes of each register (the op chosen once, outside the loop). */
function step(op: i32, pd: usize, pa: usize, pb: usize, bytes: usize): void {
  let k: usize = 0;
  switch (op) {
    case ADD: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.add(v128.load(pa + k), v128.load(pb + k))); break;
    case SUB: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.sub(v128.load(pa + k), v128.load(pb + k))); break;
    case MUL: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.mul(v128.load(pa + k), v128.load(pb + k))); break;
    case DIV: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.div(v128.load(pa + k), v128.load(pb + k))); break;
    case MAX: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.max(v128.load(pa + k), v128.load(pb + k))); break;
    case MIN: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.min(v128.load(pa + k), v128.load(pb + k))); break;
    case NEG: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.neg(v128.load(pa + k))); break;
    // x < 0 ? 0 : x, as ir-spec's relu: -0 and NaN pass through.
    case RELU: {
      const zero = f32x4.splat(0);
      for (; k < bytes; k += 16) { const x = v128.load(pa + k); v128.store(pd + k, v128.andnot(x, f32x4.lt(x, zero))); }
      break;
    }
    case EXP: for (; k < bytes; k += 16) v128.store(pd + k, expV(v128.load(pa + k))); break;
    case SIGMOID: for (; k < bytes; k += 16) v128.store(pd + k, sigmoidV(v128.load(pa + k))); break;
    case TANH: for (; k < bytes; k += 16) v128.store(pd + k, tanhV(v128.load(pa + k))); break;
    default: for (; k < bytes; k += 16) v128.store(pd + k, f32x4.abs(v128.load(pa + k)));
  }
}

/**
 * Runs `nOps` instructions (i32 quads op, dst, a, b at `prog`) over n4 floats (a multiple of 4)
 * block by block. Register r's address for the block starting at float s is
 * regs[2r] + s·4·regs[2r+1] (regs: i32 pairs base, streamed ∈ {0, 1}).
 */
export function fusedF32(n4: i32, nOps: i32, prog: usize, regs: usize): void {
  for (let s = 0; s < n4; s += BLOCK) {
    const bytes = <usize>min(BLOCK, n4 - s) << 2;
    const shift = <usize>s << 2;
    for (let q = 0; q < nOps; q++) {
      const ins = prog + (<usize>q << 4);
      const op = load<i32>(ins);
      const d = regs + (<usize>load<i32>(ins, 4) << 3), a = regs + (<usize>load<i32>(ins, 8) << 3), b = regs + (<usize>load<i32>(ins, 12) << 3);
      const pd = <usize>load<i32>(d) + shift * <usize>load<i32>(d, 4);
      const pa = <usize>load<i32>(a) + shift * <usize>load<i32>(a, 4);
      const pb = <usize>load<i32>(b) + shift * <usize>load<i32>(b, 4);
      step(op, pd, pa, pb, bytes);
    }
  }
}
