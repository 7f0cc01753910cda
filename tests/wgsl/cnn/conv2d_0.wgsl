// grid {"tile":[1,32,32],"per":1,"merge":2}
// kernel conv2d_0: conv2d(f32r4,f32r4,f32r1){dilation:[1,1],groups:1,padding:[1,1,1,1],stride:[1,1]}
struct Dims { w: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read> in2: array<f32>;
@group(0) @binding(4) var<storage, read_write> out0: array<f32>;
var<workgroup> tileA: array<f32, 512>;
var<workgroup> tileB: array<f32, 512>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let Cin = dims.w[0].z; let H = dims.w[0].w; let W = dims.w[1].x;
  let KH = dims.w[1].w; let KW = dims.w[2].x;
  let M = dims.w[2].w; let PH = dims.w[3].x; let PW = dims.w[3].y;
  let K = Cin * KH * KW; let cols = PH * PW * 1u;
  let tilesN = (cols + 31u) / 32u; let tilesM = (M + 31u) / 32u;
  let tn = wg % tilesN; let tm = (wg / tilesN) % tilesM; let n = wg / (tilesN * tilesM);
  let ty = lid / 8u; let tx = lid % 8u;
  var acc = array<f32, 16>();
  let col = tn * 32u + lid % 32u;
  let colOk = col < cols;
  let oh = col / PW; let ow = col % PW;
  let KHW = KH * KW;
  for (var k0 = 0u; k0 < K; k0 += 16u) {
    for (var l = lid; l < 512u; l += 64u) {
      let am = tm * 32u + l / 16u; let ak = k0 + l % 16u;
      var av = 0.0;
      if (am < M && ak < K) { av = in1[am * K + ak]; }
      tileA[l] = av;
      let bk = k0 + l / 32u;
      var bv = 0.0;
      if (bk < K && colOk) {
        let ci = bk / KHW; let rem = bk % KHW;
        let ih = i32(oh * 1u + (rem / KW) * 1u) - 1; let iw = i32(ow * 1u + (rem % KW) * 1u) - 1;
        if (ih >= 0 && ih < i32(H) && iw >= 0 && iw < i32(W)) { bv = in0[((n * Cin + ci) * H + u32(ih)) * W + u32(iw)]; }
      }
      tileB[l] = bv;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk++) {
      let a0 = tileA[(ty * 4u) * 16u + kk]; let a1 = tileA[(ty * 4u + 1u) * 16u + kk];
      let a2 = tileA[(ty * 4u + 2u) * 16u + kk]; let a3 = tileA[(ty * 4u + 3u) * 16u + kk];
      for (var j = 0u; j < 4u; j++) {
        let bv = tileB[kk * 32u + tx * 4u + j];
        acc[j] += a0 * bv; acc[4u + j] += a1 * bv; acc[8u + j] += a2 * bv; acc[12u + j] += a3 * bv;
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let co = tm * 32u + ty * 4u + i;
    if (co >= M) { continue; }
    for (var j0 = 0u; j0 < 4u; j0 += 1u) {
      let q = (tn * 32u + tx * 4u + j0) / 1u;
      if (q >= PH * PW) { continue; }
      var best = acc[i * 4u + j0] + in2[co];
      for (var j = j0 + 1u; j < j0 + 1u; j++) {
        let y = acc[i * 4u + j] + in2[co];
        if (y > best || y != y) { best = y; }
      }
      out0[(n * M + co) * PH * PW + q] = best;
    }
  }
}
