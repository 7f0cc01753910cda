// Out-of-range index values agree across backends (issue 17 finding 7): the CPU kernels of
// index_select, gather, index_add and scatter_add throw a NODE RuntimeError for an index outside
// [0, size); their WGSL kernels report it through the runtime's index-error buffer and the
// WebGPU device throws the same error (same code, the CPU's message) at the next read. A model
// that failed runs again cleanly with good indices (the buffers are cleared), and a stored kernel
// may declare that buffer at group 1 but nothing else there. Real Dawn (SwiftShader on CI).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTsgraph, GraphBuilder, tensorType, type DType, type Graph } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice, INDEX_ERROR_DECL, load, RuntimeError, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';

interface T { data: Float32Array | Int32Array; shape: number[]; dtype: DType }
const f32 = (shape: number[]): T => ({ data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => ((i * 7) % 11) - 5), shape, dtype: 'float32' });
const i32 = (shape: number[], values: number[]): T => ({ data: Int32Array.from(values), shape, dtype: 'int32' });

/** One node of `op` over inputs shaped like `ts`, as a graph with the node's results as outputs. */
function oneNode(op: string, ts: T[], attrs: Record<string, unknown>): Graph {
  const b = new GraphBuilder(op);
  const ins = ts.map((t, j) => b.input(`x${j}`, tensorType(t.dtype, t.shape)));
  b.op(op, ins, attrs).forEach((o, j) => b.output(`y${j}`, o));
  return b.build();
}

async function failure(p: Promise<unknown> | (() => unknown)): Promise<RuntimeError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(RuntimeError);
    return e as RuntimeError;
  }
  throw new Error('expected a RuntimeError');
}

let device: WebGpuDevice;
beforeAll(async () => { device = await createWebGpuDevice(); });
afterAll(() => device?.destroy());

// [op, inputs with good indices, the same with a bad index, attrs, the CPU's message]
const CASES: [string, T[], T[], Record<string, unknown>, RegExp][] = [
  ['index_select', [f32([4, 5, 3]), i32([3], [0, 4, 2])], [f32([4, 5, 3]), i32([3], [0, 5, 2])], { dim: 1 }, /index_select: index 5 is out of range for dim 1 of size 5 \(valid indices are 0\.\.4\)/],
  ['index_select', [f32([4, 5]), i32([2], [3, 1])], [f32([4, 5]), i32([2], [-1, 1])], { dim: 0 }, /index_select: index -1 is out of range for dim 0 of size 4/],
  ['gather', [f32([4, 5]), i32([4, 2], [0, 1, 2, 3, 4, 0, 1, 2])], [f32([4, 5]), i32([4, 2], [0, 1, 2, 3, 4, 0, 9, 2])], { dim: 1 }, /gather: index 9 is out of range for dim 1 of size 5/],
  ['index_add', [f32([4, 5, 3]), i32([2], [1, 4]), f32([4, 2, 3])], [f32([4, 5, 3]), i32([2], [1, 7]), f32([4, 2, 3])], { dim: 1 }, /index_add: index 7 is out of range for dim 1 of size 5/],
  ['scatter_add', [f32([4, 5]), i32([2, 3], [0, 1, 4, 2, 3, 3]), f32([2, 3])], [f32([4, 5]), i32([2, 3], [0, 1, 4, 2, -3, 3]), f32([2, 3])], { dim: 1 }, /scatter_add: index -3 is out of range for dim 1 of size 5/],
];

describe('an out-of-range index fails on WebGPU as on the CPU', () => {
  for (const [op, good, bad, attrs, message] of CASES) {
    it(`${op} ${JSON.stringify(attrs)}, bad index ${Array.from(bad[1].data).join(',')}`, async () => {
      const graph = oneNode(op, good, attrs);
      const cpu = createModel(graph);
      const { kernels, unsupported } = generateWgsl(graph);
      expect(unsupported).toEqual([]);
      expect(kernels[0].wgsl).toContain(INDEX_ERROR_DECL);
      await device.addKernels(kernels);
      const gpu = createModel(graph, { device });

      const want = cpu.runSync(good);
      expect(Array.from((await gpu.run(good))[0].data)).toEqual(Array.from(want[0].data));

      const onCpu = await failure(() => cpu.runSync(bad));
      const onGpu = await failure(gpu.run(bad));
      expect(onCpu.code).toBe('NODE');
      expect(onGpu.code).toBe('NODE');
      expect(onCpu.message).toMatch(message);
      expect(onGpu.message).toMatch(message);

      // The error buffers were read and cleared: the same model runs good indices again.
      expect(Array.from((await gpu.run(good))[0].data)).toEqual(Array.from(want[0].data));
    });
  }

  it('a bad index deep in a graph surfaces at the output read, naming the first bad value', async () => {
    const b = new GraphBuilder('embed');
    const table = b.input('table', tensorType('float32', [6, 4]));
    const ids = b.input('ids', tensorType('int32', [5]));
    const rows = b.op1('index_select', [table, ids], { dim: 0 });
    b.output('y', b.op1('sum', [b.op1('relu', [rows])], { dim: null }));
    const graph = b.build();
    await device.addKernels(generateWgsl(graph).kernels);
    const gpu = createModel(graph, { device });
    const e = await failure(gpu.run([f32([6, 4]), i32([5], [0, 1, 6, 2, 3])]));
    expect(e.code).toBe('NODE');
    expect(e.message).toMatch(/index_select: index 6 is out of range for dim 0 of size 6/);
    const [y] = await gpu.run([f32([6, 4]), i32([5], [0, 1, 5, 2, 3])]);
    expect(y.data[0]).toBeCloseTo(createModel(graph).runSync([f32([6, 4]), i32([5], [0, 1, 5, 2, 3])])[0].data[0], 5);
  });
});

describe('stored kernels: group 1 holds only the index-error buffer', () => {
  const graph = oneNode('gather', CASES[2][1], { dim: 1 });
  const withKernel = (edit: (w: string) => string) => {
    const kernels = generateWgsl(graph).kernels.map((k) => ({ ...k, wgsl: edit(k.wgsl) }));
    return encodeTsgraph(graph, { kernels });
  };

  it("the compiler's gather kernel loads", async () => {
    const m = await load(withKernel((w) => w), { backend: 'cpu' });
    expect((await m.run(CASES[2][1]))[0].shape).toEqual([4, 2]);
  });

  it('another buffer at group 1 is refused at load', async () => {
    for (const edit of [
      (w: string) => w.replace(INDEX_ERROR_DECL, '@group(1) @binding(0) var<storage, read_write> index_error: array<atomic<u32>, 64>;'),
      (w: string) => `${w}\n@group(1) @binding(1) var<storage, read_write> more: array<f32>;`,
      (w: string) => w.replace('var<storage, read_write> index_error', 'var<storage, read> index_error'),
    ]) {
      const e = await failure(load(withKernel(edit), { backend: 'cpu' }));
      expect(e.code).toBe('GRAPH');
      expect(e.message).toMatch(/declares a binding in group 1 other than the index-error buffer/);
    }
  });
});
