// Files written before issue 13 stored a fused_elementwise's body as a `program` attribute. The
// fixture tests/fixtures/fused-program-legacy.tsgraph was written by that Kiln (fuse-elementwise +
// plan-memory, with its WGSL kernels): relu(maximum(sigmoid(tanh(x·2 + c)), erf(x))). The decoder
// turns the attribute into an element body; the file runs on the CPU and, through its stored
// kernel (whose key the body still spells), on WebGPU.

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTsgraph, encodeTsgraph, getOp, parseGraph, printGraph, verifyGraph, type CpuTensor } from '@kiln/ir-spec';
import { createWebGpuDevice, load, nodesWithoutKernels, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';

const bytes = new Uint8Array(readFileSync(new URL('./fixtures/fused-program-legacy.tsgraph', import.meta.url)));
const C = [0.5, -1, 2, 0.25];
const x: CpuTensor = { dtype: 'float32', shape: [3, 4], data: Float32Array.from({ length: 12 }, (_, i) => (i - 6) / 3) };

/** The chain the fused node replaced, op by op (each op's own kernel). */
function expected(): Float32Array {
  const op = (name: string, ...ins: CpuTensor[]) => getOp(name).cpu(ins, {})[0];
  const lit = (v: number): CpuTensor => ({ dtype: 'float32', shape: [], data: new Float32Array([v]) });
  const c: CpuTensor = { dtype: 'float32', shape: [4], data: new Float32Array(C) };
  const s = op('sigmoid', op('tanh', op('add', op('mul', x, lit(2)), c)));
  return op('relu', op('maximum', s, op('erf', x))).data as Float32Array;
}

const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol: number) => {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i]), `element ${i}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(want[i])));
};

describe('a .tsgraph with a legacy fused_elementwise program', () => {
  it('decodes the program attribute into an element body that verifies and prints as a region', () => {
    expect(new TextDecoder('latin1').decode(bytes)).toContain('"program"'); // the file really is the old form
    const { graph } = decodeTsgraph(bytes);
    verifyGraph(graph);
    const [node] = graph.body.nodes;
    expect(node.op).toBe('fused_elementwise');
    expect(node.attrs).toEqual({});
    expect(node.regions).toHaveLength(1);
    expect(node.regions[0].nodes.map((n) => n.op)).toEqual(['constant', 'mul', 'add', 'tanh', 'sigmoid', 'erf', 'maximum', 'relu']);
    const text = printGraph(graph);
    expect(text).toContain('fused_elementwise(%x, %c) ({');
    expect(text).not.toContain('program');
    expect(printGraph(parseGraph(text))).toBe(text); // the text form reads back
    // Saved again, it is written as a region and reads back the same.
    const again = decodeTsgraph(encodeTsgraph(graph)).graph;
    expect(printGraph(again)).toBe(text);
  });

  it('runs on the CPU with the numbers of the ops it replaced', async () => {
    const model = await load(bytes, { backend: 'cpu' });
    const [y] = await model.run([{ data: x.data, shape: x.shape, dtype: 'float32' }]);
    close(y.data as Float32Array, expected(), 1e-6);
  });

  describe('on WebGPU (SwiftShader)', () => {
    let device: WebGpuDevice;
    beforeAll(async () => { device = await createWebGpuDevice(); });
    afterAll(() => device?.destroy());

    it('finds its stored kernel by the key the body spells, and the kernel generated now has the same key', async () => {
      const { graph, header } = decodeTsgraph(bytes);
      expect(nodesWithoutKernels(graph, header.kernels)).toEqual([]);
      expect(generateWgsl(graph).kernels.map((k) => k.key)).toEqual((header.kernels as { key: string }[]).map((k) => k.key));
      const model = await load(bytes, { backend: 'webgpu' });
      const [y] = await model.run([{ data: x.data, shape: x.shape, dtype: 'float32' }]);
      close(y.data as Float32Array, expected(), 1e-4);
    });
  });
});
