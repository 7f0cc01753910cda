// jit.compile of a model whose tensors live on WebGPU (Dawn; SwiftShader on CI). Compiled graphs
// run on the CPU runtime, so such a call runs the model eagerly on its device, as one graph
// break naming the tensor and the device: the outputs and gradients are eager's and stay on the
// GPU, `fullgraph: true` throws that reason instead, and the same compiled model compiles a graph
// once the model and its inputs are back on the CPU.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { device, initWebGpu, jit, manualSeed, nn, noGrad, randn } from 'kiln';

const model = () => {
  manualSeed(4);
  return new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 4));
};

describe('jit.compile with tensors on WebGPU', () => {
  beforeAll(async () => { await initWebGpu(); });
  afterAll(() => { device('cpu'); });

  it('runs the model eagerly on its device, with eager\'s outputs and gradients, as a listed graph break', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const m = model().to('webgpu'), ref = model().to('webgpu');
      const x = randn([3, 8], { device: 'webgpu' });
      const c = jit.compile(m);
      const y = noGrad(() => c.forward(x));
      expect(y.device).toBe('webgpu');
      expect(await y.toArrayAsync()).toEqual(await noGrad(() => ref.forward(x)).toArrayAsync());
      c.forward(x).sum().backward();
      ref.forward(x).sum().backward();
      for (let i = 0; i < m.parameters().length; i++) {
        const g = m.parameters()[i].grad!;
        expect(g.device).toBe('webgpu');
        expect(await g.toArrayAsync()).toEqual(await ref.parameters()[i].grad!.toArrayAsync());
      }
      const ex = c.explain();
      expect(ex.graphs).toHaveLength(0);
      expect(ex.graphBreaks[0].inputs).toBe('float32@webgpu[3,8]');
      expect(ex.graphBreaks[0].reason).toMatch(/argument 0 lives on 'webgpu': compiled graphs run on the CPU runtime/);
      expect(warn).toHaveBeenCalled();

      // A CPU input with the parameters still on the GPU: the parameter is named.
      const only = jit.compile(model().to('webgpu'), { fullgraph: true });
      expect(() => only.forward(randn([3, 8]))).toThrow(/\{ fullgraph: true \}\): 0\.weight lives on 'webgpu'/);

      // Back on the CPU, the same compiled model captures a graph.
      await m.toAsync('cpu');
      const xc = await x.toAsync('cpu');
      const yc = noGrad(() => c.forward(xc));
      expect(yc.device).toBe('cpu');
      expect(c.explain().graphs).toHaveLength(1);
      expect(Array.from(yc.toArray() as number[])).toEqual(Array.from(await y.toArrayAsync() as number[]).map((v) => expect.closeTo(v, 5)));
    } finally {
      warn.mockRestore();
    }
  });
});
