// A dynamically quantized model through the compiler: jit.trace and jit.script record
// `quantized_linear` nodes reading i8 weights, optimizeForInference keeps them, the .tsgraph
// stores the weights as int8 (a Linear-heavy model's file is ≥ 3.5× smaller) and the relu fused
// into the quantized_linear before it, and the runtime's
// CPU device (WebAssembly primitives) and WebGPU device (Dawn/SwiftShader; the dot4I8Packed
// variant where the platform has the language feature) give eager's numbers.

import { describe, expect, it } from 'vitest';
import { load, createModel, createWebGpuDevice, findGpu } from '@kiln/runtime';
import { GraphBuilder, tensorType, walkNodes, verifyGraph, getOp, quantizeActivations, type CpuTensor } from '@kiln/ir-spec';
import { generateWgsl } from '@kiln/compiler';
import { jit, manualSeed, nn, noGrad, quantization, randn, Tensor } from 'kiln';

class Mlp extends nn.Module {
  fc1 = new nn.Linear(784, 512);
  fc2 = new nn.Linear(512, 512);
  fc3 = new nn.Linear(512, 10);
  forward(x: Tensor): Tensor { return this.fc3.forward(this.fc2.forward(this.fc1.forward(x).relu()).relu()); }
}

class Tagger extends nn.Module {
  lstm = new nn.LSTM(8, 16, { batchFirst: true });
  head = new nn.Linear(16, 4);
  forward(x: Tensor): Tensor { return this.head.forward(this.lstm.forward(x)[0]); }
}

function expectEqualish(got: { data: ArrayLike<number>; shape: readonly number[] }, want: Tensor, tol = 1e-5): void {
  expect([...got.shape]).toEqual([...want.shape]);
  const a = got.data, b = want.toArray();
  let worst = 0;
  for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  expect(worst).toBeLessThanOrEqual(tol);
}

const ops = (g: { body: Parameters<typeof walkNodes>[0] }) => [...walkNodes(g.body)].map((n) => n.op);

describe('quantized models through the compiler', () => {
  it('trace → optimizeForInference → .tsgraph: i8 weights, ≥ 3.5× smaller file, CPU and WebGPU runs = eager', async () => {
    manualSeed(21);
    const float = new Mlp().eval();
    const q = quantization.quantizeDynamic(float, { layers: [nn.Linear] });
    const x = randn([3, 784]);
    const traced = jit.trace(q, [x], { dynamicAxes: { 0: { 0: 'N' } } });
    expect(ops(traced.graph).filter((o) => o === 'quantized_linear')).toHaveLength(3);
    expect(traced.graph.toString()).toMatch(/i8\[512,784\]/);
    const fast = jit.optimizeForInference(traced);
    expect(verifyGraph(fast.graph)).toBeUndefined();
    expect(ops(fast.graph).filter((o) => o === 'quantized_linear')).toHaveLength(3);
    // fuse-epilogue folds each relu into the quantized_linear before it (linear_relu_dynamic).
    expect(ops(fast.graph)).not.toContain('relu');
    expect([...walkNodes(fast.graph.body)].filter((n) => n.op === 'quantized_linear').map((n) => n.attrs.relu)).toEqual([true, true, false]);
    const bytes = fast.toBytes();
    const floatBytes = jit.optimizeForInference(jit.trace(float, [x], { dynamicAxes: { 0: { 0: 'N' } } })).toBytes();
    expect(floatBytes.length / bytes.length).toBeGreaterThanOrEqual(3.5);
    const file = await load(bytes, { backend: 'cpu' });
    const gpu = await load(bytes, { backend: 'webgpu' });
    for (const xi of [x, randn([1, 784]), randn([5, 784])]) {
      const want = noGrad(() => q.forward(xi));
      // The fused relu applies the relu op's bit rule: the CPU runs equal eager bit for bit.
      expectEqualish((await file.run([xi]))[0], want, 0);
      expectEqualish(fast.forward(xi) as Tensor, want, 0);
      // WebGPU (Dawn/SwiftShader) derives the activation scale in f32: within one output step.
      expectEqualish((await gpu.run([xi]))[0], want, 1e-3);
    }
  });

  it('script of a model with a quantized LSTM and Linear runs as eager', async () => {
    manualSeed(5);
    const q = quantization.quantizeDynamic(new Tagger().eval(), { qscheme: 'per_channel' });
    expect(q.lstm).toBeInstanceOf(quantization.DynamicQuantizedLSTM);
    const x = randn([2, 6, 8]);
    const scripted = jit.script(q, { inputs: [x] });
    const want = noGrad(() => q.forward(x));
    expectEqualish(scripted.forward(x) as Tensor, want);
    expect(ops(scripted.graph)).toContain('quantized_linear');
    expect(scripted.graph.toString()).toMatch(/i8\[64,8\]/);
    const file = await load(scripted.toBytes(), { backend: 'cpu' });
    expectEqualish((await file.run([x]))[0], want);
  });

  it('WebGPU: with packed_4x8_integer_dot_product the dot4I8Packed variant runs (K % 4 = 0, reduceRange), and equals the CPU exactly, fused relu included', async () => {
    const gpuHasDot4 = new Set((await findGpu() as { wgslLanguageFeatures?: Iterable<string> }).wgslLanguageFeatures ?? []).has('packed_4x8_integer_dot_product');
    const b = new GraphBuilder('qlinear');
    const x = b.input('x', tensorType('float32', [2, 96]));
    const w = b.param('w', { dtype: 'int8', shape: [40, 96], data: Int8Array.from({ length: 40 * 96 }, (_, i) => ((i * 71 + 5) % 256) - 128) });
    const s = b.param('s', { dtype: 'float32', shape: [40], data: Float32Array.from({ length: 40 }, (_, i) => 0.001 * (i + 1)) });
    b.output('y', b.op1('quantized_linear', [x, w, s, null], { reduceRange: true, relu: true }));
    const g = b.build();
    const input = { data: Float32Array.from({ length: 192 }, (_, i) => Math.sin(i * 0.7) * 3), shape: [2, 96], dtype: 'float32' as const };
    const [want] = createModel(g).runSync([input]);
    const { kernels } = generateWgsl(g);
    expect(kernels[0].packed?.layout).toBe('int8x4');
    const device = await createWebGpuDevice({ kernels });
    const [got] = await createModel(g, { device }).run([input]);
    expect(device.stats.packs).toBe(gpuHasDot4 ? 1 : 0);
    expect(Array.from(got.data)).toEqual(Array.from(want.data));
    device.destroy();
  });

  it('quantized_linear refuses a float weight with a clear error', () => {
    const x: CpuTensor = { data: new Float32Array(4), shape: [1, 4], dtype: 'float32' };
    const w: CpuTensor = { data: new Float32Array(8), shape: [2, 4], dtype: 'float32' };
    const s: CpuTensor = { data: new Float32Array(1), shape: [1], dtype: 'float32' };
    expect(() => getOp('quantized_linear').cpu([x, w, s, null], { reduceRange: true })).toThrow(/weight must be int8, got float32 \(quantize the layer with quantization.quantizeDynamic\)/);
    expect(quantizeActivations(new Float32Array([0, 0]), true).params.scale).toBeCloseTo(0.1);
  });
});
