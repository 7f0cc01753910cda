// Two nodes share a WebGPU kernel only when one WGSL text serves both: the kernel key leaves
// out expand's target dims (symbolic in a graph, numbers at run time) but not how many there
// are, because the generated kernel is written for the output's rank. Real Dawn.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphBuilder, tensorType } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice, kernelKey, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';

let device: WebGpuDevice;
beforeAll(async () => { device = await createWebGpuDevice(); });
afterAll(() => device?.destroy());

describe('kernel keys', () => {
  it('expand to the same dims in other numbers keeps one key; to another rank gets its own', () => {
    const x = [{ dtype: 'float32' as const, rank: 1 }];
    expect(kernelKey('expand', x, { shape: ['N', 4] })).toBe(kernelKey('expand', x, { shape: [2, 4] }));
    expect(kernelKey('expand', x, { shape: [3, 2, 4] })).not.toBe(kernelKey('expand', x, { shape: [2, 4] }));
    // Files written before the rank was part of the key keep their keys for rank-keeping expands.
    expect(kernelKey('expand', [{ dtype: 'float32', rank: 2 }], { shape: [5, 4] })).toBe('expand(f32r2){}');
  });

  it('two expands of one input to different ranks run their own kernels on WebGPU', async () => {
    const b = new GraphBuilder('two_expands');
    const x = b.input('x', tensorType('float32', [4]));
    b.output('y2', b.op('expand', [x], { shape: [2, 4] })[0]);
    b.output('y3', b.op('expand', [x], { shape: [3, 2, 4] })[0]);
    const graph = b.build();
    const { kernels, unsupported } = generateWgsl(graph);
    expect(unsupported).toEqual([]);
    expect(kernels).toHaveLength(2);
    await device.addKernels(kernels);
    const input = [{ data: Float32Array.from([1, 2, 3, 4]), shape: [4], dtype: 'float32' as const }];
    const want = createModel(graph).runSync(input);
    const got = await createModel(graph, { device }).run(input);
    expect(got.map((o) => [o.shape, Array.from(o.data)])).toEqual(want.map((o) => [o.shape, Array.from(o.data)]));
  }, 60_000);
});
