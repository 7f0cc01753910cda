// conv2d / fused_conv2d with a 3×3 weight: Winograd F(4×4, 3×3) in ONE kernel, reading the weight
// as the WebGPU device packs it at load (layout "winograd4x4", [Cout, 36, C]: the 6×6 transformed
// filter tiles U in float32; runtime/src/webgpu/packers.ts, oracle ir-spec kernels/winograd4.ts);
// the dims block still holds the OIHW weight's dims. A workgroup of 64 threads owns 16 output channels ×
// a 4×4 block of 4×4 output tiles (a 16×16 output region; 8×8 when a 2×2/2 max pool is fused).
// Per chunk of CC input channels it stages the transformed input tiles V = Bᵀ d B in workgroup
// memory (one thread per tile·channel); then each thread accumulates M[ξ][co][t] +=
// U[ξ][co][c]·V[ξ][c][t] for 9 of the 36 positions ξ, 4 channels (a vec4) and 4 tiles: 36 vec4
// accumulators in named registers, U read straight from the packed weight. Last, in 4 rounds (one
// tile row each) the products go through workgroup memory so that each thread holds all 36 ξ of
// one (channel, tile) and applies Aᵀ M A, bias, max pool and activation. Tuned for SwiftShader
// (4 lanes = 4 consecutive threads): lanes take neighbouring tiles, so their V reads are
// consecutive words and their U reads one word; 2 barriers per CC channels (barriers are what a
// SwiftShader workgroup pays most for); no dynamically indexed private array in the hot loop or
// the input transform (SwiftShader compiles those very slowly and keeps them in memory).
// Invariant: taps in the padding and channels past C read 0 in V (so the clamped U words they
// meet add nothing), outputs past the edge or past Cout are never stored; float32 throughout (an
// all-float32 F(4×4) lands a few 1e-6 of the output's RMS off an exact conv). Applies to stride 1,
// dilation 1, groups 1 and pool = null or 2×2/2 (winogradApplies); the weight's 3×3 size is the
// device's check (a kernel sees ranks, not dims).

import { activation, activationHelpers } from './epilogue.js';
import type { KernelGen, KernelSig } from './shell.js';

/** Input channels staged per step (workgroup memory: 2 · CC · 36 · 16 floats ≤ 16 KiB). */
const CC = 3;
/** Threads that transform input tiles (one tile·channel each). */
const T = 16 * CC;
/** The one workgroup array: V [CC][36][16] (later the product exchange [36][16][4]), then
 * S0.. the half-transformed input tiles S [36][T]. */
const S0 = CC * 576;
const SHARED = S0 + 36 * T;

const ones = (v: unknown) => Array.isArray(v) && v.every((k) => k === 1);

/** Whether a conv with these attrs can run the Winograd kernel given a 3×3 weight (its stride, dilation, groups and pool). */
export function winogradApplies(sig: KernelSig): boolean {
  const a = sig.attrs, pool = a.pool as { kernel_size: number[]; stride: number[] } | null | undefined;
  if (a.layout !== undefined || !ones(a.stride ?? [1, 1]) || !ones(a.dilation ?? [1, 1]) || (a.groups ?? 1) !== 1) return false;
  return !pool || [...pool.kernel_size, ...pool.stride].every((k) => k === 2);
}

/** Bᵀ d for one column d0..d5 of a 6×6 tile, as in winograd4.ts: six assignments `dst(k) = …`. */
function bt6(d: string, dst: (k: number) => string): string[] {
  return [
    `${dst(0)} = 4.0 * ${d}0 - 5.0 * ${d}2 + ${d}4;`,
    `${dst(1)} = -4.0 * (${d}1 + ${d}2) + ${d}3 + ${d}4;`,
    `${dst(2)} = 4.0 * (${d}1 - ${d}2) - ${d}3 + ${d}4;`,
    `${dst(3)} = 2.0 * (${d}3 - ${d}1) - ${d}2 + ${d}4;`,
    `${dst(4)} = 2.0 * (${d}1 - ${d}3) - ${d}2 + ${d}4;`,
    `${dst(5)} = 4.0 * ${d}1 - 5.0 * ${d}3 + ${d}5;`,
  ];
}

/** Aᵀ m for one column m0..m5 of a 6×6 product tile: four assignments `dst(k) = …`. */
function at6(m: string, dst: (k: number) => string): string[] {
  return [
    `let s12 = ${m}1 + ${m}2; let d12 = ${m}1 - ${m}2; let s34 = ${m}3 + ${m}4; let d34 = ${m}3 - ${m}4;`,
    `${dst(0)} = ${m}0 + s12 + s34;`,
    `${dst(1)} = d12 + 2.0 * d34;`,
    `${dst(2)} = s12 + 4.0 * s34;`,
    `${dst(3)} = d12 + 8.0 * d34 + ${m}5;`,
  ];
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export const winogradConvKernel: KernelGen = (sig, d) => {
  const a = sig.attrs;
  const pad = (a.padding ?? [0, 0, 0, 0]) as number[];
  const act = String(a.activation ?? 'none');
  const pooled = !!a.pool;
  const bias = sig.inputs[2] ? 'in2[co]' : '0.0';
  const acc = (k: number, q: number) => `a${k}_${q}`;
  const lines = [
    `let C = ${d.inDim(0, 1)}; let H = ${d.inDim(0, 2)}; let W = ${d.inDim(0, 3)};`,
    `let Cout = ${d.inDim(1, 0)}; let YH = ${d.outDim(0, 2)}; let YW = ${d.outDim(0, 3)};`,
    // Regions of 4×4 tiles, as the grid counts them (tile [1, 16, R, R] of the output).
    `let RX = (YW + ${pooled ? 7 : 15}u) / ${pooled ? 8 : 16}u; let RY = (YH + ${pooled ? 7 : 15}u) / ${pooled ? 8 : 16}u;`,
    'let rx = wg % RX; let ry = (wg / RX) % RY; let cm = (wg / (RX * RY)) % ((Cout + 15u) / 16u); let n = wg / (RX * RY * ((Cout + 15u) / 16u));',
    'let tg = lid % 4u; let cg = (lid / 4u) % 4u; let xg = lid / 16u;',
    // Weight rows of this thread's 4 output channels (past Cout: the last row, never stored).
    ...range(4).map((i) => `let u${i} = min(cm * 16u + cg * 4u + ${i}u, Cout - 1u) * 36u * C;`),
    ...range(9).flatMap((k) => range(4).map((q) => `var ${acc(k, q)} = vec4<f32>();`)),
    `for (var c0 = 0u; c0 < C; c0 += ${CC}u) {`,
    // Threads < 16·CC transform one tile·channel each: Bᵀ d one column at a time into their own
    // words of S (lane-interleaved), then (Bᵀ d) B one row at a time into V. Only the thread
    // itself reads its S words, so no barrier is needed between the two steps (barriers are what
    // a SwiftShader workgroup pays most for), and no private array either.
    `  if (lid < ${T}u) {`,
    `    let j = lid % 16u; let cl = lid / 16u; let c = c0 + cl;`,
    `    let iy = i32((ry * 4u + j / 4u) * 4u) - ${pad[0]};`,
    '    let plane = (n * C + min(c, C - 1u)) * H * W;',
    '    for (var k = 0u; k < 6u; k++) {',
    `      let ix = i32((rx * 4u + j % 4u) * 4u + k) - ${pad[1]};`,
    '      let okx = c < C && ix >= 0 && ix < i32(W);',
    '      let at = plane + u32(max(ix, 0));',
    ...range(6).map((r) => `      let d${r} = ld(okx, at, iy + ${r}, H, W);`),
    ...bt6('d', (r) => `sh[${S0}u + (${r * 6}u + k) * ${T}u + lid]`).map((l) => `      ${l}`),
    '    }',
    '    for (var i = 0u; i < 6u; i++) {',
    ...range(6).map((k) => `      let d${k} = sh[${S0}u + (i * 6u + ${k}u) * ${T}u + lid];`),
    ...bt6('d', (k) => `sh[(cl * 36u + i * 6u + ${k}u) * 16u + j]`).map((l) => `      ${l}`),
    '    }',
    '  }',
    '  workgroupBarrier();',
    `  for (var cl = 0u; cl < ${CC}u; cl++) {`,
    // U straight from the weight: all 4 lanes read the same words.
    '    let uc = min(c0 + cl, C - 1u) + xg * 9u * C;',
    ...range(9).flatMap((k) => [
      `    { let x = (cl * 36u + xg * 9u + ${k}u) * 16u; let uo = uc + ${k}u * C;`,
      '      let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);',
      ...range(4).map((q) => `      ${acc(k, q)} += u * sh[x + ${4 * q}u + tg];`),
      '    }',
    ]),
    '  }',
    '  workgroupBarrier();',
    '}',
    // Round q: tiles j = tg' + 4q (one tile row of the block); thread (co = lid / 4, tg' = lid % 4).
    'let oc = lid / 4u; let co = cm * 16u + oc; let ot = lid % 4u;',
    'let ox = (rx * 4u + ot) * 4u;',
    'for (var q = 0u; q < 4u; q++) {',
    ...range(9).flatMap((k) => [
      `  var p${k} = ${acc(k, 0)};`,
      ...range(3).map((q) => `  if (q == ${q + 1}u) { p${k} = ${acc(k, q + 1)}; }`),
      ...range(4).map((i) => `  sh[((xg * 9u + ${k}u) * 16u + cg * 4u + ${i}u) * 4u + tg] = p${k}.${'xyzw'[i]};`),
    ]),
    '  workgroupBarrier();',
    '  if (co < Cout) {',
    '    let oy = (ry * 4u + q) * 4u;',
    '    let b = ' + bias + ';',
    // Aᵀ M one column at a time into e (rows 0..3), then (Aᵀ M) A one row at a time into y.
    '    var e: array<f32, 24>;',
    '    for (var j = 0u; j < 6u; j++) {',
    ...range(6).map((r) => `      let m${r} = sh[((${r * 6}u + j) * 16u + oc) * 4u + ot];`),
    ...at6('m', (k) => `e[${k * 6}u + j]`).map((l) => `      ${l}`),
    '    }',
    '    var y: array<f32, 16>;',
    '    for (var i = 0u; i < 4u; i++) {',
    ...range(6).map((r) => `      let m${r} = e[i * 6u + ${r}u];`),
    ...at6('m', (k) => `y[i * 4u + ${k}u]`).map((l) => `      ${l}`),
    '    }',
    ...(pooled ? poolStore(act) : plainStore(act)).map((l) => `    ${l}`),
    '  }',
    '  workgroupBarrier();',
    '}',
  ];
  const decls = [
    `var<workgroup> sh: array<f32, ${SHARED}>;`,
    '/** x[at + iy·W], or 0 in the padding (and wherever ok is false: a column outside, a channel past C). */',
    'fn ld(ok: bool, at: u32, iy: i32, H: u32, W: u32) -> f32 {',
    '  let inside = ok && iy >= 0 && iy < i32(H);',
    '  return select(0.0, in0[select(0u, at + u32(iy) * W, inside)], inside);',
    '}',
    activationHelpers(act),
  ].join('\n');
  const R = pooled ? 8 : 16;
  return { body: lines.join('\n'), grid: { tile: [1, 16, R, R], per: 1 }, decls: decls.trimEnd() };

  function plainStore(act: string): string[] {
    const out = ['let base = (n * Cout + co) * YH * YW;'];
    for (let r = 0; r < 4; r++) {
      for (let s = 0; s < 4; s++) {
        out.push(`if (oy + ${r}u < YH && ox + ${s}u < YW) { out0[base + (oy + ${r}u) * YW + ox + ${s}u] = ${activation(act, `y[${4 * r + s}] + b`)}; }`);
      }
    }
    return out;
  }

  // 2×2/2 pool windows inside the 4×4 tile; NaN wins, as in max_pool2d. The activation is
  // monotone, so it is applied once to the window's max.
  function poolStore(act: string): string[] {
    const out = ['let base = (n * Cout + co) * YH * YW; let py = oy / 2u; let px = ox / 2u;'];
    for (let i = 0; i < 2; i++) {
      for (let j = 0; j < 2; j++) {
        const w = `w${i}${j}`, y = (u: number, v: number) => `y[${4 * (2 * i + u) + 2 * j + v}]`;
        out.push(
          `var ${w} = ${y(0, 0)};`,
          ...[[0, 1], [1, 0], [1, 1]].map(([u, v]) => `if (${y(u, v)} > ${w} || ${y(u, v)} != ${y(u, v)}) { ${w} = ${y(u, v)}; }`),
          `if (py + ${i}u < YH && px + ${j}u < YW) { out0[base + (py + ${i}u) * YW + px + ${j}u] = ${activation(act, `${w} + b`)}; }`,
        );
      }
    }
    return out;
  }
};
