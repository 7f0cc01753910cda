// Dynamic int8 quantization arithmetic as PyTorch 1.13's quantized engines do it (ATen's
// ChooseQuantizationParams, fbgemm's Quantize and ReQuantizeForFloat). Invariant: every step
// rounds where the engine rounds (float32 scale, nearbyint = round half to even, int32 sums,
// float32 requantization), so results equal the engine's bit for bit on the same input.

import { applyGemmEpilogue } from './gemm.js';
import { kernelTick } from './deadline.js';

/** Scales below this are raised to it (ATen's SMALL_SCALE_THRESHOLD). */
const SMALL_SCALE = 6.1e-5;

/** The activation quantization of one call: uint8 values with a float32 scale and a zero point. */
export interface ActivationQParams { readonly scale: number; readonly zeroPoint: number }

const ROUNDER = 6755399441055744; // 1.5 · 2^52

/** Round half to even, as C's nearbyint in the default rounding mode. */
export function nearbyint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * ATen's ChooseQuantizationParams for quint8 over [min(x), max(x)] (the range always holds 0);
 * `reduceRange` maps it to [0, 127] instead of [0, 255], as fbgemm and onednn do.
 */
export function chooseQParams(xMin: number, xMax: number, reduceRange: boolean): ActivationQParams {
  const qmin = 0, qmax = reduceRange ? 127 : 255;
  let min = Math.fround(Math.min(xMin, 0)), max = Math.fround(Math.max(xMax, 0));
  let scale = (max - min) / (qmax - qmin); // double, as ATen
  if (Math.fround(scale) === 0 || !Number.isFinite(Math.fround(1 / Math.fround(scale)))) scale = 0.1;
  if (scale < SMALL_SCALE) {
    const org = scale;
    scale = Math.fround(SMALL_SCALE);
    if (min === 0) max = Math.fround(scale * (qmax - qmin));
    else if (max === 0) min = Math.fround(-scale * (qmax - qmin));
    else { const amp = Math.fround(scale / org); min = Math.fround(min * amp); max = Math.fround(max * amp); }
  }
  const fromMin = qmin - min / scale, fromMax = qmax - max / scale;
  const errMin = Math.abs(qmin) - Math.abs(min / scale), errMax = Math.abs(qmax) - Math.abs(max / scale);
  const initial = errMin < errMax ? fromMin : fromMax;
  const zeroPoint = initial < qmin ? qmin : initial > qmax ? qmax : nearbyint(initial);
  return { scale: Math.fround(scale), zeroPoint };
}

/** The quantization of `x` for one call: its range, its parameters, and the uint8 values. */
export function quantizeActivations(x: Float32Array, reduceRange: boolean): { q: Uint8Array; params: ActivationQParams } {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < x.length; i++) { const v = x[i]; if (v < lo) lo = v; if (v > hi) hi = v; }
  if (x.length === 0) lo = hi = 0;
  const params = chooseQParams(lo, hi, reduceRange);
  const inv = Math.fround(1 / params.scale), zp = params.zeroPoint;
  const q = new Uint8Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const t = Math.fround(x[i] * inv);
    // Adding and removing 1.5·2^52 rounds a double half to even, as nearbyint (|t| < 2^51 here;
    // larger values, and NaN, take the exact function and clamp below).
    const r = t > -2e15 && t < 2e15 ? (t + ROUNDER) - ROUNDER : nearbyint(t);
    const v = r + zp;
    q[i] = v > 0 ? (v < 255 ? v : 255) : 0;
  }
  return { q, params };
}

/**
 * acc[M,N] = Σ_k (xq[m,k] − zp)·w[n,k] in int32 (xq uint8 [M,K] row-major, w int8 [N,K]).
 * The reference of the `qgemm` primitive.
 */
export function qgemm(M: number, N: number, K: number, xq: Uint8Array, zp: number, w: Int8Array, acc: Int32Array): void {
  for (let m = 0; m < M; m++) {
    const xo = m * K;
    for (let n = 0; n < N; n++) {
      const wo = n * K;
      let s = 0;
      for (let k = 0; k < K; k++) s += (xq[xo + k] - zp) * w[wo + k];
      acc[m * N + n] = s | 0;
    }
    kernelTick(N * K);
  }
}

/**
 * The symmetric int8 quantization of a weight [N, K] (PyTorch's default observers: per tensor
 * scale = max|w|/127.5, or per output channel), zero point 0: values round(w/scale) clamped.
 */
export function quantizeWeight(w: Float32Array, N: number, K: number, perChannel: boolean): { q: Int8Array; scale: Float32Array } {
  const scale = new Float32Array(perChannel ? N : 1);
  const groups = perChannel ? N : 1, size = perChannel ? K : N * K;
  for (let g = 0; g < groups; g++) {
    let lo = 0, hi = 0;
    for (let i = g * size; i < (g + 1) * size; i++) { if (w[i] < lo) lo = w[i]; if (w[i] > hi) hi = w[i]; }
    // MinMaxObserver, symmetric qint8: max(−min, max) / ((qmax − qmin)/2), at least float eps.
    const s = Math.fround(Math.max(-lo, hi) / Math.fround(255 / 2));
    scale[g] = Math.max(s, Math.fround(1.1920928955078125e-7));
  }
  const q = new Int8Array(N * K);
  for (let i = 0; i < N * K; i++) {
    const s = scale[perChannel ? Math.floor(i / K) : 0];
    const v = nearbyint(Math.fround(w[i] * Math.fround(1 / s)));
    q[i] = v < -128 ? -128 : v > 127 ? 127 : v;
  }
  return { q, scale };
}

/**
 * y[m,n] = float32(acc[m,n])·(s_x·s_w[n]) + bias[n] in float32 (fbgemm's ReQuantizeForFloat);
 * `wScale` has one element (per tensor) or N (per channel).
 */
export function requantizeToFloat(acc: Int32Array, M: number, N: number, xScale: number, wScale: Float32Array, bias: Float32Array | null, out: Float32Array): void {
  if (wScale.length === 1) {
    const s = Math.fround(xScale * wScale[0]);
    for (let m = 0, o = 0; m < M; m++) {
      if (bias) for (let n = 0; n < N; n++, o++) out[o] = Math.fround(Math.fround(acc[o]) * s) + bias[n];
      else for (let n = 0; n < N; n++, o++) out[o] = Math.fround(acc[o]) * s;
    }
    return;
  }
  const scales = new Float32Array(N);
  for (let n = 0; n < N; n++) scales[n] = Math.fround(xScale * wScale[n]);
  for (let m = 0, o = 0; m < M; m++) {
    for (let n = 0; n < N; n++, o++) {
      const y = Math.fround(Math.fround(acc[o]) * scales[n]);
      out[o] = bias ? y + bias[n] : y;
    }
  }
}

/**
 * The whole of quantized_linear on row-major arrays, the reference of the `quantizedLinear`
 * primitive: x float32 [M,K] quantized over its range (one scale for the call), int32 sums with
 * w int8 [N,K], out float32 [M,N] = requantized sums + bias, then relu when asked (PyTorch's
 * quantized::linear_relu_dynamic; the relu op's bit rule, so fusing it changes no bit).
 */
export function quantizedLinear(M: number, N: number, K: number, x: Float32Array, reduceRange: boolean, w: Int8Array, wScale: Float32Array, bias: Float32Array | null, out: Float32Array, relu = false): void {
  const { q, params } = quantizeActivations(x.subarray(0, M * K), reduceRange);
  const acc = new Int32Array(M * N);
  qgemm(M, N, K, q, params.zeroPoint, w, acc);
  requantizeToFloat(acc, M, N, params.scale, wScale, bias, out);
  if (relu) applyGemmEpilogue(M, N, out, 0, N, { relu });
}
