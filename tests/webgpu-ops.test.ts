// Every registry op with a WGSL kernel runs on WebGPU (Dawn; on CI machines SwiftShader's Vulkan
// driver) and matches the op's CPU kernel: a table of small cases, each a one-node graph run on
// both backends. The table must cover every op in the codegen table, and the ops with no WGSL
// are listed explicitly, so adding an op without a kernel (or a kernel without a case) fails.
// No adapter is a failure, not a skip: .ci/run installs the software stack.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { GraphBuilder, allOps, elementwiseOps, isViewOp, tensorType, type DType, type TypedArray } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice, nodesWithoutKernels, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl, KERNELS } from '../compiler/src/codegen/index.js';
import { fusedFrom, type Instructions } from './helpers/fused.js';


/** Registry ops with no WGSL kernel (they run on the CPU backend only). */
const WITHOUT_WGSL: string[] = ['normal', 'uniform']; // random ops draw from the host generator

type In = { shape: number[]; dtype?: DType; kind?: 'pos' | 'int' | 'bool' | 'false' | 'small' | 'index' | 'special'; max?: number } | null;
/** `body`: a fused_elementwise's element body as instructions (tests/helpers/fused.ts). */
interface Case { op: string; inputs: In[]; attrs?: Record<string, unknown>; body?: Instructions; tol?: number }

const f = (...shape: number[]): In => ({ shape });
const pos = (...shape: number[]): In => ({ shape, kind: 'pos' });
const int = (...shape: number[]): In => ({ shape, dtype: 'int32', kind: 'int' });
const bool = (...shape: number[]): In => ({ shape, dtype: 'bool', kind: 'bool' });
const none = (...shape: number[]): In => ({ shape, dtype: 'bool', kind: 'false' });
const i8 = (...shape: number[]): In => ({ shape, dtype: 'int8' });

/** Attribute-free one-input elementwise entries taking any real input (log/sqrt/rsqrt need positive ones below). */
const attrFree = (d: { attrs: { safeParse(v: unknown): { success: boolean; data?: unknown } } }) => {
  const a = d.attrs.safeParse({});
  return a.success && Object.keys(a.data as object).length === 0;
};
const unary = elementwiseOps().filter((d) => d.inputs.length === 1 && attrFree(d))
  .map((d) => d.name).filter((op) => !['log', 'sqrt', 'rsqrt', 'logical_not'].includes(op));
const binary = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge'];
const pool = { kernel_size: [3, 3], stride: [2, 2], padding: [1, 1] };

const CASES: Case[] = [
  ...unary.map((op) => ({ op, inputs: [f(3, 5, 7)] })),
  ...binary.map((op) => ({ op, inputs: [f(2, 3, 5), f(3, 1)] })),
  { op: 'add', inputs: [int(4, 3), int(3)] },
  { op: 'mul', inputs: [f(4, 3), int(4, 1)] },
  { op: 'div', inputs: [int(5), int(1)] },
  { op: 'pow', inputs: [pos(2, 6), f(6)] },
  { op: 'pow', inputs: [f(2, 6), { shape: [1], kind: 'small' }] },
  { op: 'log', inputs: [pos(4, 9)] },
  { op: 'sqrt', inputs: [pos(4, 9)] },
  { op: 'rsqrt', inputs: [pos(4, 9)] },
  { op: 'abs', inputs: [int(11)] },
  { op: 'logical_not', inputs: [int(3, 4)] },
  { op: 'logical_not', inputs: [bool(3, 4)] },
  { op: 'clamp', inputs: [f(5, 6)], attrs: { min: -0.5, max: 0.25 } },
  { op: 'clamp', inputs: [f(5, 6)], attrs: { min: null, max: 0.1 } },
  { op: 'where', inputs: [bool(4, 1), f(4, 5), f(5)] },
  { op: 'cast', inputs: [f(3, 7)], attrs: { dtype: 'int32' } },
  { op: 'cast', inputs: [f(3, 7)], attrs: { dtype: 'bool' } },
  { op: 'cast', inputs: [bool(9)], attrs: { dtype: 'float32' } },
  { op: 'sum', inputs: [f(4, 5, 6)], attrs: { dim: [0, 2], keepdim: false }, tol: 1e-4 },
  { op: 'sum', inputs: [f(3, 300)], attrs: { dim: -1, keepdim: true }, tol: 1e-4 },
  { op: 'sum', inputs: [bool(5, 7)], attrs: { dim: null } },
  { op: 'prod', inputs: [pos(6, 5)], attrs: { dim: 1 }, tol: 1e-4 },
  { op: 'amax', inputs: [f(4, 5, 6)], attrs: { dim: 1, keepdim: false } },
  { op: 'amin', inputs: [f(4, 5, 6)], attrs: { dim: [1, 2], keepdim: true } },
  { op: 'matmul', inputs: [f(37, 21), f(21, 45)], tol: 1e-4 },
  { op: 'matmul', inputs: [f(2, 1, 5, 19), f(3, 19, 6)], tol: 1e-4 },
  { op: 'matmul', inputs: [f(19), f(2, 19, 6)], tol: 1e-4 },
  { op: 'matmul', inputs: [f(4, 19), f(19)], tol: 1e-4 },
  { op: 'linear', inputs: [f(5, 40), f(33, 40), f(33)], tol: 1e-4 },
  { op: 'linear', inputs: [f(2, 3, 8), f(6, 8), null], tol: 1e-4 },
  // Four rows or fewer: the few-rows (matrix-vector) variant of the same kernel record.
  { op: 'linear', inputs: [f(2, 70), f(9, 70), f(9)], tol: 1e-4 },
  { op: 'linear', inputs: [f(40), f(5, 40), null], tol: 1e-4 },
  { op: 'conv2d', inputs: [f(2, 3, 9, 8), f(6, 3, 3, 3), f(6)], attrs: { padding: [1, 1, 1, 1] }, tol: 1e-4 },
  { op: 'conv2d', inputs: [f(1, 4, 10, 10), f(6, 2, 3, 2), null], attrs: { stride: [2, 1], padding: [0, 1, 0, 1], dilation: [1, 2], groups: 2 }, tol: 1e-4 },
  { op: 'max_pool2d', inputs: [f(2, 3, 9, 8)], attrs: pool },
  { op: 'max_pool2d', inputs: [f(1, 2, 8, 8)], attrs: { kernel_size: [2, 2], stride: [2, 2] } },
  { op: 'max_pool2d', inputs: [f(1, 2, 9, 9)], attrs: { kernel_size: [2, 3], stride: [2, 2], dilation: [2, 1], ceil_mode: true } },
  { op: 'adaptive_max_pool2d', inputs: [f(2, 3, 7, 9)], attrs: { output_size: [3, 4] } },
  { op: 'avg_pool2d', inputs: [f(2, 3, 9, 8)], attrs: pool, tol: 1e-4 },
  { op: 'avg_pool2d', inputs: [f(2, 3, 9, 8)], attrs: { ...pool, count_include_pad: false, ceil_mode: true }, tol: 1e-4 },
  { op: 'avg_pool2d', inputs: [f(1, 1, 6, 6)], attrs: { kernel_size: [2, 2], stride: [2, 2], divisor_override: 3 }, tol: 1e-4 },
  { op: 'adaptive_avg_pool2d', inputs: [f(2, 3, 7, 9)], attrs: { output_size: [3, 4] }, tol: 1e-4 },
  { op: 'batch_norm', inputs: [f(2, 3, 4, 5), f(3), pos(3), f(3), f(3)], attrs: { eps: 1e-5 }, tol: 1e-4 },
  { op: 'batch_norm', inputs: [f(4, 3), f(3), pos(3), null, null], tol: 1e-4 },
  { op: 'fused_elementwise', inputs: [f(2, 3, 4), f(4), f(3, 1)], body: [['mul', 'x0', 2], ['add', 't0', 'x1'], ['tanh', 't1'], ['maximum', 't2', 'x2'], ['sigmoid', 't3'], ['sub', 't4', 0.5], ['relu', 't5']] },
  { op: 'fused_elementwise', inputs: [pos(5, 6)], body: [['sqrt', 'x0'], ['log', 't0'], ['exp', 't1'], ['rsqrt', 't2'], ['pow', 't3', 2.5], ['div', 1, 't4'], ['neg', 't5'], ['abs', 't6'], ['sin', 't7'], ['cos', 't8'], ['minimum', 't9', 0.3]] },
  { op: 'fused_conv2d', inputs: [f(2, 3, 9, 8), f(6, 3, 3, 3), f(6)], attrs: { padding: [1, 1, 1, 1], activation: 'relu', pool: { kernel_size: [2, 2], stride: [2, 2] } }, tol: 1e-4 },
  { op: 'fused_conv2d', inputs: [f(1, 4, 10, 10), f(6, 2, 3, 2), null], attrs: { stride: [2, 1], groups: 2, activation: 'tanh' }, tol: 1e-4 },
  { op: 'fused_conv2d', inputs: [f(1, 3, 7, 7), f(5, 3, 3, 3), f(5)], attrs: { activation: 'sigmoid', pool: { kernel_size: [3, 2], stride: [2, 2] } }, tol: 1e-4 },
  { op: 'conv2d', inputs: [f(2, 5, 13, 11), f(40, 5, 3, 3), f(40)], attrs: { stride: [1, 2], dilation: [2, 1], padding: [2, 0, 1, 1] }, tol: 1e-4 },
  { op: 'fused_conv2d', inputs: [f(2, 5, 12, 11), f(37, 5, 3, 3), f(37)], attrs: { padding: [1, 1, 1, 1], activation: 'none', pool: { kernel_size: [1, 2], stride: [1, 2] } }, tol: 1e-4 },
  { op: 'expand', inputs: [f(3, 1)], attrs: { shape: [2, 3, 4] } },
  { op: 'permute', inputs: [f(2, 3, 4, 5)], attrs: { dims: [2, 0, 3, 1] } },
  { op: 'flip', inputs: [int(3, 4, 5)], attrs: { dims: [0, -1] } },
  { op: 'slice', inputs: [f(4, 9, 3)], attrs: { dim: 1, start: -7, end: 8, step: 3 } },
  { op: 'slice', inputs: [f(6, 2)], attrs: { dim: 0, start: null, end: 4, step: 1 } },
  { op: 'tril', inputs: [f(2, 4, 5)], attrs: { diagonal: 1 } },
  { op: 'triu', inputs: [int(5, 4)], attrs: { diagonal: -1 } },
  { op: 'index_select', inputs: [f(4, 5, 3), { shape: [7], dtype: 'int32', kind: 'index', max: 5 }], attrs: { dim: 1 } },
  { op: 'gather', inputs: [f(4, 5), { shape: [4, 3], dtype: 'int32', kind: 'index', max: 5 }], attrs: { dim: 1 } },
  { op: 'cat', inputs: [f(2, 3, 4), f(2, 1, 4), f(2, 5, 4)], attrs: { dim: 1 } },
  { op: 'cat', inputs: [int(3), f(2)], attrs: { dim: 0 } },
  { op: 'argmax', inputs: [f(4, 6, 5)], attrs: { dim: 1, keepdim: false } },
  { op: 'argmin', inputs: [f(4, 6, 5)], attrs: { dim: -1, keepdim: true } },
  { op: 'argmax', inputs: [f(3, 7)], attrs: { dim: null } },
  { op: 'cumsum', inputs: [f(3, 6, 4)], attrs: { dim: 1 } },
  { op: 'cumsum', inputs: [bool(2, 9)], attrs: { dim: -1 } },
  ...['isnan', 'isfinite', 'floor', 'ceil', 'round', 'trunc', 'log1p', 'expm1'].map((op) => ({ op, inputs: [{ shape: [4, 10], kind: 'special' as const }] })),
  { op: 'sort', inputs: [{ shape: [2, 20], kind: 'special' }], attrs: { dim: 1, descending: true } },
  // Values on a 1/8 grid plus 1e-3 noise: near-ties; the int case has exact ties (stable order).
  { op: 'sort', inputs: [f(3, 7, 4)], attrs: { dim: 1, descending: false } },
  { op: 'sort', inputs: [int(5, 9)], attrs: { dim: -1, descending: true } },
  { op: 'sort', inputs: [int(4, 6)], attrs: { dim: 0, descending: false } },
  { op: 'slice_backward', inputs: [f(4, 2, 3)], attrs: { shape: [4, 9, 3], dim: 1, start: -7, end: 8, step: 3 } },
  { op: 'conv_transpose2d', inputs: [f(2, 4, 5, 4), f(4, 3, 3, 2), f(6)], attrs: { stride: [2, 3], padding: [1, 0, 1, 0], dilation: [1, 2], groups: 2, output_padding: [1, 0] }, tol: 1e-4 },
  { op: 'conv_transpose2d', inputs: [f(1, 3, 4, 4), f(3, 5, 2, 2), null], attrs: { stride: [2, 2] }, tol: 1e-4 },
  { op: 'batch_norm_stats', inputs: [f(3, 4, 5, 6)], tol: 1e-4 },
  { op: 'batch_norm_stats', inputs: [f(70, 2)], tol: 1e-4 },
  { op: 'batch_norm_backward', inputs: [f(3, 4, 5, 6), f(3, 4, 5, 6), f(4), pos(4), f(4)], attrs: { eps: 1e-5 }, tol: 1e-4 },
  { op: 'batch_norm_backward', inputs: [f(70, 2), f(70, 2), f(2), pos(2), null], tol: 1e-4 },
  // With both weight and relu_output it binds 9 storage buffers, over WebGPU's default 8 (it runs on the CPU only).
  { op: 'batch_norm_backward', inputs: [f(3, 4, 5, 6), f(3, 4, 5, 6), f(4), pos(4), null, f(3, 4, 5, 6)], tol: 1e-4 },
  { op: 'index_add', inputs: [f(4, 5, 3), { shape: [7], dtype: 'int32', kind: 'index', max: 5 }, f(4, 7, 3)], attrs: { dim: 1 } },
  { op: 'scatter_add', inputs: [f(4, 5), { shape: [3, 6], dtype: 'int32', kind: 'index', max: 5 }, f(3, 7)], attrs: { dim: 1 } },
  // 3·70 positions: several 64-wide chunks of the scan; the mask broadcasts over the rows.
  { op: 'masked_scatter', inputs: [f(3, 70), bool(70), f(300)] },
  { op: 'masked_scatter', inputs: [int(2, 1, 5), bool(4, 5), int(40)] },
  // masked_select: its length is read back before the dispatch (its entry's dataDims hook, read by the executor).
  { op: 'masked_select', inputs: [f(3, 70), bool(70)] },
  { op: 'masked_select', inputs: [int(3, 1), bool(2, 1, 5)] },
  { op: 'masked_select', inputs: [f(4, 5), none(4, 5)] },
  { op: 'masked_select', inputs: [f(2, 3), bool()] },
  { op: 'avg_pool2d_backward', inputs: [f(2, 3, 5, 4)], attrs: { ...pool, input_size: [9, 8] }, tol: 1e-4 },
  { op: 'avg_pool2d_backward', inputs: [f(2, 3, 5, 4)], attrs: { ...pool, count_include_pad: false, input_size: [9, 8] }, tol: 1e-4 },
  { op: 'avg_pool2d_backward', inputs: [f(1, 1, 3, 3)], attrs: { kernel_size: [2, 2], stride: [2, 2], divisor_override: 3, input_size: [6, 6] }, tol: 1e-4 },
  { op: 'adaptive_avg_pool2d_backward', inputs: [f(2, 3, 3, 4)], attrs: { input_size: [7, 9] }, tol: 1e-4 },
  { op: 'conv2d_weight_grad', inputs: [f(2, 3, 9, 8), f(2, 6, 9, 8)], attrs: { padding: [1, 1, 1, 1], kernel_size: [3, 3] }, tol: 1e-4 },
  { op: 'conv2d_weight_grad', inputs: [f(2, 4, 10, 10), f(2, 6, 4, 10)], attrs: { stride: [2, 1], padding: [0, 1, 0, 1], dilation: [1, 2], groups: 2, kernel_size: [3, 2] }, tol: 1e-4 },
  { op: 'fused_linear', inputs: [f(5, 40), f(33, 40), f(33)], attrs: { activation: 'relu' }, tol: 1e-4 },
  { op: 'fused_linear', inputs: [f(3, 8), f(6, 8), null], attrs: { activation: 'sigmoid' }, tol: 1e-4 },
  // Odd K: weight rows straddle the packed words; reduceRange false reaches codes up to 255.
  { op: 'quantized_linear', inputs: [f(3, 37), i8(10, 37), pos(1), f(10)], attrs: { reduceRange: true }, tol: 1e-5 },
  { op: 'quantized_linear', inputs: [f(2, 2, 64), i8(70, 64), pos(70), null], attrs: { reduceRange: false }, tol: 1e-5 },
  { op: 'quantized_linear', inputs: [f(1, 784), i8(130, 784), pos(130), f(130)], attrs: { reduceRange: true }, tol: 1e-5 },
];

/** Non-finite values, signed zeros, halves (round to even) and values near the log1p/expm1 cut-overs. */
const SPECIAL = [NaN, Infinity, -Infinity, 0, -0, 0.5, 1.5, 2.5, -0.5, -1.5, 3e38, -3e38, 1e-8, -1e-8, -1, -0.999, 0.49, -0.51, 20, -20];

let seed = 1;
function rand(): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

function data(i: NonNullable<In>): TypedArray {
  const n = i.shape.reduce((a, d) => a * d, 1);
  const dtype = i.dtype ?? 'float32';
  if (i.kind === 'false') return new Uint8Array(n);
  if (dtype === 'bool') return Uint8Array.from({ length: n }, () => (rand() < 0.5 ? 1 : 0));
  if (i.kind === 'index') return Int32Array.from({ length: n }, () => Math.floor(rand() * i.max!));
  if (dtype === 'int32') return Int32Array.from({ length: n }, () => Math.floor(rand() * 9) - 4);
  if (dtype === 'int8') return Int8Array.from({ length: n }, () => Math.floor(rand() * 256) - 128);
  if (i.kind === 'pos') return Float32Array.from({ length: n }, () => 0.1 + rand() * 2);
  if (i.kind === 'small') return Float32Array.from({ length: n }, () => 3);
  if (i.kind === 'special') return Float32Array.from({ length: n }, (_, k) => SPECIAL[k % SPECIAL.length]);
  // Values on a grid of 1/8 make ties (maximum, comparisons, pooling) common but exact.
  return Float32Array.from({ length: n }, () => Math.round((rand() * 4 - 2) * 8) / 8 + rand() * 1e-3);
}

/**
 * quantized_linear's budget: WGSL has no f64, so the kernel divides by the activation scale in
 * f32 and an input lying on a rounding boundary may quantize one step apart from the CPU's
 * (PyTorch's double) arithmetic, moving each output by s_x·s_w·w of that input's weight.
 */
function oneQuantStep(inputs: { data: TypedArray }[], attrs: Record<string, unknown>): number {
  const [x, , scale] = inputs.map((t) => Array.from(t.data));
  const range = Math.max(0, ...x) - Math.min(0, ...x);
  return (range / (attrs.reduceRange ? 127 : 255)) * Math.max(...scale) * 128;
}

function expectClose(got: TypedArray, want: TypedArray, tol: number, what: string, atol = 0): void {
  expect(got.length, what).toBe(want.length);
  for (let k = 0; k < want.length; k++) {
    const a = got[k], b = want[k];
    if (Number.isNaN(b)) { expect(Number.isNaN(a), `${what}[${k}]: got ${a}, want NaN`).toBe(true); continue; }
    const ok = Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)) + atol;
    if (!ok) expect(a, `${what}[${k}]`).toBe(b);
  }
}

let device: WebGpuDevice;
beforeAll(async () => { device = await createWebGpuDevice(); });
afterAll(() => device?.destroy());

describe('WGSL kernels on WebGPU match the CPU kernels', () => {
  it('has a case for every op with a kernel, and lists every op without one', () => {
    const covered = new Set(CASES.map((c) => c.op));
    expect(Object.keys(KERNELS).filter((op) => !covered.has(op))).toEqual([]);
    const none = allOps().map((d) => d.name).filter((op) => !(op in KERNELS) && !isViewOp(op)).sort();
    expect(none).toEqual([...WITHOUT_WGSL].sort());
  });

  for (const [k, c] of CASES.entries()) {
    const label = `${c.op} ${c.inputs.map((i) => (i ? `${i.dtype ?? 'float32'}[${i.shape}]` : 'null')).join(', ')} ${JSON.stringify(c.body ?? c.attrs ?? {})}`;
    it(label, async () => {
      seed = k + 1;
      const b = new GraphBuilder(c.op);
      const values = c.inputs.map((i, j) => (i ? { v: b.input(`x${j}`, tensorType(i.dtype ?? 'float32', i.shape)), t: { data: data(i), shape: i.shape, dtype: i.dtype ?? 'float32' } } : null));
      const outs = c.body ? [fusedFrom(b, values.map((x) => x!.v), c.body)] : b.op(c.op, values.map((x) => x?.v ?? null), c.attrs ?? {});
      outs.forEach((o, j) => b.output(`y${j}`, o));
      const graph = b.build();
      const inputs = values.flatMap((x) => (x ? [x.t] : []));
      const want = createModel(graph).runSync(inputs);
      const { kernels, unsupported } = generateWgsl(graph);
      expect(unsupported).toEqual([]);
      await device.addKernels(kernels);
      const got = await createModel(graph, { device }).run(inputs);
      got.forEach((g, j) => {
        expect(g.shape).toEqual(want[j].shape);
        expect(g.dtype).toBe(want[j].dtype);
        expectClose(g.data, want[j].data, c.tol ?? 1e-5, `${c.op} output ${j}`, c.op === 'quantized_linear' ? oneQuantStep(inputs, c.attrs!) : 0);
      });
    });
  }
});

describe('masked_select on WebGPU: the count is read back before the dispatch', () => {
  /** y = masked_select(x, mask); s = sum(relu(y)) — the selected length flows into later ops. */
  function selectSum(xShape: number[], maskShape: number[]) {
    const b = new GraphBuilder('select_sum');
    const x = b.input('x', tensorType('float32', xShape));
    const m = b.input('mask', tensorType('bool', maskShape));
    const y = b.op1('masked_select', [x, m]);
    b.output('y', y);
    b.output('s', b.op1('sum', [b.op1('relu', [y])], { dim: null }));
    return b.build();
  }

  it('matches PyTorch\'s golden input[mask] (index_bool_mask)', async () => {
    const file = JSON.parse(readFileSync(new URL('./golden/ops/indexing.json', import.meta.url), 'utf8')) as { cases: { name: string; inputs: { shape: number[]; data: number[] }[]; output: { shape: number[]; data: number[] } }[] };
    const c = file.cases.find((k) => k.name === 'index_bool_mask')!;
    const [x, mask] = c.inputs;
    const b = new GraphBuilder('golden');
    b.output('y', b.op1('masked_select', [b.input('x', tensorType('float32', x.shape)), b.input('mask', tensorType('bool', mask.shape))]));
    const graph = b.build();
    const { kernels } = generateWgsl(graph);
    await device.addKernels(kernels);
    const [y] = await createModel(graph, { device }).run([
      { data: Float32Array.from(x.data), shape: x.shape, dtype: 'float32' },
      { data: Uint8Array.from(mask.data), shape: mask.shape, dtype: 'bool' },
    ]);
    expect(y.shape).toEqual(c.output.shape);
    expectClose(y.data, Float32Array.from(c.output.data), 1e-6, 'index_bool_mask');
  });

  it('feeds later ops, equal to the CPU runtime, with one kernel for every count (none, some, all)', async () => {
    const graph = selectSum([3, 1, 70], [2, 70]);
    const { kernels, unsupported } = generateWgsl(graph);
    expect(unsupported).toEqual([]);
    expect(nodesWithoutKernels(graph, kernels)).toEqual([]);
    await device.addKernels(kernels);
    const model = createModel(graph, { device });
    const counts: number[] = [];
    for (const [k, p] of [0, 0.3, 1].entries()) {
      seed = 100 + k;
      const inputs = [
        { data: data(f(3, 1, 70)!), shape: [3, 1, 70], dtype: 'float32' as const },
        { data: Uint8Array.from({ length: 140 }, () => (rand() < p ? 1 : 0)), shape: [2, 70], dtype: 'bool' as const },
      ];
      const want = createModel(graph).runSync(inputs);
      const got = await model.run(inputs);
      expect(got[0].shape).toEqual(want[0].shape);
      expectClose(got[0].data, want[0].data, 0, 'masked_select');
      expectClose(got[1].data, want[1].data, 1e-5, 'sum(relu(masked_select))');
      counts.push(got[0].shape[0]);
    }
    expect(counts[0]).toBe(0);
    expect(counts[2]).toBe(3 * 2 * 70);
  });

  it('a dispatch without the count names the missing dim', () => {
    const x = device.alloc('float32', [4]), m = device.alloc('bool', [4]);
    expect(() => device.dispatch('masked_select', [x, m], {})).toThrow(/data-dependent dim 'nnz'.*not given/);
    device.free(x.buffer);
    device.free(m.buffer);
  });
});
