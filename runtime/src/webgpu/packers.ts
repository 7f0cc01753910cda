// The WebGPU device's packers: the one registry of the layouts a kernel record's `packed`
// variant may ask for, each a small WGSL kernel that turns a tensor (a conv's OIHW weight) into
// the layout that variant reads. The device runs it once per pinned constant at its first use
// (and per dispatch for a tensor that is not pinned). Invariant: `accepts(shape)` is the whole
// condition under which a variant may run (a kernel knows ranks, not dims), and the packed form
// is a pure function of the input's contents.
//
// winograd4x4: OIHW [Cout, C, 3, 3] → U [Cout][36][C], U[co][ξ][c] = (G g Gᵀ)[ξ] for g = w[co, c],
// the Winograd F(4×4, 3×3) filter tiles (the same U as ir-spec's kernels/winograd4.ts computes
// on the host, here in float32). One thread per filter (co, c).

/** A packer: which inputs it takes, the packed shape, and its kernel. */
export interface Packer {
  /** Whether a tensor of this shape can be packed (else the record's main kernel runs). */
  accepts(shape: readonly number[]): boolean;
  /** The packed tensor's shape. */
  shape(shape: readonly number[]): number[];
  /** Threads the kernel needs (one per work item; 64 per workgroup). */
  items(shape: readonly number[]): number;
  /**
   * The WGSL: binding 0 a uniform `p: vec4<u32>` (x: items, y: workgroups per grid row, z, w:
   * the `params` words), binding 1 the source, binding 2 the packed output.
   */
  readonly wgsl: string;
  /** The z, w words of the uniform. */
  params(shape: readonly number[]): [number, number];
  /** A WGSL language feature the variants reading this layout use: without it they never compile or run. */
  readonly requires?: string;
}

/** (G v)[k] for a column or row v0, v1, v2 (G: the F(4×4, 3×3) filter transform). */
const G = (v: (i: number) => string, dst: (k: number) => string): string[] => [
  `${dst(0)} = ${v(0)} * 0.25;`,
  `${dst(1)} = -(${v(0)} + ${v(1)} + ${v(2)}) / 6.0;`,
  `${dst(2)} = -(${v(0)} - ${v(1)} + ${v(2)}) / 6.0;`,
  `${dst(3)} = ${v(0)} / 24.0 + ${v(1)} / 12.0 + ${v(2)} / 6.0;`,
  `${dst(4)} = ${v(0)} / 24.0 - ${v(1)} / 12.0 + ${v(2)} / 6.0;`,
  `${dst(5)} = ${v(2)};`,
];

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

const WINOGRAD4X4_WGSL = [
  '@group(0) @binding(0) var<uniform> p: vec4<u32>;',
  '@group(0) @binding(1) var<storage, read> src: array<f32>;',
  '@group(0) @binding(2) var<storage, read_write> dst: array<f32>;',
  '@compute @workgroup_size(64)',
  'fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
  '  let i = (wid.x + wid.y * p.y) * 64u + lid;',
  '  if (i >= p.x) { return; }',
  '  let C = p.z; let co = i / C; let c = i % C; let g = i * 9u;',
  // G g: column j of the 6×3 block gg, then (G g) Gᵀ: row r of U.
  ...range(3).flatMap((j) => G((k) => `src[g + ${3 * k + j}u]`, (k) => `let gg${k}_${j}`).map((l) => `  ${l}`)),
  '  let base = co * 36u * C + c;',
  ...range(6).flatMap((r) => G((k) => `gg${r}_${k}`, (k) => `dst[base + ${6 * r + k}u * C]`).map((l) => `  ${l}`)),
  '}',
].join('\n') + '\n';

const winograd4x4: Packer = {
  accepts: (s) => s.length === 4 && s[2] === 3 && s[3] === 3,
  shape: (s) => [s[0], 36, s[1]],
  items: (s) => s[0] * s[1],
  params: (s) => [s[1], 0],
  wgsl: WINOGRAD4X4_WGSL,
};

/**
 * int8x4: an int8 weight [N, K] (already four per u32 word) as it is, for the variant that sums
 * with dot4I8Packed: accepted when K % 4 = 0, so every row starts a word. One thread per word.
 */
const int8x4: Packer = {
  accepts: (s) => s.length === 2 && s[1] % 4 === 0,
  shape: (s) => [...s],
  items: (s) => Math.ceil((s[0] * s[1]) / 4),
  params: () => [0, 0],
  requires: 'packed_4x8_integer_dot_product',
  wgsl: [
    '@group(0) @binding(0) var<uniform> p: vec4<u32>;',
    '@group(0) @binding(1) var<storage, read> src: array<u32>;',
    '@group(0) @binding(2) var<storage, read_write> dst: array<u32>;',
    '@compute @workgroup_size(64)',
    'fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    '  let i = (wid.x + wid.y * p.y) * 64u + lid;',
    '  if (i >= p.x) { return; }',
    '  dst[i] = src[i];',
    '}',
  ].join('\n') + '\n',
};

/** The packers by layout name (a kernel record's `packed.layout`). */
export const PACKERS: ReadonlyMap<string, Packer> = new Map([['winograd4x4', winograd4x4], ['int8x4', int8x4]]);
