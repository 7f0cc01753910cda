// grid {"tile":[],"per":64}
// kernel max_pool2d_3: max_pool2d(f32r4){ceil_mode:false,dilation:[1,1],kernel_size:[2,2],padding:[0,0],stride:[2,2]}
struct Dims { w: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read_write> out0: array<f32>;
@group(0) @binding(3) var<storage, read_write> out1: array<i32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let H = dims.w[0].w; let W = dims.w[1].x;
  let OH = dims.w[1].w; let OW = dims.w[2].x;
  let i = wg * 64u + lid;
  if (i >= dims.w[1].y * dims.w[1].z * OH * OW) { return; }
  let ow = i % OW; let oh = (i / OW) % OH; let plane = i / (OW * OH);
  let base = plane * H * W;
  let sy = i32(oh * 2u) - 0; let sx = i32(ow * 2u) - 0;
  let dy = 1; let dx = 1;
  let y0 = select(sy, sy + ((-sy + dy - 1) / dy) * dy, sy < 0); let x0 = select(sx, sx + ((-sx + dx - 1) / dx) * dx, sx < 0);
  let y1 = min(sy + 2, i32(H)); let x1 = min(sx + 2, i32(W));
  var best = 0.0; var at = -1; // the first in-bounds tap always wins
  for (var y = y0; y < y1; y += dy) {
    for (var x = x0; x < x1; x += dx) {
      let p = y * i32(W) + x;
      let v = in0[base + u32(p)];
      if (at < 0 || v > best || v != v) { best = v; at = p; }
    }
  }
  out0[i] = best;
  out1[i] = at;
}
