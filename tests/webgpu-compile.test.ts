// Pipeline compilation on WebGPU (Dawn; SwiftShader on CI): by default the device starts
// createComputePipelineAsync for every kernel of a file at load and awaits them together
// (`compile: 'parallel'`); `compile: 'serial'` builds them one by one with the synchronous
// createComputePipeline. Both give bit-identical outputs (the same WGSL), equal to the CPU; the
// first run after load compiles nothing; every pipeline's compile time is in
// `stats.compileTimes` (one entry per pipeline, named after its record and variant), and a
// deferred kernel compiled at its first use is marked so. A broken shader is reported with its
// WGSL line on both paths.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphBuilder, encodeTsgraph, tensorType, type Graph } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice, load, RuntimeError, type InputValue, type KernelRecord, type Output, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';
import { runPipeline } from '../compiler/src/pipeline.js';
import { jit, manualSeed, nn, randn } from 'kiln';
import { weights } from './fixtures/tsgraph-graphs.js';

function fill(shape: number[], salt: number): Float32Array {
  const n = shape.reduce((a, d) => a * d, 1);
  return Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + salt) * 2);
}

function expectClose(got: readonly Output[], want: readonly Output[], tol: number): void {
  expect(got.map((o) => [o.name, o.shape, o.dtype])).toEqual(want.map((o) => [o.name, o.shape, o.dtype]));
  got.forEach((g, i) => {
    const w = want[i].data;
    for (let k = 0; k < w.length; k++) {
      if (!(Math.abs(g.data[k] - w[k]) <= tol * Math.max(1, Math.abs(w[k])))) expect(g.data[k], `${g.name}[${k}]`).toBe(w[k]);
    }
  });
}

/** The pipeline names a device compiles for `kernels` at load: main (unless packed), few-rows and packed variants, packers. */
function pipelineNames(kernels: readonly KernelRecord[]): string[] {
  const names = kernels.flatMap((r) => [
    ...(r.packed ? [] : [r.name]),
    ...(r.fewRows ? [`${r.name}.few_rows`] : []),
    ...(r.packed ? [`${r.name}.${r.packed.layout}`] : []),
  ]);
  const layouts = [...new Set(kernels.flatMap((r) => (r.packed ? [r.packed.layout] : [])))];
  return [...names, ...layouts.map((l) => `pack_${l}`)].sort();
}

/**
 * A CNN whose -O2 kernels include a Winograd variant (its 3×3 conv), a few-rows variant (the
 * linears) and a packer. Small on purpose: SwiftShader takes seconds per Winograd pipeline.
 */
function cnnGraph(): Graph {
  manualSeed(11);
  const model = new nn.Sequential(
    new nn.Conv2d(3, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Flatten(), new nn.Linear(8 * 6 * 6, 10), new nn.Tanh(), new nn.Linear(10, 5),
  );
  model.eval();
  const traced = jit.trace(model, [randn([2, 3, 12, 12])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
  return runPipeline(traced.graph, { level: 2 }).graph;
}

const input = (n: number): InputValue[] => [{ data: fill([n, 3, 12, 12], n), shape: [n, 3, 12, 12], dtype: 'float32' }];

let graph: Graph;
let kernels: KernelRecord[];
let parallel: WebGpuDevice;
let serial: WebGpuDevice;
beforeAll(async () => {
  graph = cnnGraph();
  const gen = generateWgsl(graph);
  expect(gen.unsupported).toEqual([]);
  kernels = gen.kernels;
  parallel = await createWebGpuDevice({ kernels });
  serial = await createWebGpuDevice({ kernels, compile: 'serial' });
}, 600_000);
afterAll(() => { parallel?.destroy(); serial?.destroy(); });

describe('WebGPU pipelines compiled at load', () => {
  it('the test model has the variants the devices compile apart (Winograd, few rows)', () => {
    expect(kernels.some((k) => k.packed?.layout === 'winograd4x4')).toBe(true);
    expect(kernels.some((k) => k.fewRows)).toBe(true);
  });

  it('parallel (async, awaited together) and serial (synchronous, one by one) give bit-identical outputs, equal to the CPU, at batch 1 and 3', async () => {
    const a = createModel(graph, { device: parallel }), b = createModel(graph, { device: serial }), cpu = createModel(graph);
    for (const n of [1, 3]) {
      const [pa, sa] = [await a.run(input(n)), await b.run(input(n))];
      expect(pa.map((o) => Array.from(o.data))).toEqual(sa.map((o) => Array.from(o.data)));
      expectClose(pa, cpu.runSync(input(n)), 1e-4);
    }
  });

  it('both compile the same pipelines, each timed once in stats.compileTimes, and a run compiles nothing more', async () => {
    for (const dev of [parallel, serial]) {
      const load = dev.stats.compileTimes.filter((t) => t.when === 'load');
      expect(load.map((t) => t.name).sort()).toEqual(pipelineNames(kernels));
      expect(dev.stats.compileTimes).toHaveLength(dev.stats.kernelsCreated);
      for (const t of load) {
        expect(t.ms).toBeGreaterThanOrEqual(0);
        expect(t.ms).toBeLessThanOrEqual(dev.stats.compileMs);
        expect(kernels.some((k) => t.key === k.key || t.key.startsWith('pack '))).toBe(true);
      }
      const before = dev.stats.kernelsCreated;
      await createModel(graph, { device: dev }).run(input(2));
      expect(dev.stats.kernelsCreated).toBe(before);
    }
  });

  it('a file loaded with load() has compiled every kernel before its first run: the first run adds no pipeline', async () => {
    const model = await load(encodeTsgraph(graph, { kernels }), { backend: 'webgpu' });
    const dev = model.device as WebGpuDevice;
    const compiled = dev.stats.kernelsCreated;
    expect(dev.stats.compileTimes.map((t) => t.name).sort()).toEqual(pipelineNames(kernels));
    expectClose(await model.run(input(1)), createModel(graph).runSync(input(1)), 1e-4);
    expect(dev.stats.kernelsCreated).toBe(compiled);
    dev.destroy();
  }, 600_000);

  it("a packed record's main kernel, deferred at load, is timed as 'first-use' when a weight the variant cannot take needs it", async () => {
    const b = new GraphBuilder('two_kernel_sizes');
    const x = b.input('x', tensorType('float32', ['N', 4, 6, 6]));
    const conv = { padding: [1, 1, 1, 1] };
    const y = b.op1('conv2d', [x, b.constant('w3', weights([4, 4, 3, 3], 1)), null], conv);
    b.output('y', b.op1('conv2d', [y, b.constant('w1', weights([5, 4, 1, 1], 2)), null], conv));
    const g = b.build();
    const { kernels: ks } = generateWgsl(g);
    for (const dev of [parallel, serial]) {
      const seen = dev.stats.compileTimes.length;
      await dev.addKernels(ks);
      const added = () => dev.stats.compileTimes.slice(seen);
      expect(added().map((t) => t.when)).not.toContain('first-use');
      const inp: InputValue[] = [{ data: fill([2, 4, 6, 6], 9), shape: [2, 4, 6, 6], dtype: 'float32' }];
      expectClose(await createModel(g, { device: dev }).run(inp), createModel(g).runSync(inp), 1e-4);
      expect(added().filter((t) => t.when === 'first-use').map((t) => t.name)).toEqual([ks[0].name]);
      expect(dev.stats.compileTimes).toHaveLength(dev.stats.kernelsCreated);
    }
  }, 600_000);

  it('a shader that does not compile is reported with the kernel name and its WGSL line on both paths', async () => {
    const b = new GraphBuilder('bad');
    b.output('y', b.op1('relu', [b.input('x', tensorType('float32', [4]))]));
    const [k] = generateWgsl(b.build()).kernels;
    const broken = { ...k, wgsl: k.wgsl.replace('out0[i] =', 'out0[i] = undefined_thing +') };
    const line = broken.wgsl.split('\n').findIndex((l) => l.includes('undefined_thing')) + 1;
    for (const dev of [parallel, serial]) {
      const err = await dev.addKernels([broken]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RuntimeError);
      expect(String(err)).toContain(`WGSL kernel '${k.name}'`);
      expect(String(err)).toContain(`line ${line}:`);
      expect(dev.hasKernel(k.key)).toBe(false);
    }
  }, 180_000);
});
