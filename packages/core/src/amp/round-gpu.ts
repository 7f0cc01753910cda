// float16/bfloat16 results on the GPU: as on the CPU (ir-spec/src/dtype.ts), a reduced-precision
// tensor holds its values widened to f32, and every kernel computes in f32; this kernel then
// rounds a result to the 16-bit type in place, round-to-nearest-even, with the bit arithmetic of
// ir-spec's toHalfBits/toBFloat16Bits (not pack2x16float, whose rounding and overflow WGSL leaves
// to the implementation) — so a GPU op gives the CPU's float16 numbers. Invariant: recorded right
// after the kernel that wrote the buffer, before anything reads it.

import type { WebGpuDevice } from '@kiln/runtime';

const body = (round: string) => `struct Params {
  n: u32,
}
@group(0) @binding(0) var<uniform> s: Params;
@group(0) @binding(1) var<storage, read_write> x: array<u32>;
${round}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = (wg.y * nw.x + wg.x) * 64u + li;
  if (i >= s.n) { return; }
  x[i] = roundBits(x[i]);
}
`;

const HALF = {
  key: 'amp.round_float16',
  wgsl: body(`fn roundBits(b: u32) -> u32 {
  let sign = b & 0x80000000u;
  let a = b & 0x7fffffffu;
  if (a >= 0x7f800000u) { return b; }                      // inf, NaN
  if (a >= 0x477ff000u) { return sign | 0x7f800000u; }     // from 65520 up: inf (65504 is the largest half)
  if (a < 0x38800000u) {                                   // under 2^-14: half subnormals, steps of 2^-24
    let q = round(bitcast<f32>(a) * 16777216.0);           // round() ties to even
    return sign | bitcast<u32>(q / 16777216.0);
  }
  return sign | ((a + 0x0fffu + ((a >> 13u) & 1u)) & 0xffffe000u); // 10 mantissa bits, ties to even
}`),
};

const BFLOAT = {
  key: 'amp.round_bfloat16',
  wgsl: body(`fn roundBits(b: u32) -> u32 {
  if ((b & 0x7fffffffu) > 0x7f800000u) { return (b | 0x00400000u) & 0xffff0000u; } // NaN stays a quiet NaN
  return (b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u;           // 7 mantissa bits, ties to even
}`),
};

/** Records the in-place rounding of the `n` widened values in `buffer` to `dtype`. */
export function roundReducedGpu(dev: WebGpuDevice, buffer: GPUBuffer, dtype: 'float16' | 'bfloat16', n: number): void {
  const params = new Uint32Array([n]).buffer;
  dev.runKernel(dtype === 'float16' ? HALF : BFLOAT, [buffer], params, n);
}
