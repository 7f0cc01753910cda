// grid {"tile":[1,16,8,8],"per":1}
// kernel winograd_pool.winograd4x4: fused_conv2d(f32r4,f32r4,-){activation:"relu",dilation:[1,1],groups:1,padding:[1,1,1,1],pool:{kernel_size:[2,2],stride:[2,2]},stride:[1,1]}
struct Dims { w: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
var<workgroup> sh: array<f32, 3456>;
/** x[at + iy·W], or 0 in the padding (and wherever ok is false: a column outside, a channel past C). */
fn ld(ok: bool, at: u32, iy: i32, H: u32, W: u32) -> f32 {
  let inside = ok && iy >= 0 && iy < i32(H);
  return select(0.0, in0[select(0u, at + u32(iy) * W, inside)], inside);
}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= dims.w[0].x) { return; }
  let C = dims.w[0].z; let H = dims.w[0].w; let W = dims.w[1].x;
  let Cout = dims.w[1].y; let YH = dims.w[2].w; let YW = dims.w[3].x;
  let RX = (YW + 7u) / 8u; let RY = (YH + 7u) / 8u;
  let rx = wg % RX; let ry = (wg / RX) % RY; let cm = (wg / (RX * RY)) % ((Cout + 15u) / 16u); let n = wg / (RX * RY * ((Cout + 15u) / 16u));
  let tg = lid % 4u; let cg = (lid / 4u) % 4u; let xg = lid / 16u;
  let u0 = min(cm * 16u + cg * 4u + 0u, Cout - 1u) * 36u * C;
  let u1 = min(cm * 16u + cg * 4u + 1u, Cout - 1u) * 36u * C;
  let u2 = min(cm * 16u + cg * 4u + 2u, Cout - 1u) * 36u * C;
  let u3 = min(cm * 16u + cg * 4u + 3u, Cout - 1u) * 36u * C;
  var a0_0 = vec4<f32>();
  var a0_1 = vec4<f32>();
  var a0_2 = vec4<f32>();
  var a0_3 = vec4<f32>();
  var a1_0 = vec4<f32>();
  var a1_1 = vec4<f32>();
  var a1_2 = vec4<f32>();
  var a1_3 = vec4<f32>();
  var a2_0 = vec4<f32>();
  var a2_1 = vec4<f32>();
  var a2_2 = vec4<f32>();
  var a2_3 = vec4<f32>();
  var a3_0 = vec4<f32>();
  var a3_1 = vec4<f32>();
  var a3_2 = vec4<f32>();
  var a3_3 = vec4<f32>();
  var a4_0 = vec4<f32>();
  var a4_1 = vec4<f32>();
  var a4_2 = vec4<f32>();
  var a4_3 = vec4<f32>();
  var a5_0 = vec4<f32>();
  var a5_1 = vec4<f32>();
  var a5_2 = vec4<f32>();
  var a5_3 = vec4<f32>();
  var a6_0 = vec4<f32>();
  var a6_1 = vec4<f32>();
  var a6_2 = vec4<f32>();
  var a6_3 = vec4<f32>();
  var a7_0 = vec4<f32>();
  var a7_1 = vec4<f32>();
  var a7_2 = vec4<f32>();
  var a7_3 = vec4<f32>();
  var a8_0 = vec4<f32>();
  var a8_1 = vec4<f32>();
  var a8_2 = vec4<f32>();
  var a8_3 = vec4<f32>();
  for (var c0 = 0u; c0 < C; c0 += 3u) {
    if (lid < 48u) {
      let j = lid % 16u; let cl = lid / 16u; let c = c0 + cl;
      let iy = i32((ry * 4u + j / 4u) * 4u) - 1;
      let plane = (n * C + min(c, C - 1u)) * H * W;
      for (var k = 0u; k < 6u; k++) {
        let ix = i32((rx * 4u + j % 4u) * 4u + k) - 1;
        let okx = c < C && ix >= 0 && ix < i32(W);
        let at = plane + u32(max(ix, 0));
        let d0 = ld(okx, at, iy + 0, H, W);
        let d1 = ld(okx, at, iy + 1, H, W);
        let d2 = ld(okx, at, iy + 2, H, W);
        let d3 = ld(okx, at, iy + 3, H, W);
        let d4 = ld(okx, at, iy + 4, H, W);
        let d5 = ld(okx, at, iy + 5, H, W);
        sh[1728u + (0u + k) * 48u + lid] = 4.0 * d0 - 5.0 * d2 + d4;
        sh[1728u + (6u + k) * 48u + lid] = -4.0 * (d1 + d2) + d3 + d4;
        sh[1728u + (12u + k) * 48u + lid] = 4.0 * (d1 - d2) - d3 + d4;
        sh[1728u + (18u + k) * 48u + lid] = 2.0 * (d3 - d1) - d2 + d4;
        sh[1728u + (24u + k) * 48u + lid] = 2.0 * (d1 - d3) - d2 + d4;
        sh[1728u + (30u + k) * 48u + lid] = 4.0 * d1 - 5.0 * d3 + d5;
      }
      for (var i = 0u; i < 6u; i++) {
        let d0 = sh[1728u + (i * 6u + 0u) * 48u + lid];
        let d1 = sh[1728u + (i * 6u + 1u) * 48u + lid];
        let d2 = sh[1728u + (i * 6u + 2u) * 48u + lid];
        let d3 = sh[1728u + (i * 6u + 3u) * 48u + lid];
        let d4 = sh[1728u + (i * 6u + 4u) * 48u + lid];
        let d5 = sh[1728u + (i * 6u + 5u) * 48u + lid];
        sh[(cl * 36u + i * 6u + 0u) * 16u + j] = 4.0 * d0 - 5.0 * d2 + d4;
        sh[(cl * 36u + i * 6u + 1u) * 16u + j] = -4.0 * (d1 + d2) + d3 + d4;
        sh[(cl * 36u + i * 6u + 2u) * 16u + j] = 4.0 * (d1 - d2) - d3 + d4;
        sh[(cl * 36u + i * 6u + 3u) * 16u + j] = 2.0 * (d3 - d1) - d2 + d4;
        sh[(cl * 36u + i * 6u + 4u) * 16u + j] = 2.0 * (d1 - d3) - d2 + d4;
        sh[(cl * 36u + i * 6u + 5u) * 16u + j] = 4.0 * d1 - 5.0 * d3 + d5;
      }
    }
    workgroupBarrier();
    for (var cl = 0u; cl < 3u; cl++) {
      let uc = min(c0 + cl, C - 1u) + xg * 9u * C;
      { let x = (cl * 36u + xg * 9u + 0u) * 16u; let uo = uc + 0u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a0_0 += u * sh[x + 0u + tg];
        a0_1 += u * sh[x + 4u + tg];
        a0_2 += u * sh[x + 8u + tg];
        a0_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 1u) * 16u; let uo = uc + 1u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a1_0 += u * sh[x + 0u + tg];
        a1_1 += u * sh[x + 4u + tg];
        a1_2 += u * sh[x + 8u + tg];
        a1_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 2u) * 16u; let uo = uc + 2u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a2_0 += u * sh[x + 0u + tg];
        a2_1 += u * sh[x + 4u + tg];
        a2_2 += u * sh[x + 8u + tg];
        a2_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 3u) * 16u; let uo = uc + 3u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a3_0 += u * sh[x + 0u + tg];
        a3_1 += u * sh[x + 4u + tg];
        a3_2 += u * sh[x + 8u + tg];
        a3_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 4u) * 16u; let uo = uc + 4u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a4_0 += u * sh[x + 0u + tg];
        a4_1 += u * sh[x + 4u + tg];
        a4_2 += u * sh[x + 8u + tg];
        a4_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 5u) * 16u; let uo = uc + 5u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a5_0 += u * sh[x + 0u + tg];
        a5_1 += u * sh[x + 4u + tg];
        a5_2 += u * sh[x + 8u + tg];
        a5_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 6u) * 16u; let uo = uc + 6u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a6_0 += u * sh[x + 0u + tg];
        a6_1 += u * sh[x + 4u + tg];
        a6_2 += u * sh[x + 8u + tg];
        a6_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 7u) * 16u; let uo = uc + 7u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a7_0 += u * sh[x + 0u + tg];
        a7_1 += u * sh[x + 4u + tg];
        a7_2 += u * sh[x + 8u + tg];
        a7_3 += u * sh[x + 12u + tg];
      }
      { let x = (cl * 36u + xg * 9u + 8u) * 16u; let uo = uc + 8u * C;
        let u = vec4<f32>(in1[u0 + uo], in1[u1 + uo], in1[u2 + uo], in1[u3 + uo]);
        a8_0 += u * sh[x + 0u + tg];
        a8_1 += u * sh[x + 4u + tg];
        a8_2 += u * sh[x + 8u + tg];
        a8_3 += u * sh[x + 12u + tg];
      }
    }
    workgroupBarrier();
  }
  let oc = lid / 4u; let co = cm * 16u + oc; let ot = lid % 4u;
  let ox = (rx * 4u + ot) * 4u;
  for (var q = 0u; q < 4u; q++) {
    var p0 = a0_0;
    if (q == 1u) { p0 = a0_1; }
    if (q == 2u) { p0 = a0_2; }
    if (q == 3u) { p0 = a0_3; }
    sh[((xg * 9u + 0u) * 16u + cg * 4u + 0u) * 4u + tg] = p0.x;
    sh[((xg * 9u + 0u) * 16u + cg * 4u + 1u) * 4u + tg] = p0.y;
    sh[((xg * 9u + 0u) * 16u + cg * 4u + 2u) * 4u + tg] = p0.z;
    sh[((xg * 9u + 0u) * 16u + cg * 4u + 3u) * 4u + tg] = p0.w;
    var p1 = a1_0;
    if (q == 1u) { p1 = a1_1; }
    if (q == 2u) { p1 = a1_2; }
    if (q == 3u) { p1 = a1_3; }
    sh[((xg * 9u + 1u) * 16u + cg * 4u + 0u) * 4u + tg] = p1.x;
    sh[((xg * 9u + 1u) * 16u + cg * 4u + 1u) * 4u + tg] = p1.y;
    sh[((xg * 9u + 1u) * 16u + cg * 4u + 2u) * 4u + tg] = p1.z;
    sh[((xg * 9u + 1u) * 16u + cg * 4u + 3u) * 4u + tg] = p1.w;
    var p2 = a2_0;
    if (q == 1u) { p2 = a2_1; }
    if (q == 2u) { p2 = a2_2; }
    if (q == 3u) { p2 = a2_3; }
    sh[((xg * 9u + 2u) * 16u + cg * 4u + 0u) * 4u + tg] = p2.x;
    sh[((xg * 9u + 2u) * 16u + cg * 4u + 1u) * 4u + tg] = p2.y;
    sh[((xg * 9u + 2u) * 16u + cg * 4u + 2u) * 4u + tg] = p2.z;
    sh[((xg * 9u + 2u) * 16u + cg * 4u + 3u) * 4u + tg] = p2.w;
    var p3 = a3_0;
    if (q == 1u) { p3 = a3_1; }
    if (q == 2u) { p3 = a3_2; }
    if (q == 3u) { p3 = a3_3; }
    sh[((xg * 9u + 3u) * 16u + cg * 4u + 0u) * 4u + tg] = p3.x;
    sh[((xg * 9u + 3u) * 16u + cg * 4u + 1u) * 4u + tg] = p3.y;
    sh[((xg * 9u + 3u) * 16u + cg * 4u + 2u) * 4u + tg] = p3.z;
    sh[((xg * 9u + 3u) * 16u + cg * 4u + 3u) * 4u + tg] = p3.w;
    var p4 = a4_0;
    if (q == 1u) { p4 = a4_1; }
    if (q == 2u) { p4 = a4_2; }
    if (q == 3u) { p4 = a4_3; }
    sh[((xg * 9u + 4u) * 16u + cg * 4u + 0u) * 4u + tg] = p4.x;
    sh[((xg * 9u + 4u) * 16u + cg * 4u + 1u) * 4u + tg] = p4.y;
    sh[((xg * 9u + 4u) * 16u + cg * 4u + 2u) * 4u + tg] = p4.z;
    sh[((xg * 9u + 4u) * 16u + cg * 4u + 3u) * 4u + tg] = p4.w;
    var p5 = a5_0;
    if (q == 1u) { p5 = a5_1; }
    if (q == 2u) { p5 = a5_2; }
    if (q == 3u) { p5 = a5_3; }
    sh[((xg * 9u + 5u) * 16u + cg * 4u + 0u) * 4u + tg] = p5.x;
    sh[((xg * 9u + 5u) * 16u + cg * 4u + 1u) * 4u + tg] = p5.y;
    sh[((xg * 9u + 5u) * 16u + cg * 4u + 2u) * 4u + tg] = p5.z;
    sh[((xg * 9u + 5u) * 16u + cg * 4u + 3u) * 4u + tg] = p5.w;
    var p6 = a6_0;
    if (q == 1u) { p6 = a6_1; }
    if (q == 2u) { p6 = a6_2; }
    if (q == 3u) { p6 = a6_3; }
    sh[((xg * 9u + 6u) * 16u + cg * 4u + 0u) * 4u + tg] = p6.x;
    sh[((xg * 9u + 6u) * 16u + cg * 4u + 1u) * 4u + tg] = p6.y;
    sh[((xg * 9u + 6u) * 16u + cg * 4u + 2u) * 4u + tg] = p6.z;
    sh[((xg * 9u + 6u) * 16u + cg * 4u + 3u) * 4u + tg] = p6.w;
    var p7 = a7_0;
    if (q == 1u) { p7 = a7_1; }
    if (q == 2u) { p7 = a7_2; }
    if (q == 3u) { p7 = a7_3; }
    sh[((xg * 9u + 7u) * 16u + cg * 4u + 0u) * 4u + tg] = p7.x;
    sh[((xg * 9u + 7u) * 16u + cg * 4u + 1u) * 4u + tg] = p7.y;
    sh[((xg * 9u + 7u) * 16u + cg * 4u + 2u) * 4u + tg] = p7.z;
    sh[((xg * 9u + 7u) * 16u + cg * 4u + 3u) * 4u + tg] = p7.w;
    var p8 = a8_0;
    if (q == 1u) { p8 = a8_1; }
    if (q == 2u) { p8 = a8_2; }
    if (q == 3u) { p8 = a8_3; }
    sh[((xg * 9u + 8u) * 16u + cg * 4u + 0u) * 4u + tg] = p8.x;
    sh[((xg * 9u + 8u) * 16u + cg * 4u + 1u) * 4u + tg] = p8.y;
    sh[((xg * 9u + 8u) * 16u + cg * 4u + 2u) * 4u + tg] = p8.z;
    sh[((xg * 9u + 8u) * 16u + cg * 4u + 3u) * 4u + tg] = p8.w;
    workgroupBarrier();
    if (co < Cout) {
      let oy = (ry * 4u + q) * 4u;
      let b = 0.0;
      var e: array<f32, 24>;
      for (var j = 0u; j < 6u; j++) {
        let m0 = sh[((0u + j) * 16u + oc) * 4u + ot];
        let m1 = sh[((6u + j) * 16u + oc) * 4u + ot];
        let m2 = sh[((12u + j) * 16u + oc) * 4u + ot];
        let m3 = sh[((18u + j) * 16u + oc) * 4u + ot];
        let m4 = sh[((24u + j) * 16u + oc) * 4u + ot];
        let m5 = sh[((30u + j) * 16u + oc) * 4u + ot];
        let s12 = m1 + m2; let d12 = m1 - m2; let s34 = m3 + m4; let d34 = m3 - m4;
        e[0u + j] = m0 + s12 + s34;
        e[6u + j] = d12 + 2.0 * d34;
        e[12u + j] = s12 + 4.0 * s34;
        e[18u + j] = d12 + 8.0 * d34 + m5;
      }
      var y: array<f32, 16>;
      for (var i = 0u; i < 4u; i++) {
        let m0 = e[i * 6u + 0u];
        let m1 = e[i * 6u + 1u];
        let m2 = e[i * 6u + 2u];
        let m3 = e[i * 6u + 3u];
        let m4 = e[i * 6u + 4u];
        let m5 = e[i * 6u + 5u];
        let s12 = m1 + m2; let d12 = m1 - m2; let s34 = m3 + m4; let d34 = m3 - m4;
        y[i * 4u + 0u] = m0 + s12 + s34;
        y[i * 4u + 1u] = d12 + 2.0 * d34;
        y[i * 4u + 2u] = s12 + 4.0 * s34;
        y[i * 4u + 3u] = d12 + 8.0 * d34 + m5;
      }
      let base = (n * Cout + co) * YH * YW; let py = oy / 2u; let px = ox / 2u;
      var w00 = y[0];
      if (y[1] > w00 || y[1] != y[1]) { w00 = y[1]; }
      if (y[4] > w00 || y[4] != y[4]) { w00 = y[4]; }
      if (y[5] > w00 || y[5] != y[5]) { w00 = y[5]; }
      if (py + 0u < YH && px + 0u < YW) { out0[base + (py + 0u) * YW + px + 0u] = max((w00 + b), f32(0)); }
      var w01 = y[2];
      if (y[3] > w01 || y[3] != y[3]) { w01 = y[3]; }
      if (y[6] > w01 || y[6] != y[6]) { w01 = y[6]; }
      if (y[7] > w01 || y[7] != y[7]) { w01 = y[7]; }
      if (py + 0u < YH && px + 1u < YW) { out0[base + (py + 0u) * YW + px + 1u] = max((w01 + b), f32(0)); }
      var w10 = y[8];
      if (y[9] > w10 || y[9] != y[9]) { w10 = y[9]; }
      if (y[12] > w10 || y[12] != y[12]) { w10 = y[12]; }
      if (y[13] > w10 || y[13] != y[13]) { w10 = y[13]; }
      if (py + 1u < YH && px + 0u < YW) { out0[base + (py + 1u) * YW + px + 0u] = max((w10 + b), f32(0)); }
      var w11 = y[10];
      if (y[11] > w11 || y[11] != y[11]) { w11 = y[11]; }
      if (y[14] > w11 || y[14] != y[14]) { w11 = y[14]; }
      if (y[15] > w11 || y[15] != y[15]) { w11 = y[15]; }
      if (py + 1u < YH && px + 1u < YW) { out0[base + (py + 1u) * YW + px + 1u] = max((w11 + b), f32(0)); }
    }
    workgroupBarrier();
  }
}
