// jit.compile of a model whose tensors live on WebGPU (Dawn; SwiftShader on CI): its graphs run
// on the eager WebGPU device, reading parameters and inputs in their buffers and handing results
// over as 'webgpu' tensors with nothing read back — for inference and for training (forward and
// backward graphs, batch-norm buffer updates, dropout drawn from the same generator as eager), with
// eager's numbers. Mode 'reduce-overhead' records each graph's first run and replays it. Tensors on
// two devices are a graph break that runs eagerly (eager's own error), and the same compiled model
// compiles a CPU graph once everything is back on the CPU.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { autograd, device, F, initWebGpu, jit, manualSeed, nn, noGrad, optim, profiler, rand, randn, tensor, webGpuDevice, type Tensor } from 'kiln';

const mlp = () => {
  manualSeed(4);
  return new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Linear(16, 4));
};

async function expectClose(a: Tensor, b: Tensor, tol = 1e-5) {
  expect(a.device).toBe('webgpu');
  expect(a.shape).toEqual(b.shape);
  const x = await a.toArrayAsync() as Float32Array, y = await b.toArrayAsync() as Float32Array;
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  expect(worst).toBeLessThanOrEqual(tol);
}

describe('jit.compile with tensors on WebGPU', () => {
  beforeAll(async () => { await initWebGpu(); });
  afterAll(() => { device('cpu'); });

  it('runs a compiled graph on the GPU: eager\'s outputs and gradients, nothing read back', async () => {
    const m = mlp().to('webgpu'), ref = mlp().to('webgpu');
    const x = randn([3, 8], { device: 'webgpu' });
    const c = jit.compile(m);
    const maps = webGpuDevice().stats.maps;
    const y = noGrad(() => c.forward(x));
    expect(webGpuDevice().stats.maps).toBe(maps);
    await expectClose(y, noGrad(() => ref.forward(x)));

    c.forward(x).sum().backward();
    ref.forward(x).sum().backward();
    for (let i = 0; i < m.parameters().length; i++) await expectClose(m.parameters()[i].grad!, ref.parameters()[i].grad!);
    const ex = c.explain();
    expect(ex.graphs.map((g) => [g.inputs, g.training])).toEqual([['float32@webgpu[3,8]', false], ['float32@webgpu[3,8]', true]]);
    expect(ex.graphBreaks).toEqual([]);
    expect(ex.replays).toBe(0);
  });

  it("mode 'reduce-overhead' replays each graph's recorded run: new inputs and updated parameters are seen", async () => {
    const m = mlp().to('webgpu'), ref = mlp().to('webgpu');
    const c = jit.compile(m, { mode: 'reduce-overhead' });
    const opt = new optim.SGD(m.parameters(), { lr: 0.1 }), refOpt = new optim.SGD(ref.parameters(), { lr: 0.1 });
    for (let s = 0; s < 4; s++) {
      const x = randn([3, 8], { device: 'webgpu' });
      await expectClose(noGrad(() => c.forward(x)), noGrad(() => ref.forward(x)));
      opt.zeroGrad(); refOpt.zeroGrad();
      c.forward(x).square().mean().backward();
      ref.forward(x).square().mean().backward();
      opt.step(); refOpt.step();
    }
    for (let i = 0; i < m.parameters().length; i++) await expectClose(m.parameters()[i], ref.parameters()[i]);
    const ex = c.explain();
    expect(ex.compiles).toBe(2);
    // 3 replays each of the inference graph, the training forward and the training backward.
    expect(ex.replays).toBe(9);
    // Another batch size: compiled and recorded anew, then replayed.
    const x5 = randn([5, 8], { device: 'webgpu' });
    noGrad(() => c.forward(x5));
    await expectClose(noGrad(() => c.forward(x5)), noGrad(() => ref.forward(x5)));
    expect(c.explain().replays).toBe(10);
    // Under the profiler the graph runs through the executor (no replay), each node timed as issued.
    const prof = await profiler.profile({ activities: ['webgpu'] }, () => noGrad(() => c.forward(x5)));
    const nodes = prof.events.filter((e) => e.kind === 'node');
    expect(nodes.map((e) => e.name)).toContain('linear');
    expect(nodes.every((e) => e.device === 'webgpu' && e.timing === 'issued')).toBe(true);
    expect(c.explain().replays).toBe(10);
  });

  it("mode 'max-autotune' times the candidates in the background, then runs the fastest; no draw of the generator is seen", async () => {
    const make = () => { manualSeed(4); return new nn.Sequential(new nn.Linear(8, 16), new nn.ReLU(), new nn.Dropout(0.3), new nn.Linear(16, 4), new nn.Sigmoid()).to('webgpu'); };
    const m = make(), ref = make();
    const c = jit.compile(m, { mode: 'max-autotune' });
    const x = randn([3, 8], { device: 'webgpu' });
    manualSeed(3);
    const y = noGrad(() => c.forward(x));
    const pending = c.explain().graphs[0].autotune!;
    expect(pending).toEqual([{ graph: 'inference', chosen: 'unfused elementwise', ms: {}, cached: false, pending: true }]);
    await vi.waitFor(() => expect(c.explain().graphs[0].autotune![0].pending).toBeUndefined(), { timeout: 60_000, interval: 20 });
    const after = await rand([4]).toArrayAsync();
    manualSeed(3);
    await expectClose(y, noGrad(() => ref.forward(x)));
    expect(await rand([4]).toArrayAsync()).toEqual(after); // the timing runs' dropout draws were undone
    const [choice] = c.explain().graphs[0].autotune!;
    expect(Object.keys(choice.ms).sort()).toEqual(['fused elementwise', 'unfused elementwise']);
    expect(choice.chosen).toBe(Object.entries(choice.ms).sort((a, b) => a[1] - b[1])[0][0]);
    manualSeed(5);
    const y2 = noGrad(() => c.forward(x));
    manualSeed(5);
    await expectClose(y2, noGrad(() => ref.forward(x)));
  });

  it('a compiled function of a GPU tensor and a number reads the number on the host: nothing read back, a replay per value', async () => {
    const f = (x: Tensor, s: number) => F.relu(x.mul(s)).sum(1);
    const cf = jit.compile(f, { mode: 'reduce-overhead' });
    const x = randn([3, 4], { device: 'webgpu' });
    for (const s of [2.5, 2.5, -1.5, -1.5, 0.5]) {
      const maps = webGpuDevice().stats.maps;
      const y = noGrad(() => cf(x, s));
      expect(webGpuDevice().stats.maps).toBe(maps);
      await expectClose(y, noGrad(() => f(x, s)));
    }
    const ex = cf.explain();
    expect(ex.graphBreaks).toEqual([]);
    expect(ex.compiles).toBe(1); // numbers are keyed by kind: one graph, recorded anew for each new value
    expect(ex.replays).toBe(2);
  });

  it('trains the digits CNN (batch norm, dropout, max pool) on the GPU with eager\'s losses and parameters', async () => {
    const { digitsModel, loadDigits } = await import('../examples/digits/train.mjs');
    const data = loadDigits();
    const run = async (compiled: boolean) => {
      manualSeed(11);
      const model = (digitsModel() as nn.Module).to('webgpu');
      const net = compiled ? jit.compile(model, { mode: 'reduce-overhead' }) : model;
      const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
      model.train();
      const losses: Tensor[] = [];
      for (let s = 0; s < 4; s++) {
        const x = tensor(data.x.slice(s * 32 * 64, (s + 1) * 32 * 64), { shape: [32, 1, 8, 8] }).to('webgpu');
        const y = tensor(data.y.slice(s * 32, (s + 1) * 32), { shape: [32] }).to('webgpu');
        opt.zeroGrad();
        const loss = F.crossEntropy(net.forward(x) as Tensor, y);
        loss.backward();
        opt.step();
        losses.push(loss);
      }
      const values: number[] = [];
      for (const l of losses) values.push(await l.itemAsync());
      return { values, model, net };
    };
    const eager = await run(false), compiled = await run(true);
    compiled.values.forEach((l, i) => expect(Math.abs(l - eager.values[i])).toBeLessThanOrEqual(1e-5));
    // As in the CPU test: the conv biases before a batch norm get rounding noise as gradient, which Adam scales up.
    const noise = new Set(['0.bias', '3.bias']);
    const mine = compiled.model.namedParameters(), theirs = eager.model.namedParameters();
    for (let i = 0; i < mine.length; i++) if (!noise.has(mine[i][0])) await expectClose(mine[i][1], theirs[i][1]);
    // The batch norms' running statistics were written back on the GPU: running_mean carries those conv biases (noise), the rest agree.
    const buffers = compiled.model.namedBuffers(), refBuffers = eager.model.namedBuffers();
    expect(buffers.map(([n]) => n)).toEqual(['1.running_mean', '1.running_var', '1.num_batches_tracked', '4.running_mean', '4.running_var', '4.num_batches_tracked']);
    for (let i = 0; i < buffers.length; i++) {
      const [name, t] = buffers[i];
      if (name.endsWith('running_var')) await expectClose(t, refBuffers[i][1]);
      if (name.endsWith('num_batches_tracked')) expect(Array.from(await t.toArrayAsync() as Int32Array)).toEqual([4]);
    }
    const ex = (compiled.net as jit.CompiledModel).explain();
    expect(ex.graphBreaks).toEqual([]);
    expect(ex.graphs).toHaveLength(1);
    expect(ex.replays).toBe(6);
  }, 120_000);

  it('higher-order gradients on the GPU re-run the forward eagerly: eager\'s gradients, batch-norm buffers put back on the GPU', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const make = () => { manualSeed(2); return new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4), new nn.Tanh(), new nn.Linear(4, 1)).to('webgpu'); };
      const m = make(), ref = make(), c = jit.compile(m);
      const x = randn([5, 3], { device: 'webgpu', requiresGrad: true }), xr = x.detach().clone().requiresGrad_(true);
      const [gx] = autograd.grad((c.forward(x) as Tensor).sum(), x, { createGraph: true });
      gx!.square().sum().backward();
      const [gr] = autograd.grad((ref.forward(xr) as Tensor).sum(), xr, { createGraph: true });
      gr!.square().sum().backward();
      await expectClose(gx!, gr!);
      await expectClose(x.grad!, xr.grad!);
      for (let i = 0; i < 3; i++) await expectClose(m.parameters()[i].grad!, ref.parameters()[i].grad!);
      const buffers = m.namedBuffers(), refBuffers = ref.namedBuffers();
      for (let i = 0; i < buffers.length; i++) expect(Array.from(await buffers[i][1].toArrayAsync() as Float32Array)).toEqual(Array.from(await refBuffers[i][1].toArrayAsync() as Float32Array));
      expect(warn.mock.calls.some(([msg]) => /higher-order gradients/.test(String(msg)))).toBe(true);
    } finally {
      warn.mockRestore();
    }
  });

  it('tensors on two devices are a graph break that runs eagerly; back on the CPU the same model compiles a CPU graph', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const m = mlp().to('webgpu');
      const c = jit.compile(m);
      const xc = randn([3, 8]);
      expect(() => c.forward(xc)).toThrow(/is on 'webgpu' but input 0 \(shape \[3,8\]\) is on 'cpu'/); // eager's own error
      expect(c.explain().graphBreaks[0].reason).toMatch(/0\.weight lives on 'webgpu' but argument 0 on 'cpu': a graph runs on one device/);
      expect(warn).toHaveBeenCalled();
      const only = jit.compile(mlp().to('webgpu'), { fullgraph: true });
      expect(() => only.forward(randn([3, 8]))).toThrow(/\{ fullgraph: true \}\): 0\.weight lives on 'webgpu' but argument 0 on 'cpu'/);

      const x = randn([3, 8], { device: 'webgpu' });
      const y = noGrad(() => c.forward(x));
      await m.toAsync('cpu');
      const back = await x.toAsync('cpu');
      const yc = noGrad(() => c.forward(back));
      expect(yc.device).toBe('cpu');
      expect(c.explain().graphs.map((g) => g.inputs)).toEqual(['float32@webgpu[3,8]', 'float32[3,8]']);
      expect(Array.from(yc.toArray() as number[])).toEqual(Array.from(await y.toArrayAsync() as number[]).map((v) => expect.closeTo(v, 5)));
    } finally {
      warn.mockRestore();
    }
  });
});
