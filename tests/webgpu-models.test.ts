// Whole graphs on WebGPU (Dawn; SwiftShader on CI) equal the CPU runtime: the fixture graphs
// (CNN, loop, if, tuples) stored as `.tsgraph` files WITH their WGSL and loaded by the runtime
// alone; a CNN traced with jit.trace from an eager kiln model; `if`/`loop` whose conditions are
// tensors read back from the GPU; a dispatch too large for one grid dimension; 3×3 convs running
// the Winograd F(4×4, 3×3) variant over weights the device packs at load (once per constant; per
// dispatch for a weight that is a graph input), the packer against the host transform, and a
// file written before issue 14 (hi/lo packed weights) with its own kernels. Also: what the
// WebGPU device reports when a kernel does not compile or is missing (backend choice:
// tests/backend-choice.test.ts).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { GraphBuilder, decodeTsgraph, encodeTsgraph, fused, scalarType, tensorType, type Graph, type TypedArray } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice, load, RuntimeError, splitGrid, type InputValue, type Output, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';
import { LEVELS, runPipeline } from '../compiler/src/pipeline.js';
import { jit, manualSeed, nn, noGrad, randn } from 'kiln';
import { GRAPHS, weights } from './fixtures/tsgraph-graphs.js';
import { PACKERS } from '../runtime/src/webgpu/packers.js';
import type { KernelRecord } from '@kiln/runtime';
import { ResearchModel, seedInputShape } from '../examples/seed/models.mjs';


function expectClose(got: readonly Output[], want: readonly Output[], tol: number): void {
  expect(got.map((o) => [o.name, o.shape, o.dtype])).toEqual(want.map((o) => [o.name, o.shape, o.dtype]));
  got.forEach((g, i) => {
    const w = want[i].data;
    for (let k = 0; k < w.length; k++) {
      if (!(Math.abs(g.data[k] - w[k]) <= tol * Math.max(1, Math.abs(w[k])))) expect(g.data[k], `${g.name}[${k}]`).toBe(w[k]);
    }
  });
}

/** Kernel records with a Winograd variant over a device-packed weight. */
function winogradKernels(kernels: readonly KernelRecord[]): number {
  return kernels.filter((k) => k.packed?.layout === 'winograd4x4').length;
}

function fill(shape: number[], salt: number): Float32Array {
  const n = shape.reduce((a, d) => a * d, 1);
  return Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + salt) * 2);
}

/** Inputs for a fixture graph at batch `n`. */
const INPUTS: Record<string, (n: number) => InputValue[]> = {
  cnn: (n) => [{ data: fill([n, 3, 8, 8], n), shape: [n, 3, 8, 8], dtype: 'float32' }],
  loop: (n) => [{ data: fill([4], n), shape: [4], dtype: 'float32' }, n + 2],
  branch: (n) => [{ data: fill([2, 3], n), shape: [2, 3], dtype: 'float32' }, n % 2 === 0],
  tuples: (n) => [{ data: fill([n, 2 * n], n), shape: [n, 2 * n], dtype: 'float32' }],
};

function withKernels(g: Graph): Uint8Array {
  const { kernels, unsupported } = generateWgsl(g);
  expect(unsupported).toEqual([]);
  return encodeTsgraph(g, { kernels });
}

let device: WebGpuDevice;
beforeAll(async () => { device = await createWebGpuDevice(); });
afterAll(() => device?.destroy());

describe('graphs on WebGPU equal the CPU runtime', () => {
  for (const [name, build] of Object.entries(GRAPHS)) {
    it(`fixture '${name}' from a .tsgraph with its WGSL, at batch 1 and 3`, async () => {
      const bytes = withKernels(build());
      const cpu = await load(bytes, { backend: 'cpu' });
      const gpu = await load(bytes, { backend: 'webgpu' });
      expect(gpu.backend).toBe('webgpu');
      for (const n of [1, 3]) expectClose(await gpu.run(INPUTS[name](n)), await cpu.run(INPUTS[name](n)), 1e-4);
    });
  }

  it('a CNN traced with jit.trace runs on WebGPU equal to CPU and eager, at batch 1 and 4', async () => {
    manualSeed(7);
    const model = new nn.Sequential(
      new nn.Conv2d(3, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(), new nn.MaxPool2d(2),
      new nn.Conv2d(8, 6, 3, { padding: 1 }), new nn.ReLU(), new nn.AvgPool2d(2),
      new nn.Flatten(), new nn.Linear(6 * 2 * 2, 10), new nn.Sigmoid(),
    );
    model.eval();
    const traced = jit.trace(model, [randn([2, 3, 8, 8])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    const { kernels } = generateWgsl(traced.graph);
    await device.addKernels(kernels);
    const gpu = createModel(traced.graph, { device });
    const cpu = createModel(traced.graph);
    for (const n of [1, 4]) {
      const x = randn([n, 3, 8, 8]);
      const input: InputValue = { data: x.data as TypedArray, shape: [...x.shape], dtype: 'float32' };
      const got = await gpu.run([input]);
      expectClose(got, cpu.runSync([input]), 1e-4);
      const eager = noGrad(() => model.forward(x));
      expectClose(got, [{ ...got[0], data: eager.data as TypedArray }], 1e-4);
    }
  });

  it('the traced CNN at -O0 (one kernel per op) and -O2 (fused) gives the same numbers on WebGPU, -O2 in fewer dispatches', async () => {
    manualSeed(11);
    const model = new nn.Sequential(
      new nn.Conv2d(3, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(), new nn.MaxPool2d(2),
      new nn.Conv2d(8, 8, 3, { padding: 1 }), new nn.ReLU(), new nn.MaxPool2d(2),
      new nn.Flatten(), new nn.Linear(8 * 2 * 2, 16), new nn.ReLU(), new nn.Linear(16, 10),
    );
    model.eval();
    const traced = jit.trace(model, [randn([2, 3, 8, 8])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    const x = randn([3, 3, 8, 8]);
    const input: InputValue[] = [{ data: x.data as TypedArray, shape: [...x.shape], dtype: 'float32' }];
    const want = createModel(traced.graph).runSync(input);
    const dispatches: number[] = [];
    // -O2 with every pass; the 3×3 convs run the Winograd variant at both levels.
    for (const passes of [LEVELS[0], LEVELS[2]]) {
      const { graph } = runPipeline(traced.graph, { passes });
      const { kernels, unsupported } = generateWgsl(graph);
      expect(unsupported).toEqual([]);
      const dev = await createWebGpuDevice({ kernels });
      try {
        expectClose(await createModel(graph, { device: dev }).run(input), want, 1e-4);
        dispatches.push(dev.stats.dispatches);
      } finally {
        dev.destroy();
      }
    }
    expect(dispatches[1]).toBeLessThan(dispatches[0]);
  });

  it('the seed ResearchModel (eval) on WebGPU equals the CPU at -O0 and full -O2 (Winograd convs), batch 2', async () => {
    manualSeed(3);
    const model = new ResearchModel();
    model.eval();
    const traced = jit.trace(model, [randn(seedInputShape(1))], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    const x = randn(seedInputShape(2));
    const input: InputValue[] = [{ data: x.data as TypedArray, shape: [...x.shape], dtype: 'float32' }];
    const want = createModel(traced.graph).runSync(input);
    for (const passes of [LEVELS[0], LEVELS[2]]) {
      const { graph } = runPipeline(traced.graph, { passes });
      const { kernels, unsupported } = generateWgsl(graph);
      expect(unsupported).toEqual([]);
      // The two convs share one key (one record) at -O0, and may at -O2.
      expect(winogradKernels(kernels)).toBeGreaterThanOrEqual(1);
      const dev = await createWebGpuDevice({ kernels });
      try {
        expectClose(await createModel(graph, { device: dev }).run(input), want, 1e-4);
        // Both conv weights were packed on the device, once: the graph keeps them OIHW.
        expect(dev.stats.packs).toBe(2);
        expect([...graph.tensors.values()].some((t) => t.shape[1] === 36)).toBe(false);
      } finally {
        dev.destroy();
      }
    }
  });

  it('3×3 convs on the Winograd F(4×4, 3×3) variant equal the CPU: padding, ragged tiles, bias, pools, odd channel counts; weights packed once', async () => {
    manualSeed(5);
    // 7×7 with padding 0 leaves a 5×5 output: partial 4×4 tiles, and a 2×2 pool that drops a row.
    const model = new nn.Sequential(
      new nn.Conv2d(3, 6, 3, { padding: 1 }), new nn.BatchNorm2d(6), new nn.ReLU(), new nn.MaxPool2d(2),
      new nn.Conv2d(6, 20, 3), new nn.Sigmoid(),
      new nn.Conv2d(20, 5, 3, { padding: 1, bias: false }), new nn.MaxPool2d(2),
      new nn.Flatten(), new nn.Linear(5 * 2 * 2, 3),
    );
    model.eval();
    const traced = jit.trace(model, [randn([1, 3, 14, 14])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    const { graph } = runPipeline(traced.graph, { level: 2 });
    const { kernels, unsupported } = generateWgsl(graph);
    expect(unsupported).toEqual([]);
    expect(winogradKernels(kernels)).toBe(3);
    await device.addKernels(kernels);
    const gpu = createModel(graph, { device });
    const packs = device.stats.packs;
    for (const n of [1, 3]) {
      // Realistic magnitudes: inputs of scale 4 put the conv outputs in the tens.
      const x = randn([n, 3, 14, 14]);
      const input: InputValue[] = [{ data: (x.data as Float32Array).map((v) => 4 * v), shape: [n, 3, 14, 14], dtype: 'float32' }];
      expectClose(await gpu.run(input), createModel(graph).runSync(input), 1e-4);
      expectClose(await gpu.run(input), createModel(traced.graph).runSync(input), 1e-4);
    }
    // Three constants packed at their first use, then served from the device's cache.
    expect(device.stats.packs - packs).toBe(3);
    expect(device.stats.packedBytes).toBeGreaterThanOrEqual(4 * 36 * (6 * 3 + 20 * 6 + 5 * 20));
  });

  it('packs a conv weight that is a graph input on every dispatch (nothing kept), equal to the CPU', async () => {
    const b = new GraphBuilder('conv_input_weight');
    const x = b.input('x', tensorType('float32', [2, 5, 9, 7])), w = b.input('w', tensorType('float32', [6, 5, 3, 3]));
    b.output('y', b.op1('fused_conv2d', [x, w, null], { padding: [1, 1, 1, 1], activation: 'tanh', pool: null }));
    const g = b.build();
    const { kernels } = generateWgsl(g);
    expect(winogradKernels(kernels)).toBe(1);
    await device.addKernels(kernels);
    const gpu = createModel(g, { device });
    const packs = device.stats.packs, kept = device.stats.packedBytes;
    for (const salt of [1, 2]) {
      const input: InputValue[] = [{ data: fill([2, 5, 9, 7], salt), shape: [2, 5, 9, 7], dtype: 'float32' }, { data: fill([6, 5, 3, 3], salt + 5), shape: [6, 5, 3, 3], dtype: 'float32' }];
      expectClose(await gpu.run(input), createModel(g).runSync(input), 1e-4);
    }
    expect(device.stats.packs - packs).toBe(2);
    expect(device.stats.packedBytes).toBe(kept);
  });

  it('runs the main kernel for a weight the variant cannot take (one key, a 3×3 and a 1×1 weight), compiled at its first use', async () => {
    const b = new GraphBuilder('two_kernel_sizes');
    const x = b.input('x', tensorType('float32', ['N', 4, 6, 6]));
    const conv = { padding: [1, 1, 1, 1] };
    const y = b.op1('conv2d', [x, b.constant('w3', weights([4, 4, 3, 3], 1)), null], conv);
    b.output('y', b.op1('conv2d', [y, b.constant('w1', weights([5, 4, 1, 1], 2)), null], conv));
    const g = b.build();
    const { kernels } = generateWgsl(g);
    expect(kernels).toHaveLength(1);
    const dev = await createWebGpuDevice({ kernels });
    try {
      const compiled = dev.stats.kernelsCreated;
      const input: InputValue[] = [{ data: fill([2, 4, 6, 6], 9), shape: [2, 4, 6, 6], dtype: 'float32' }];
      expectClose(await createModel(g, { device: dev }).run(input), createModel(g).runSync(input), 1e-4);
      expect(dev.stats.packs).toBe(1);
      expect(dev.stats.kernelsCreated).toBe(compiled + 1);
    } finally {
      dev.destroy();
    }
  });

  it("the winograd4x4 packer computes the host transform's tiles (ir-spec winograd4Weights)", async () => {
    const [Cout, C] = [7, 5];
    const w = fill([Cout, C, 3, 3], 3);
    const p = PACKERS.get('winograd4x4')!;
    expect(p.accepts([Cout, C, 3, 3])).toBe(true);
    expect(p.accepts([Cout, C, 5, 5])).toBe(false);
    const gpu = device.gpu;
    const module = gpu.createShaderModule({ code: p.wgsl });
    const pipeline = await gpu.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    const buf = (bytes: number, usage: number) => gpu.createBuffer({ size: bytes, usage });
    const src = buf(w.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
    const n = Cout * 36 * C, dst = buf(n * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC), read = buf(n * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    const uni = buf(16, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    gpu.queue.writeBuffer(src, 0, w);
    gpu.queue.writeBuffer(uni, 0, new Uint32Array([p.items([Cout, C, 3, 3]), 1, ...p.params([Cout, C, 3, 3])]));
    const enc = gpu.createCommandEncoder(), pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, gpu.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [uni, src, dst].map((b, i) => ({ binding: i, resource: { buffer: b } })) }));
    pass.dispatchWorkgroups(Math.ceil(Cout * C / 64));
    pass.end();
    enc.copyBufferToBuffer(dst, 0, read, 0, n * 4);
    gpu.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const got = new Float32Array(read.getMappedRange().slice(0));
    for (const b of [src, dst, read, uni]) b.destroy();
    expect(p.shape([Cout, C, 3, 3])).toEqual([Cout, 36, C]);
    const want = fused.winograd4Weights(w, Cout, C);
    for (let i = 0; i < n; i++) {
      if (!(Math.abs(got[i] - want[i]) <= 1e-6 * (1 + Math.abs(want[i])))) expect(got[i], `U[${i}]`).toBe(want[i]);
    }
  });

  it('runs a file written before issue 14 (hi/lo packed weights) with the kernels stored in it', async () => {
    const bytes = new Uint8Array(readFileSync(new URL('./fixtures/winograd-legacy.tsgraph', import.meta.url)));
    const { graph, header } = decodeTsgraph(bytes);
    const dev = await createWebGpuDevice({ kernels: header.kernels });
    try {
      const gpu = createModel(graph, { device: dev });
      const input: InputValue[] = [{ data: fill([2, 3, 6, 6], 4), shape: [2, 3, 6, 6], dtype: 'float32' }];
      // The CPU unpacks the same file's weights; both equal the convs over the OIHW weights.
      const want = createModel(graph).runSync(input);
      expectClose(await gpu.run(input), want, 1e-4);
      expect(dev.stats.packs).toBe(0);
      expect(Array.from(fused.winograd4Unpack(graph.tensors.get('conv.weight_winograd4x4')!.data as Float32Array, 4, 3))).toEqual(Array.from(weights([4, 3, 3, 3], 1).data));
    } finally {
      dev.destroy();
    }
  });

  it('if and loop whose conditions are GPU tensors, read back each time', async () => {
    const b = new GraphBuilder('cond');
    const x = b.input('x', tensorType('float32', ['N', 5]));
    const positive = b.op1('gt', [b.op1('sum', [x]), b.literal(0)]);
    const [y] = b.if(positive, () => [b.op1('relu', [x])], () => [b.op1('neg', [x])]);
    const [z] = b.loop(b.scalar(20), b.scalar(true, 'bool'), [y], (_i, [v]) => {
      const next = b.op1('mul', [v, b.literal(1.5)]);
      const more = b.op1('lt', [b.op1('amax', [next]), b.literal(10)]);
      return { next: [next], continue: b.op1('item', [more]) };
    });
    b.output('z', z);
    const g = b.build();
    const bytes = withKernels(g);
    const gpu = await load(bytes, { backend: 'webgpu' });
    const cpu = await load(bytes, { backend: 'cpu' });
    for (const sign of [1, -1]) {
      const input: InputValue[] = [{ data: fill([3, 5], 1).map((v) => sign * (Math.abs(v) + 0.1)), shape: [3, 5], dtype: 'float32' }];
      expectClose(await gpu.run(input), await cpu.run(input), 1e-5);
    }
  });

  it('serves a symbolic expand shape with one kernel at every batch size', async () => {
    const b = new GraphBuilder('sym');
    const x = b.input('x', tensorType('float32', ['N', 1]));
    b.output('y', b.op1('mul', [b.op1('expand', [x], { shape: ['N', 4] }), b.literal(3)]));
    const g = b.build();
    const { kernels, unsupported } = generateWgsl(g);
    expect(unsupported).toEqual([]);
    const gpu = await load(encodeTsgraph(g, { kernels }), { backend: 'webgpu' });
    for (const n of [1, 5]) {
      const input: InputValue[] = [{ data: fill([n, 1], n), shape: [n, 1], dtype: 'float32' }];
      expectClose(await gpu.run(input), createModel(g).runSync(input), 1e-6);
    }
  });

  it('splits a dispatch over more workgroups than one grid dimension allows into a 2-D grid', async () => {
    expect(splitGrid(70_000, 65_535)).toEqual([35_000, 2]);
    const b = new GraphBuilder('wide');
    const x = b.input('x', tensorType('float32', [66_000, 2]));
    b.output('s', b.op1('sum', [x], { dim: 1 }));
    const g = b.build();
    await device.addKernels(generateWgsl(g).kernels);
    const input: InputValue[] = [{ data: fill([66_000, 2], 0), shape: [66_000, 2], dtype: 'float32' }];
    expectClose(await createModel(g, { device }).run(input), createModel(g).runSync(input), 1e-5);
  });
});

describe('the WebGPU device', () => {
  it('reports a shader that does not compile with the kernel name and the WGSL line', async () => {
    const b = new GraphBuilder('bad');
    b.output('y', b.op1('relu', [b.input('x', tensorType('float32', [4]))]));
    const [k] = generateWgsl(b.build()).kernels;
    const broken = { ...k, wgsl: k.wgsl.replace('out0[i] =', 'out0[i] = undefined_thing +') };
    const line = broken.wgsl.split('\n').findIndex((l) => l.includes('undefined_thing')) + 1;
    const err = await device.addKernels([broken]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RuntimeError);
    expect(String(err)).toContain(`WGSL kernel '${k.name}'`);
    expect(String(err)).toContain(`line ${line}:`);
    expect(String(err)).toContain('undefined_thing');
  });

  it('names the missing kernel key when a graph has no WGSL for a node', async () => {
    const b = new GraphBuilder('nokernel');
    b.output('y', b.op1('exp', [b.input('x', tensorType('float32', [2, 2, 2]))]));
    const model = createModel(b.build(), { device });
    const err = await model.run([{ data: new Float32Array(8), shape: [2, 2, 2], dtype: 'float32' }]).catch((e: unknown) => e);
    expect(String(err)).toMatch(/no WGSL kernel with key exp\(f32r3\)\{\}/);
  });

  it('times every dispatch per kernel with timestamp queries (profile: true)', async () => {
    const dev = await createWebGpuDevice({ profile: true });
    try {
      const g = GRAPHS.cnn();
      const { kernels } = generateWgsl(g);
      await dev.addKernels(kernels);
      const model = createModel(g, { device: dev });
      await model.run(INPUTS.cnn(2));
      await model.run(INPUTS.cnn(1));
      const times = await dev.profile({ reset: true });
      // The conv's weight (a pinned param) was packed once for its Winograd variant: a timed dispatch too.
      expect(times.map((t) => t.name).sort()).toEqual([...kernels.map((k) => k.name), 'pack_winograd4x4'].sort());
      expect(dev.stats.packs).toBe(1);
      expect(times.reduce((a, t) => a + t.calls, 0)).toBe(dev.stats.dispatches + dev.stats.packs);
      for (const t of times) expect(t.ms).toBeGreaterThanOrEqual(0);
      expect(times.reduce((a, t) => a + t.ms, 0)).toBeGreaterThan(0);
      expect(await dev.profile()).toEqual([]);
    } finally {
      dev.destroy();
    }
    await expect(device.profile()).rejects.toThrow(/profile: true/);
  });

  it('serves a repeated run of a planned (-O2) graph from pooled buffers: no GPU buffer is created, inputs included', async () => {
    manualSeed(13);
    const model = new nn.Sequential(new nn.Conv2d(3, 8, 3, { padding: 1 }), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(8 * 4 * 4, 5), new nn.Sigmoid());
    model.eval();
    const traced = jit.trace(model, [randn([2, 3, 8, 8])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    const { graph } = runPipeline(traced.graph, { level: 2 });
    expect(graph.metadata['kiln.memory_plan']).toBeDefined();
    const dev = await createWebGpuDevice({ kernels: generateWgsl(graph).kernels });
    try {
      const gpu = createModel(graph, { device: dev }), cpu = createModel(graph);
      const input = INPUTS.cnn(3);
      await gpu.run(input);
      const created = dev.stats.buffersCreated;
      expect(created).toBeGreaterThan(0);
      expectClose(await gpu.run(input), cpu.runSync(input), 1e-4);
      expect(dev.stats.buffersCreated).toBe(created);
    } finally {
      dev.destroy();
    }
  });

  it('runs a model with one submit per read and counts dispatches and compiled kernels', async () => {
    const dev = await createWebGpuDevice();
    try {
      const g = GRAPHS.cnn();
      const { kernels } = generateWgsl(g);
      await dev.addKernels(kernels);
      await dev.addKernels(kernels); // cached: nothing compiles twice
      // Each record's variants (few rows, packed weight) and the one packer they need compile too.
      const packed = kernels.filter((k) => k.packed);
      expect(packed.length).toBeGreaterThan(0);
      // A record with a packed variant compiles its main kernel only when a weight the variant cannot take arrives.
      expect(dev.stats.kernelsCreated).toBe(kernels.length + kernels.filter((k) => k.fewRows).length + 1);
      const model = createModel(g, { device: dev });
      const before = { ...dev.stats };
      await model.run(INPUTS.cnn(2));
      const outputs = model.outputs.length;
      expect(dev.stats.submits - before.submits).toBe(outputs);
      expect(dev.stats.dispatches - before.dispatches).toBeGreaterThanOrEqual(kernels.length);
    } finally {
      dev.destroy();
    }
  });
});
