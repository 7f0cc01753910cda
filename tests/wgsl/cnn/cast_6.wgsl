// grid {"tile":[],"per":64}
// kernel cast_6: cast(i32r1){dtype:"float32"}
struct Dims { w: array<vec4<u32>, 1> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<i32>;
@group(0) @binding(2) var<storage, read_write> out0: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let i = wg * 64u + lid;
  if (i >= (dims.w[0].z)) { return; }
  var r_o = i;
  let o0 = r_o;
  var p0 = 0u;
  var s_p0 = 1u;
  p0 += select(o0, 0u, dims.w[0].y == 1u) * s_p0;
  out0[i] = f32(in0[p0]);
}
