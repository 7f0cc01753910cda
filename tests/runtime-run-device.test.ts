// Model.runDevice on the real WebGPU device (Dawn; SwiftShader on CI): a graph run on tensors that
// already live in GPU buffers, its results handed over as GPU buffers, nothing read back; and,
// with `reuse`, its first run recorded and replayed (jit.compile's mode 'reduce-overhead'). A
// replay gives what a fresh run gives — for new input values, for parameters changed in place,
// for random ops (drawn afresh from the generator), and for kernels that check their indices —
// and any other call (a new shape, another in-place buffer, another scalar) records anew.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphBuilder, tensorType, type DType, type Graph, type TypedArray } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice, RuntimeError, type DeviceTensor, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';

let device: WebGpuDevice;
beforeAll(async () => { device = await createWebGpuDevice(); });
afterAll(() => device?.destroy());

const values = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => (((i + 1) * (seed + 3) * 7919) % 23) / 7 - 1.5);
function upload(data: TypedArray, shape: number[], dtype: DType = 'float32'): DeviceTensor<GPUBuffer> {
  const t = device.alloc(dtype, shape);
  device.write(t, data);
  return t;
}
const host = (t: DeviceTensor<GPUBuffer>, dtype: DType = t.dtype) => ({ data: t.dtype === 'int32' ? new Int32Array(0) : new Float32Array(0), shape: [...t.shape], dtype });

/** relu(x @ w + b) and its sum over rows plus x: a view, a matmul, an elementwise chain. */
function mlp(): Graph {
  const b = new GraphBuilder('mlp');
  const x = b.input('x', tensorType('float32', ['N', 4]));
  const w = b.input('w', tensorType('float32', [4, 4]));
  const bias = b.input('b', tensorType('float32', [4]));
  const h = b.op1('relu', [b.op1('add', [b.op1('matmul', [x, w]), bias])]);
  b.output('h', h);
  b.output('s', b.op1('add', [b.op1('sum', [h], { dim: [0], keepdim: true }), b.op1('reshape', [bias], { shape: [1, 4] })]));
  return b.build();
}

async function model(g: Graph) {
  await device.addKernels(generateWgsl(g).kernels);
  return { gpu: createModel(g, { device }), cpu: createModel(g) };
}

async function expectSame(got: DeviceTensor<GPUBuffer>[], want: { data: TypedArray; shape: number[] }[]) {
  expect(got.map((t) => t.shape)).toEqual(want.map((w) => w.shape));
  for (let k = 0; k < got.length; k++) {
    const a = await device.read(got[k]);
    want[k].data.forEach((v, i) => expect(a[i]).toBeCloseTo(v, 5));
  }
}

describe('Model.runDevice on WebGPU', () => {
  it('gives run()\'s results in buffers of their own, reading the inputs in place and writing none', async () => {
    const { gpu, cpu } = await model(mlp());
    const xs = values(8, 1), ws = values(16, 2), bs = values(4, 3);
    const x = upload(xs, [2, 4]), w = upload(ws, [4, 4]), bias = upload(bs, [4]);
    const maps = device.stats.maps;
    const outs = gpu.runDevice([x, w, bias]);
    expect(device.stats.maps).toBe(maps); // nothing was read back
    const want = cpu.runSync([{ data: xs, shape: [2, 4], dtype: 'float32' }, { data: ws, shape: [4, 4], dtype: 'float32' }, { data: bs, shape: [4], dtype: 'float32' }]);
    await expectSame(outs, want);
    const buffers = new Set([x, w, bias, ...outs].map((t) => t.buffer));
    expect(buffers.size).toBe(5);
    expect(Array.from(await device.read(x))).toEqual(Array.from(xs));
    expect(Array.from(await device.read(bias))).toEqual(Array.from(bs));
    for (const o of outs) device.free(o.buffer);
  });

  it('reuse: replays the recorded run for new input values and in-place parameter changes; another shape or in-place buffer records anew', async () => {
    const { gpu, cpu } = await model(mlp());
    const ws = values(16, 2), bs = values(4, 3);
    const w = upload(ws, [4, 4]), bias = upload(bs, [4]);
    const opts = { reuse: true, inPlace: [false, true, true] };
    const hostIn = (xs: Float32Array, n: number, wv = ws, bv = bs) => [{ data: xs, shape: [n, 4], dtype: 'float32' }, { data: wv, shape: [4, 4], dtype: 'float32' }, { data: bv, shape: [4], dtype: 'float32' }];
    const first = upload(values(8, 1), [2, 4]);
    const before = device.stats.dispatches;
    await expectSame(gpu.runDevice([first, w, bias], opts), cpu.runSync(hostIn(values(8, 1), 2)));
    const recorded = device.stats.dispatches - before, dispatches = device.stats.dispatches;
    for (let s = 2; s < 5; s++) {
      const x = upload(values(8, s * 10), [2, 4]);
      await expectSame(gpu.runDevice([x, w, bias], opts), cpu.runSync(hostIn(values(8, s * 10), 2)));
    }
    expect(gpu.deviceReplays).toBe(3);
    expect(device.stats.dispatches - dispatches).toBe(3 * recorded); // the same kernels, recorded again
    expect(gpu.deviceRecordRefused).toBeUndefined();

    // A parameter written in place (an optimizer step) is read by the replay.
    const ws2 = values(16, 7);
    device.write(w, ws2);
    await expectSame(gpu.runDevice([upload(values(8, 5), [2, 4]), w, bias], opts), cpu.runSync(hostIn(values(8, 5), 2, ws2)));
    expect(gpu.deviceReplays).toBe(4);

    // Another batch size, then another buffer where the record reads in place: recorded anew, right results.
    await expectSame(gpu.runDevice([upload(values(12, 6), [3, 4]), w, bias], opts), cpu.runSync(hostIn(values(12, 6), 3, ws2)));
    const w2 = upload(ws, [4, 4]);
    await expectSame(gpu.runDevice([upload(values(12, 6), [3, 4]), w2, bias], opts), cpu.runSync(hostIn(values(12, 6), 3)));
    expect(gpu.deviceReplays).toBe(4);
    await expectSame(gpu.runDevice([upload(values(12, 8), [3, 4]), w2, bias], opts), cpu.runSync(hostIn(values(12, 8), 3)));
    expect(gpu.deviceReplays).toBe(5);
  });

  it('reuse: a replayed random op draws afresh from the generator, as a fresh run would', async () => {
    const b = new GraphBuilder('noise');
    const x = b.input('x', tensorType('float32', [3, 5]));
    b.output('y', b.op1('add', [x, b.op1('normal', [null], { shape: [3, 5] })]));
    const g = b.build();
    await device.addKernels(generateWgsl(g).kernels);
    const xs = values(15, 4);
    const fresh = createModel(g, { device, seed: 9 }), replayed = createModel(g, { device, seed: 9 });
    for (let s = 0; s < 3; s++) {
      const [a] = fresh.runDevice([upload(xs, [3, 5])]);
      const [r] = replayed.runDevice([upload(xs, [3, 5])], { reuse: true });
      expect(Array.from(await device.read(r))).toEqual(Array.from(await device.read(a)));
    }
    expect(replayed.deviceReplays).toBe(2);
  });

  it('reuse: a host scalar written into a tensor (to_tensor) is written again by each replay; another value records anew', async () => {
    const b = new GraphBuilder('scale');
    const x = b.input('x', tensorType('float32', [2, 3]));
    const k = b.input('k', { kind: 'scalar', dtype: 'float32' });
    b.output('y', b.op1('mul', [x, b.op1('to_tensor', [k], { dtype: 'float32' })]));
    const g = b.build();
    const { gpu } = await model(g);
    const xs = values(6, 2);
    for (const kv of [3, 3, 3, -2, -2]) {
      const [y] = gpu.runDevice([upload(xs, [2, 3]), kv], { reuse: true });
      expect(Array.from(await device.read(y))).toEqual(Array.from(xs).map((v) => Math.fround(v * kv)));
    }
    expect(gpu.deviceReplays).toBe(3);
    expect(gpu.deviceRecordRefused).toBeUndefined();
  });

  it('reuse: a replayed kernel that checks its indices reports a bad index at the next read', async () => {
    const b = new GraphBuilder('embed');
    const table = b.input('table', tensorType('float32', [6, 4]));
    const ids = b.input('ids', tensorType('int32', [3]));
    b.output('y', b.op1('relu', [b.op1('index_select', [table, ids], { dim: 0 })]));
    const g = b.build();
    const { gpu } = await model(g);
    const t = upload(values(24, 1), [6, 4]);
    const run = (idx: number[]) => gpu.runDevice([t, upload(Int32Array.from(idx), [3], 'int32')], { reuse: true, inPlace: [true, false] });
    await device.read(run([0, 5, 2])[0]);
    await device.read(run([1, 2, 3])[0]);
    expect(gpu.deviceReplays).toBe(1);
    const bad = run([1, 6, 3]);
    expect(gpu.deviceReplays).toBe(2);
    await expect(device.read(bad[0])).rejects.toThrow(/index_select: index 6 is out of range for dim 0 of size 6/);
    expect(Array.from(await device.read(run([5, 4, 0])[0])).slice(0, 4)).toEqual(Array.from(values(24, 1).slice(20, 24)).map((v) => Math.max(v, 0)));
  });

  it('refuses, with a clear error, the CPU device, graphs that read a value back mid-run, and inputs of the wrong shape', async () => {
    const { gpu, cpu } = await model(mlp());
    const x = upload(values(8, 1), [2, 4]), w = upload(values(16, 2), [4, 4]), bias = upload(values(4, 3), [4]);
    expect(() => cpu.runDevice([x, w, bias])).toThrow(/runDevice\(\) runs on tensors of a device with its own memory \(WebGPU\); on the cpu device use runSync\(\)/);
    const e = (() => { try { gpu.runDevice([upload(values(8, 1), [4, 2]), w, bias]); } catch (err) { return err; } return undefined; })();
    expect(e).toBeInstanceOf(RuntimeError);
    expect((e as RuntimeError).code).toBe('INPUT');
    expect((e as RuntimeError).message).toMatch(/input 'x': expected f32\[N,4\], got f32\[4,2\]/);
    expect(() => gpu.runDevice([host(x) as never, w, bias])).toThrow(/runDevice\(\) takes device tensors/);

    const b = new GraphBuilder('select');
    const v = b.input('v', tensorType('float32', [6]));
    b.output('y', b.op1('masked_select', [v, b.op1('gt', [v, b.literal(0)])]));
    const sel = createModel(b.build(), { device });
    expect(() => sel.runDevice([upload(values(6, 1), [6])])).toThrow(/node masked_select reads a value back from the webgpu device in the middle of the run/);
  });
});
