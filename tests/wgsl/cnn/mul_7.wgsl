// grid {"tile":[],"per":64}
// kernel mul_7: mul(f32r2,f32r1){}
struct Dims { w: array<vec4<u32>, 2> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let i = wg * 64u + lid;
  if (i >= (dims.w[1].x) * (dims.w[1].y)) { return; }
  var r_o = i;
  let o1 = r_o % dims.w[1].y; r_o = r_o / dims.w[1].y;
  let o0 = r_o;
  var p0 = 0u;
  var s_p0 = 1u;
  p0 += select(o1, 0u, dims.w[0].z == 1u) * s_p0;
  s_p0 *= dims.w[0].z;
  p0 += select(o0, 0u, dims.w[0].y == 1u) * s_p0;
  var p1 = 0u;
  var s_p1 = 1u;
  p1 += select(o1, 0u, dims.w[0].w == 1u) * s_p1;
  out0[i] = in0[p0] * in1[p1];
}
