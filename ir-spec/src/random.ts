// The random number generator every layer shares. Invariant: one algorithm, so eager mode
// (packages/core's default generator), the runtime's executor and a loaded `.tsgraph` draw the
// same stream for the same seed — a compiled graph run on kiln's generator gives exactly eager's
// numbers. It lives in ir-spec because the random ops' CPU kernels (ops/random.ts) draw from it
// and both the runtime and core sit above this layer. It does not reproduce PyTorch's streams
// (nobody can without its Mersenne Twister + Philox details); tests compare statistics.

/** What a random op's kernel draws from (a Generator, or any object with these methods). */
export interface RandomSource {
  /** Uniform in [0, 1), a multiple of 2^-24 (exact in float32). */
  random(): number;
  /** Standard normal. */
  normal(): number;
}

/** A generator's saved state (see Generator.getState). */
export interface GeneratorState { readonly s: Uint32Array; readonly spare: number | null }

/**
 * xoshiro128** with a splitmix32 seeder.
 * @example const g = new Generator(42); g.random(); g.normal();
 */
export class Generator implements RandomSource {
  private s = new Uint32Array(4);
  private spare: number | null = null;

  constructor(seed = 0x2545f491) { this.manualSeed(seed); }

  manualSeed(seed: number): this {
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
    this.spare = null;
    return this;
  }

  /** A snapshot of the stream position (PyTorch's get_state); setState() replays from it. */
  getState(): GeneratorState { return { s: this.s.slice(), spare: this.spare }; }
  setState(st: GeneratorState): this { this.s.set(st.s); this.spare = st.spare; return this; }

  /** Uniform 32-bit unsigned integer. */
  nextUint32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform in [0, 1). */
  random(): number { return (this.nextUint32() >>> 8) / 16777216; }

  /** Standard normal (Box–Muller, caching the second value). */
  normal(): number {
    if (this.spare !== null) { const v = this.spare; this.spare = null; return v; }
    let u = 0;
    while (u === 0) u = this.random();
    const v = this.random();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }

  /** Integer in [0, n). */
  int(n: number): number { return Math.floor(this.random() * n); }
}

function rotl(x: number, k: number): number { return ((x << k) | (x >>> (32 - k))) >>> 0; }
