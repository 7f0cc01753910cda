// XXH32 (Yann Collet's xxHash, 32-bit variant, seed 0) of a byte range: the checksum a `.tsgraph`
// header carries for its blob (SPEC.md §13.2). Invariant: the result is the reference XXH32 of
// the bytes, whatever the host's endianness or the alignment of the input view; the fast path
// reads aligned little-endian words through a Uint32Array (several GB/s in V8, so checking a
// 50 MB blob costs tens of milliseconds), the fallback reads bytes.

const P1 = 0x9e3779b1, P2 = 0x85ebca77, P3 = 0xc2b2ae3d, P4 = 0x27d4eb2f, P5 = 0x165667b1;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));

/** The little-endian u32 at byte `i` of `b`. */
const word = (b: Uint8Array, i: number) => (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;

/**
 * XXH32's bulk: the four accumulators v1..v4 after the first `stripes` 16-byte stripes of
 * `bytes`. xxh32 runs its own loop; a caller may pass a faster one computing exactly the same
 * (the CPU runtime's WebAssembly SIMD loop over bytes in its kernel memory).
 */
export type Xxh32Stripes = (bytes: Uint8Array, stripes: number) => readonly [number, number, number, number];

/** Xxh32Stripes in JavaScript: the reference. */
export const xxh32StripesJs: Xxh32Stripes = (bytes, stripes) => {
  let v1 = (P1 + P2) | 0, v2 = P2 | 0, v3 = 0, v4 = -P1 | 0;
  if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) {
    // Aligned little-endian host: read the stripes as words, no copy.
    const w = new Uint32Array(bytes.buffer, bytes.byteOffset, stripes * 4);
    for (let k = 0; k < w.length; k += 4) {
      v1 = Math.imul(rotl((v1 + Math.imul(w[k], P2)) | 0, 13), P1);
      v2 = Math.imul(rotl((v2 + Math.imul(w[k + 1], P2)) | 0, 13), P1);
      v3 = Math.imul(rotl((v3 + Math.imul(w[k + 2], P2)) | 0, 13), P1);
      v4 = Math.imul(rotl((v4 + Math.imul(w[k + 3], P2)) | 0, 13), P1);
    }
  } else {
    for (let k = 0; k < stripes * 16; k += 16) {
      v1 = Math.imul(rotl((v1 + Math.imul(word(bytes, k), P2)) | 0, 13), P1);
      v2 = Math.imul(rotl((v2 + Math.imul(word(bytes, k + 4), P2)) | 0, 13), P1);
      v3 = Math.imul(rotl((v3 + Math.imul(word(bytes, k + 8), P2)) | 0, 13), P1);
      v4 = Math.imul(rotl((v4 + Math.imul(word(bytes, k + 12), P2)) | 0, 13), P1);
    }
  }
  return [v1, v2, v3, v4];
};

/** The accumulators' initial values (seed 0), for an Xxh32Stripes that starts from them. */
export const XXH32_LANES0: readonly [number, number, number, number] = [(P1 + P2) | 0, P2 | 0, 0, -P1 | 0];

/**
 * XXH32 of `bytes` with seed 0, as an unsigned 32-bit integer; `stripes` runs the bulk (default:
 * the JavaScript loop).
 * @example xxh32(new TextEncoder().encode('abc')).toString(16) // '32d153ff'
 */
export function xxh32(bytes: Uint8Array, stripes: Xxh32Stripes = xxh32StripesJs): number {
  const len = bytes.length;
  let i = 0;
  let h: number;
  if (len >= 16) {
    const n = len >>> 4;
    const [v1, v2, v3, v4] = stripes(bytes, n);
    i = n * 16;
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
  } else {
    h = P5 | 0;
  }
  h = (h + len) | 0; // the length modulo 2^32, as the reference
  for (; i + 4 <= len; i += 4) h = Math.imul(rotl((h + Math.imul(word(bytes, i), P3)) | 0, 17), P4);
  for (; i < len; i++) h = Math.imul(rotl((h + Math.imul(bytes[i], P5)) | 0, 11), P1);
  h = Math.imul(h ^ (h >>> 15), P2);
  h = Math.imul(h ^ (h >>> 13), P3);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The checksum as written in a header: 8 lower-case hex digits. */
export function xxh32Hex(bytes: Uint8Array, stripes?: Xxh32Stripes): string {
  return xxh32(bytes, stripes).toString(16).padStart(8, '0');
}
