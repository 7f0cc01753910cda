// Shared by the kernel tests in this folder (excluded from the build by runtime/tsconfig.json):
// seeded operands, the same for a seed on every run, independent of Kiln's generator.

/** `n` float32 values uniform in [-1, 1) from a small xorshift generator seeded with `seed`. */
export function randomFloats(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}
