// grid {"tile":[],"per":64}
// kernel batch_norm_1: batch_norm(f32r4,f32r1,f32r1,f32r1,-){eps:0.00001}
struct Dims { w: array<vec4<u32>, 3> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read> in2: array<f32>;
@group(0) @binding(4) var<storage, read> in3: array<f32>;
@group(0) @binding(5) var<storage, read_write> out0: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let i = wg * 64u + lid;
  if (i >= (dims.w[0].y) * (dims.w[0].z) * (dims.w[0].w) * (dims.w[1].x)) { return; }
  let c = (i / ((dims.w[0].w) * (dims.w[1].x))) % dims.w[0].z;
  let scale = in3[c] / sqrt(in2[c] + f32(0.000009999999747378752));
  out0[i] = (in0[i] - in1[c]) * scale;
}
