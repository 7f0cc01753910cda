// grid {"tile":[2147483647],"per":1,"merge":0}
// kernel masked_select: masked_select(f32r2,br3){}
struct Dims { w: array<vec4<u32>, 2> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<u32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
var<workgroup> scan: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let b0 = dims.w[0].w;
  let b1 = select(dims.w[0].y, dims.w[1].x, dims.w[0].y == 1u);
  let b2 = select(dims.w[0].z, dims.w[1].y, dims.w[0].z == 1u);
  let total = (b0) * (b1) * (b2);
  var before = 0u;
  for (var c0 = 0u; c0 < total; c0 += 64u) {
    let i = c0 + lid;
    var r_o = min(i, total - 1u);
    let o2 = r_o % b2; r_o = r_o / b2;
    let o1 = r_o % b1; r_o = r_o / b1;
    let o0 = r_o;
    var px = 0u;
    var s_px = 1u;
    px += select(o2, 0u, dims.w[0].z == 1u) * s_px;
    s_px *= dims.w[0].z;
    px += select(o1, 0u, dims.w[0].y == 1u) * s_px;
    var pm = 0u;
    var s_pm = 1u;
    pm += select(o2, 0u, dims.w[1].y == 1u) * s_pm;
    s_pm *= dims.w[1].y;
    pm += select(o1, 0u, dims.w[1].x == 1u) * s_pm;
    s_pm *= dims.w[1].x;
    pm += select(o0, 0u, dims.w[0].w == 1u) * s_pm;
    let m = select(0u, 1u, i < total && in1[pm] != 0u);
    scan[lid] = m;
    workgroupBarrier();
    for (var s = 1u; s < 64u; s = s << 1u) {
      var v = scan[lid];
      if (lid >= s) { v += scan[lid - s]; }
      workgroupBarrier();
      scan[lid] = v;
      workgroupBarrier();
    }
    let at = before + scan[lid] - m;
    if (m == 1u) { out0[at] = in0[px]; }
    before += scan[63];
    workgroupBarrier();
  }
}
