// The optimizers' fused steps on WebGPU: one hand-written WGSL kernel per parameter update,
// recorded like any eager op (nothing waits). Invariant: each kernel is the same per-element
// arithmetic as the CPU loop it replaces (sgd.ts, ir-spec's adamStep), in float32; the host
// computes the per-step constants (bias corrections, 1 − β) once in double precision.

import { numel } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { deviceTensor, gpuStorage, webGpuDevice } from '../device.js';

/**
 * Zeros for optimizer state in a new GPU buffer: state made at the first step lives as long as the
 * optimizer, so it must not take the cached buffers that the next step's temporaries will need
 * (with them the second step would create buffers again).
 */
export function stateZerosGpu(shape: readonly number[], values?: Float32Array): Tensor {
  const dev = webGpuDevice();
  const dt = dev.alloc('float32', shape, { fresh: true });
  dev.upload(dt, values ?? new Float32Array(numel(shape)));
  return new Tensor(gpuStorage(dt.buffer), shape, 'float32');
}

/** WGSL of a kernel over `n` elements: uniform `s` (fields), storage arrays, and the per-element body. */
function kernel(fields: readonly string[], arrays: readonly [name: string, writable: boolean][], body: string): string {
  const struct = `struct Params {\n${fields.map((f) => `  ${f}: f32,`).join('\n')}\n  n: u32,\n}`;
  const decls = arrays.map(([name, w], i) => `@group(0) @binding(${i + 1}) var<storage, ${w ? 'read_write' : 'read'}> ${name}: array<f32>;`).join('\n');
  return `${struct}
@group(0) @binding(0) var<uniform> s: Params;
${decls}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = (wg.y * nw.x + wg.x) * 64u + li;
  if (i >= s.n) { return; }
${body}
}
`;
}

/** Float fields then n (u32) in one uniform block. */
function params(values: readonly number[], n: number): ArrayBuffer {
  const buf = new ArrayBuffer((values.length + 1) * 4);
  new Float32Array(buf, 0, values.length).set(values);
  new Uint32Array(buf, values.length * 4, 1)[0] = n;
  return buf;
}

const buffer = (t: Tensor) => deviceTensor(t).buffer;

const SGD_PLAIN = {
  key: 'optim.sgd_step',
  wgsl: kernel(['lr', 'sign', 'wd'], [['p', true], ['g', false]], '  p[i] = p[i] - s.lr * (s.sign * g[i] + s.wd * p[i]);'),
};
const SGD_MOMENTUM = {
  key: 'optim.sgd_momentum_step',
  wgsl: kernel(['lr', 'sign', 'wd', 'momentum', 'dampening', 'nesterov', 'first'], [['p', true], ['g', false], ['buf', true]], `  let gi = s.sign * g[i] + s.wd * p[i];
  var b = gi;
  if (s.first == 0.0) { b = s.momentum * buf[i] + (1.0 - s.dampening) * gi; }
  buf[i] = b;
  var d = b;
  if (s.nesterov != 0.0) { d = gi + s.momentum * b; }
  p[i] = p[i] - s.lr * d;`),
};

export interface SgdScalars { lr: number; sign: number; wd: number; momentum: number; dampening: number; nesterov: boolean }

/** One SGD update of `p` (torch.optim.SGD); returns the momentum buffer (made at the first step). */
export function sgdStepGpu(p: Tensor, g: Tensor, buf: Tensor | null, o: SgdScalars): Tensor | null {
  const dev = webGpuDevice(), n = numel(p.shape);
  if (o.momentum === 0) {
    dev.runKernel(SGD_PLAIN, [buffer(p), buffer(g)], params([o.lr, o.sign, o.wd], n), n);
    return null;
  }
  const first = buf === null;
  const b = buf ?? stateZerosGpu(p.shape);
  dev.runKernel(SGD_MOMENTUM, [buffer(p), buffer(g), buffer(b)],
    params([o.lr, o.sign, o.wd, o.momentum, o.dampening, o.nesterov ? 1 : 0, first ? 1 : 0], n), n);
  return b;
}

const ADAM_BODY = (amsgrad: boolean) => `  var pi = p[i] * s.shrink;
  let gi = s.sign * g[i] + s.l2 * pi;
  let mi = s.beta1 * m[i] + s.oneMinusBeta1 * gi;
  let vi = s.beta2 * v[i] + s.oneMinusBeta2 * gi * gi;
  m[i] = mi;
  v[i] = vi;
  var vh = vi;
${amsgrad ? '  if (vmax[i] > vh) { vh = vmax[i]; } else { vmax[i] = vh; }\n' : ''}  p[i] = pi - (s.stepSize * mi) / (sqrt(vh) / s.bc2Sqrt + s.eps);`;
const ADAM_FIELDS = ['shrink', 'sign', 'l2', 'beta1', 'oneMinusBeta1', 'beta2', 'oneMinusBeta2', 'stepSize', 'bc2Sqrt', 'eps'];
const ADAM = {
  key: 'optim.adam_step',
  wgsl: kernel(ADAM_FIELDS, [['p', true], ['g', false], ['m', true], ['v', true]], ADAM_BODY(false)),
};
const ADAM_AMSGRAD = {
  key: 'optim.adam_amsgrad_step',
  wgsl: kernel(ADAM_FIELDS, [['p', true], ['g', false], ['m', true], ['v', true], ['vmax', true]], ADAM_BODY(true)),
};

export interface AdamScalars { shrink: number; sign: number; l2: number; beta1: number; beta2: number; stepSize: number; bc2Sqrt: number; eps: number }

/** One Adam/AdamW update of `p`, `m`, `v` (and `vmax` under amsgrad), in one kernel. */
export function adamStepGpu(p: Tensor, g: Tensor, m: Tensor, v: Tensor, vmax: Tensor | null, o: AdamScalars): void {
  const n = numel(p.shape);
  const values = [o.shrink, o.sign, o.l2, o.beta1, 1 - o.beta1, o.beta2, 1 - o.beta2, o.stepSize, o.bc2Sqrt, o.eps];
  const buffers = [buffer(p), buffer(g), buffer(m), buffer(v), ...(vmax ? [buffer(vmax)] : [])];
  webGpuDevice().runKernel(vmax ? ADAM_AMSGRAD : ADAM, buffers, params(values, n), n);
}

const ADAGRAD = {
  key: 'optim.adagrad_step',
  wgsl: kernel(['clr', 'sign', 'wd', 'eps'], [['p', true], ['g', false], ['sum', true]], `  let gi = s.sign * g[i] + s.wd * p[i];
  let si = sum[i] + gi * gi;
  sum[i] = si;
  p[i] = p[i] - (s.clr * gi) / (sqrt(si) + s.eps);`),
};

export interface AdagradScalars { clr: number; sign: number; wd: number; eps: number }

/** One Adagrad update of `p` and its running `sum` of squared gradients (torch.optim.Adagrad). */
export function adagradStepGpu(p: Tensor, g: Tensor, sum: Tensor, o: AdagradScalars): void {
  const n = numel(p.shape);
  webGpuDevice().runKernel(ADAGRAD, [buffer(p), buffer(g), buffer(sum)], params([o.clr, o.sign, o.wd, o.eps], n), n);
}

/** The RMSprop kernel for one combination of momentum and centered (each binds its own buffers). */
function rmspropKernel(momentum: boolean, centered: boolean): { key: string; wgsl: string } {
  const arrays: [string, boolean][] = [['p', true], ['g', false], ['sq', true]];
  if (momentum) arrays.push(['buf', true]);
  if (centered) arrays.push(['ga', true]);
  const body = `  let gi = s.sign * g[i] + s.wd * p[i];
  let si = s.alpha * sq[i] + (1.0 - s.alpha) * gi * gi;
  sq[i] = si;
${centered ? `  let ai = s.alpha * ga[i] + (1.0 - s.alpha) * gi;
  ga[i] = ai;
  let avg = sqrt(si - ai * ai) + s.eps;` : '  let avg = sqrt(si) + s.eps;'}
${momentum ? `  let bi = s.momentum * buf[i] + gi / avg;
  buf[i] = bi;
  p[i] = p[i] - s.lr * bi;` : '  p[i] = p[i] - (s.lr * gi) / avg;'}`;
  return { key: `optim.rmsprop_step${momentum ? '_momentum' : ''}${centered ? '_centered' : ''}`, wgsl: kernel(['lr', 'sign', 'wd', 'alpha', 'eps', 'momentum'], arrays, body) };
}
const RMSPROP = [false, true].flatMap((m) => [false, true].map((c) => rmspropKernel(m, c)));

export interface RmspropScalars { lr: number; sign: number; wd: number; alpha: number; eps: number; momentum: number }

/** One RMSprop update of `p`, `squareAvg` (and `momentumBuffer`, `gradAvg` when given; torch.optim.RMSprop). */
export function rmspropStepGpu(p: Tensor, g: Tensor, squareAvg: Tensor, momentumBuffer: Tensor | null, gradAvg: Tensor | null, o: RmspropScalars): void {
  const n = numel(p.shape);
  const k = RMSPROP[(momentumBuffer ? 2 : 0) + (gradAvg ? 1 : 0)];
  const buffers = [buffer(p), buffer(g), buffer(squareAvg), ...(momentumBuffer ? [buffer(momentumBuffer)] : []), ...(gradAvg ? [buffer(gradAvg)] : [])];
  webGpuDevice().runKernel(k, buffers, params([o.lr, o.sign, o.wd, o.alpha, o.eps, o.momentum], n), n);
}

// GradScaler's unscale on the GPU (PyTorch's _amp_foreach_non_finite_check_and_unscale_): g *= inv
// in float32, and a flag word set when any result is inf or NaN (exponent bits all ones).
const UNSCALE = {
  key: 'amp.unscale_check',
  wgsl: `struct Params {
  inv: f32,
  n: u32,
}
@group(0) @binding(0) var<uniform> s: Params;
@group(0) @binding(1) var<storage, read_write> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> found: array<atomic<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = (wg.y * nw.x + wg.x) * 64u + li;
  if (i >= s.n) { return; }
  let v = g[i] * s.inv;
  g[i] = v;
  if ((bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u) { atomicStore(&found[0], 1u); }
}
`,
};

/**
 * Multiplies every gradient by `inv` in place on the GPU and resolves whether any result is
 * inf/NaN: one flag for all of them, so the whole check costs one read.
 */
export async function unscaleGpu(grads: readonly Tensor[], inv: number): Promise<boolean> {
  const dev = webGpuDevice();
  const flag = dev.alloc('int32', [1]);
  dev.upload(flag, new Int32Array(1));
  for (const g of grads) {
    const n = numel(g.shape);
    dev.runKernel(UNSCALE, [buffer(g), flag.buffer], params([inv], n), n);
  }
  try {
    return (await dev.read(flag))[0] !== 0;
  } finally {
    dev.free(flag.buffer);
  }
}
