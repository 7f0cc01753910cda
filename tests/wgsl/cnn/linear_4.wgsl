// grid {"tile":[32,32],"per":1}
// kernel linear_4: linear(f32r2,f32r2,-){}
struct Dims { w: array<vec4<u32>, 2> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
var<workgroup> tileA: array<f32, 512>;
var<workgroup> tileB: array<f32, 512>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let M = dims.w[0].y; let K = dims.w[0].z; let N = dims.w[0].w;
  let tilesN = (N + 31u) / 32u; let tilesM = (M + 31u) / 32u;
  let tn = wg % tilesN; let tm = (wg / tilesN) % tilesM; let bidx = wg / (tilesN * tilesM);
  let aBatch = 0u;
  let bBatch = 0u;
  let aOff = aBatch * M * K; let bOff = bBatch * K * N; let cOff = bidx * M * N;
  let ty = lid / 8u; let tx = lid % 8u;
  var acc0 = vec4<f32>();
  var acc1 = vec4<f32>();
  var acc2 = vec4<f32>();
  var acc3 = vec4<f32>();
  for (var k0 = 0u; k0 < K; k0 += 16u) {
    for (var l = lid; l < 512u; l += 64u) {
      let am = tm * 32u + l / 16u; let ak = k0 + l % 16u;
      var av = 0.0;
      if (am < M && ak < K) { av = in0[aOff + am * K + ak]; }
      tileA[l] = av;
      let bk = k0 + l % 16u; let bn = tn * 32u + l / 16u;
      var bv = 0.0;
      if (bk < K && bn < N) { bv = in1[bn * K + bk]; }
      tileB[(l % 16u) * 32u + l / 16u] = bv;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk++) {
      let b = vec4<f32>(tileB[kk * 32u + tx], tileB[kk * 32u + 8u + tx], tileB[kk * 32u + 16u + tx], tileB[kk * 32u + 24u + tx]);
      acc0 += tileA[(ty * 4u + 0u) * 16u + kk] * b;
      acc1 += tileA[(ty * 4u + 1u) * 16u + kk] * b;
      acc2 += tileA[(ty * 4u + 2u) * 16u + kk] * b;
      acc3 += tileA[(ty * 4u + 3u) * 16u + kk] * b;
    }
    workgroupBarrier();
  }
  { let m = tm * 32u + ty * 4u + 0u; let n = tn * 32u + 0u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc0.x; } }
  { let m = tm * 32u + ty * 4u + 0u; let n = tn * 32u + 8u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc0.y; } }
  { let m = tm * 32u + ty * 4u + 0u; let n = tn * 32u + 16u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc0.z; } }
  { let m = tm * 32u + ty * 4u + 0u; let n = tn * 32u + 24u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc0.w; } }
  { let m = tm * 32u + ty * 4u + 1u; let n = tn * 32u + 0u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc1.x; } }
  { let m = tm * 32u + ty * 4u + 1u; let n = tn * 32u + 8u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc1.y; } }
  { let m = tm * 32u + ty * 4u + 1u; let n = tn * 32u + 16u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc1.z; } }
  { let m = tm * 32u + ty * 4u + 1u; let n = tn * 32u + 24u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc1.w; } }
  { let m = tm * 32u + ty * 4u + 2u; let n = tn * 32u + 0u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc2.x; } }
  { let m = tm * 32u + ty * 4u + 2u; let n = tn * 32u + 8u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc2.y; } }
  { let m = tm * 32u + ty * 4u + 2u; let n = tn * 32u + 16u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc2.z; } }
  { let m = tm * 32u + ty * 4u + 2u; let n = tn * 32u + 24u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc2.w; } }
  { let m = tm * 32u + ty * 4u + 3u; let n = tn * 32u + 0u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc3.x; } }
  { let m = tm * 32u + ty * 4u + 3u; let n = tn * 32u + 8u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc3.y; } }
  { let m = tm * 32u + ty * 4u + 3u; let n = tn * 32u + 16u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc3.z; } }
  { let m = tm * 32u + ty * 4u + 3u; let n = tn * 32u + 24u + tx; if (m < M && n < N) { out0[cOff + m * N + n] = acc3.w; } }
}

// few rows (<= 4): grid {"tile":[1,64],"per":1}
// kernel linear_4.few_rows: linear(f32r2,f32r2,-){}
struct Dims { w: array<vec4<u32>, 2> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
var<workgroup> partial: array<vec4<f32>, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let K = dims.w[0].z; let N = dims.w[0].w;
  let tilesN = (N + 63u) / 64u; let r = wg / tilesN; let n0 = (wg % tilesN) * 64u + lid / 4u; let p = lid % 4u;
  let w0 = min(n0 + 0u, N - 1u) * K;
  let w1 = min(n0 + 16u, N - 1u) * K;
  let w2 = min(n0 + 32u, N - 1u) * K;
  let w3 = min(n0 + 48u, N - 1u) * K;
  var acc = vec4<f32>();
  let xo = r * K;
  for (var k = p; k < K; k += 4u) {
    let xv = in0[xo + k];
    acc += xv * vec4<f32>(in1[w0 + k], in1[w1 + k], in1[w2 + k], in1[w3 + k]);
  }
  partial[lid] = acc;
  workgroupBarrier();
  if (p == 0u) {
    let s = partial[lid] + partial[lid + 1u] + partial[lid + 2u] + partial[lid + 3u];
    { let n = n0 + 0u; if (n < N) { out0[r * N + n] = s.x; } }
    { let n = n0 + 16u; if (n < N) { out0[r * N + n] = s.y; } }
    { let n = n0 + 32u; if (n < N) { out0[r * N + n] = s.z; } }
    { let n = n0 + 48u; if (n < N) { out0[r * N + n] = s.w; } }
  }
}
