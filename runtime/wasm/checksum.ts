// AssemblyScript source: the bulk of XXH32 (the `.tsgraph` blob checksum, ir-spec
// tsgraph/checksum.ts) over bytes already in the kernel memory (a file load read there). Caller:
// runtime/src/wasm/checksum.ts. Invariant: lane i of the vector is XXH32's accumulator v(i+1) and
// each 16-byte stripe is one v128 load (lane i = the stripe's little-endian word i), so the four
// lanes after n stripes equal the reference loop's v1..v4 exactly; the caller finishes the hash.

const P1: i32 = 0x9e3779b1;
const P2: i32 = 0x85ebca77;

/** Runs `stripes` 16-byte stripes from byte `p` over the four accumulators at `acc` (i32 ×4, read and written). */
export function xxh32Stripes(p: usize, stripes: i32, acc: usize): void {
  let v = v128.load(acc);
  const p1 = i32x4.splat(P1), p2 = i32x4.splat(P2);
  for (let k = 0; k < stripes; k++, p += 16) {
    const a = i32x4.add(v, i32x4.mul(v128.load(p), p2));
    v = i32x4.mul(v128.or(i32x4.shl(a, 13), i32x4.shr_u(a, 19)), p1);
  }
  v128.store(acc, v);
}
