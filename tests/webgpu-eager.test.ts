// Eager tensors on WebGPU (issue 24), on Dawn/SwiftShader: placement and device errors, the
// asynchronous reads (counted submits and maps), the caching allocator, and training the digits
// CNN on the GPU to the CPU's losses. Golden op parity is tests/webgpu-eager-parity.test.ts.

import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import v8 from 'node:v8';
import vm from 'node:vm';
import { device, F, initWebGpu, manualSeed, memory, nn, optim, randn, synchronize, tensor, webGpuDevice, zeros, DeviceError, type Tensor } from '@kiln/core';
// @ts-expect-error the example is plain JavaScript
import { loadDigits, digitsModel } from '../examples/digits/train.mjs';

// Buffers return to the pool when JavaScript collects their tensors; the allocator test forces
// collections so it can see the steady state deterministically.
v8.setFlagsFromString('--expose_gc');
const gc = vm.runInNewContext('gc') as () => void;
const collect = async () => { gc(); await new Promise((r) => setTimeout(r, 0)); gc(); await new Promise((r) => setTimeout(r, 0)); };

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-5) => {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i]), `element ${i}: ${a[i]} vs ${b[i]}`).toBeLessThanOrEqual(tol * (1 + Math.abs(b[i])));
};

describe('eager WebGPU before initWebGpu', () => {
  it('says how to start the device', () => {
    expect(() => webGpuDevice()).toThrow(/await initWebGpu\(\)/);
    expect(() => tensor([1]).to('webgpu')).toThrow(DeviceError);
    expect(() => device('webgpu')).toThrow(/await initWebGpu\(\)/);
  });
});

describe('eager WebGPU', () => {
  beforeAll(async () => { await initWebGpu(); });
  afterAll(() => { device('cpu'); });

  it('places tensors: to(), factories with { device }, the default device()', async () => {
    const a = tensor([[1, 2], [3, 4]]);
    expect(a.device).toBe('cpu');
    const g = a.to('webgpu');
    expect(g.device).toBe('webgpu');
    expect(g.to('webgpu')).toBe(g);
    expect(randn([2, 3], { device: 'webgpu' }).device).toBe('webgpu');
    expect(zeros([3], { device: 'webgpu' }).device).toBe('webgpu');
    expect(device()).toBe('cpu');
    device('webgpu');
    try {
      expect(tensor([1, 2]).device).toBe('webgpu');
      expect(randn([2]).device).toBe('webgpu');
    } finally { device('cpu'); }
    expect(() => device('cuda' as never)).toThrow(/unknown device "cuda"; use 'cpu' or 'webgpu'/);
    // the same seed draws the same numbers on both devices
    manualSeed(3); const c = randn([5]);
    manualSeed(3); const w = randn([5], { device: 'webgpu' });
    close(await w.toArrayAsync(), c.toArray(), 0);
  });

  it('builds modules on the default device with the CPU init (same seed, same outputs)', async () => {
    const build = () => new nn.Sequential(new nn.Conv2d(1, 4, 3), new nn.BatchNorm2d(4), new nn.ReLU(), new nn.Flatten(), new nn.Linear(4 * 6 * 6, 2));
    manualSeed(5);
    const c = build(), xc = randn([2, 1, 8, 8]);
    device('webgpu');
    let y: Tensor;
    try {
      manualSeed(5);
      const g = build(), xg = randn([2, 1, 8, 8]);
      expect([...g.parameters(), ...g.buffers()].every((p) => p.device === 'webgpu')).toBe(true);
      y = g.forward(xg);
      expect(String(y)).toBe("tensor(<on webgpu: await t.toArrayAsync()>, shape=[2, 2], dtype=float32, device='webgpu')");
    } finally { device('cpu'); }
    close(await y.toArrayAsync(), c.forward(xc).toArray(), 1e-5);
  });

  it('reads only asynchronously, and a sync read says which async form to use', async () => {
    const g = tensor([1.5, -2]).to('webgpu');
    expect(() => g.toArray()).toThrow(/await t\.toArrayAsync\(\)/);
    expect(() => g.sum().item()).toThrow(/await t\.itemAsync\(\)/);
    expect(() => g.tolist()).toThrow(DeviceError);
    expect(() => g.to('cpu')).toThrow(/await t\.toAsync\('cpu'\)/);
    expect(Array.from(await g.toArrayAsync())).toEqual([1.5, -2]);
    expect(await g.sum().itemAsync()).toBe(-0.5);
    const back = await g.toAsync('cpu');
    expect(back.device).toBe('cpu');
    expect(Array.from(back.toArray())).toEqual([1.5, -2]);
  });

  it('refuses an op on two devices, naming both', () => {
    const g = tensor([1, 2]).to('webgpu');
    expect(() => g.add(tensor([1, 2]))).toThrow(/op add: input 0 is on 'webgpu' but input 1 \(shape \[2\]\) is on 'cpu'/);
    expect(() => tensor([[1, 2]]).matmul(tensor([[1], [2]]).to('webgpu'))).toThrow(/is on 'webgpu' but input 0 .* is on 'cpu'/);
    // a CPU number (0-d) goes along, as in PyTorch
    expect(g.mul(2).device).toBe('webgpu');
  });

  it('records ops without submitting; a read submits once and maps once', async () => {
    const dev = webGpuDevice();
    const x = randn([64, 32], { device: 'webgpu' }), w = randn([32, 16], { device: 'webgpu' });
    await synchronize();
    const s0 = { ...dev.stats };
    let y: Tensor = x.matmul(w).relu();
    for (let i = 0; i < 20; i++) y = y.mul(1.01).add(0.1).tanh();
    const total = y.sum();
    expect(dev.stats.submits - s0.submits).toBe(0);
    expect(dev.stats.maps - s0.maps).toBe(0);
    expect(dev.stats.dispatches - s0.dispatches).toBeGreaterThanOrEqual(63);
    const got = await total.itemAsync();
    expect(dev.stats.submits - s0.submits).toBe(1);
    expect(dev.stats.maps - s0.maps).toBe(1);
    const [xc, wc] = [await x.toAsync('cpu'), await w.toAsync('cpu')];
    let yc: Tensor = xc.matmul(wc).relu();
    for (let i = 0; i < 20; i++) yc = yc.mul(1.01).add(0.1).tanh();
    expect(Math.abs(got - yc.sum().item())).toBeLessThan(1e-3);
  });

  it('in-place ops and copy_ from the host write the GPU buffer (version counters move)', async () => {
    const g = zeros([3], { device: 'webgpu' });
    const v = g._version;
    g.add_(tensor([1, 2, 3]).to('webgpu')).mul_(2);
    expect(g._version).toBe(v + 2);
    expect(Array.from(await g.toArrayAsync())).toEqual([2, 4, 6]);
    g.copy_(tensor([7, 8, 9]));
    expect(Array.from(await g.toArrayAsync())).toEqual([7, 8, 9]);
  });

  it('Module.to moves parameters in place; gradients come back on the GPU', async () => {
    manualSeed(1);
    const m = new nn.Linear(4, 3);
    const w = m.weight;
    m.to('webgpu');
    expect(m.weight).toBe(w);
    expect(m.parameters().every((p) => p.device === 'webgpu')).toBe(true);
    const x = randn([5, 4], { device: 'webgpu' });
    m.forward(x).pow(2).mean().backward();
    expect(m.weight.grad!.device).toBe('webgpu');
    // the same on the CPU
    const mc = new nn.Linear(4, 3);
    mc.loadStateDict({ weight: await m.weight.detach().toAsync('cpu'), bias: await m.bias!.detach().toAsync('cpu') });
    mc.forward(await x.toAsync('cpu')).pow(2).mean().backward();
    close(await m.weight.grad!.toArrayAsync(), mc.weight.grad!.toArray());
    close(await m.bias!.grad!.toArrayAsync(), mc.bias!.grad!.toArray());
    await m.toAsync('cpu');
    expect(m.weight.device).toBe('cpu');
  });

  it('SGD with momentum (fused WGSL step) matches the CPU update', async () => {
    const run = async (dev: 'cpu' | 'webgpu', opts: { nesterov: boolean; weightDecay: number }) => {
      manualSeed(2);
      const m = new nn.Sequential(new nn.Linear(6, 8), new nn.Tanh(), new nn.Linear(8, 2));
      m.to(dev);
      const opt = new optim.SGD(m.parameters(), { lr: 0.1, momentum: 0.9, ...opts });
      const x = randn([10, 6], { device: dev }), y = randn([10, 2], { device: dev });
      const losses: number[] = [];
      for (let s = 0; s < 3; s++) {
        opt.zeroGrad();
        const loss = F.mseLoss(m.forward(x), y);
        loss.backward();
        opt.step();
        losses.push(await loss.itemAsync());
      }
      return { losses, w: await m.parameters()[0].toArrayAsync() };
    };
    for (const opts of [{ nesterov: false, weightDecay: 0 }, { nesterov: true, weightDecay: 0.01 }]) {
      const c = await run('cpu', opts), g = await run('webgpu', opts);
      close(g.losses, c.losses, 1e-5);
      close(g.w, c.w, 1e-5);
    }
  });

  it('Adam (amsgrad), AdamW, Adagrad and RMSprop (fused WGSL steps) match the CPU update', async () => {
    const run = async (dev: 'cpu' | 'webgpu', make: (ps: ReturnType<nn.Module['parameters']>) => { zeroGrad(): void; step(): void }) => {
      manualSeed(4);
      const m = new nn.Sequential(new nn.Linear(5, 7), new nn.ReLU(), new nn.Linear(7, 3)).to(dev);
      const opt = make(m.parameters());
      const x = randn([9, 5], { device: dev }), y = randn([9, 3], { device: dev });
      const losses: number[] = [];
      for (let s = 0; s < 3; s++) {
        opt.zeroGrad();
        const loss = F.mseLoss(m.forward(x), y);
        loss.backward();
        opt.step();
        losses.push(await loss.itemAsync());
      }
      return { losses, w: await m.parameters()[2].toArrayAsync() };
    };
    const makers = [
      (ps: ReturnType<nn.Module['parameters']>) => new optim.Adam(ps, { lr: 0.01, amsgrad: true, weightDecay: 0.1 }),
      (ps: ReturnType<nn.Module['parameters']>) => new optim.AdamW(ps, { lr: 0.01 }),
      (ps: ReturnType<nn.Module['parameters']>) => new optim.Adagrad(ps, { lr: 0.05, lrDecay: 0.1, weightDecay: 0.01, initialAccumulatorValue: 0.1 }),
      (ps: ReturnType<nn.Module['parameters']>) => new optim.RMSprop(ps, { lr: 0.01 }),
      (ps: ReturnType<nn.Module['parameters']>) => new optim.RMSprop(ps, { lr: 0.01, momentum: 0.9, centered: true, weightDecay: 0.01, maximize: true }),
    ];
    for (const make of makers) {
      const c = await run('cpu', make), g = await run('webgpu', make);
      close(g.losses, c.losses, 1e-5);
      close(g.w, c.w, 1e-5);
    }
  });

  it('trains the digits CNN with Adam to the CPU losses (1e-4 per step), ≤ 1 submit per step, no new buffer after step 2', async () => {
    const data = loadDigits();
    const B = 32, STEPS = 4;
    const batch = (s: number) => ({
      x: tensor(data.x.slice(s * B * 64, (s + 1) * B * 64), { shape: [B, 1, 8, 8] }),
      y: tensor(data.y.slice(s * B, (s + 1) * B), { shape: [B] }),
    });
    const dev = webGpuDevice();
    const run = async (where: 'cpu' | 'webgpu') => {
      manualSeed(0); // same init and the same dropout masks (random ops draw on the CPU stream)
      const model = digitsModel().to(where);
      const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
      const losses: number[] = [], submits: number[] = [], created: number[] = [];
      for (let s = 0; s < STEPS; s++) {
        const b = batch(s);
        const s0 = dev.stats.submits;
        opt.zeroGrad();
        const loss = F.crossEntropy(model.forward(b.x.to(where)), b.y.to(where));
        loss.backward();
        opt.step();
        losses.push(await loss.itemAsync());
        submits.push(dev.stats.submits - s0);
        await collect();
        created.push(memory.stats('webgpu').buffersCreated);
      }
      return { losses, submits, created };
    };
    const cpu = await run('cpu');
    const gpu = await run('webgpu');
    close(gpu.losses, cpu.losses, 1e-4);
    expect(gpu.submits.slice(1).every((n) => n <= 1), `submits per step ${gpu.submits}`).toBe(true);
    // step 1 makes the optimizer state and compiles; from step 2 on the pool serves every buffer
    expect(gpu.created[STEPS - 1], `buffers created after each step ${gpu.created}`).toBe(gpu.created[1]);
    console.log(`digits CNN on WebGPU: losses ${gpu.losses.map((l) => l.toFixed(5))} (CPU ${cpu.losses.map((l) => l.toFixed(5))}); submits per step ${gpu.submits}; buffers created after each step ${gpu.created}`);
  }, 600_000);

  it('memory.stats counts allocated/reserved/peak; emptyCache returns cached buffers', async () => {
    await collect();
    const before = memory.stats('webgpu');
    expect(before.reserved).toBeGreaterThanOrEqual(before.allocated);
    expect(before.peak).toBeGreaterThanOrEqual(before.allocated);
    let t: Tensor | null = zeros([1 << 16], { device: 'webgpu' });
    const mid = memory.stats('webgpu');
    expect(mid.allocated - before.allocated).toBe(1 << 18);
    t = null;
    await synchronize();
    await collect();
    expect(t).toBeNull();
    const after = memory.stats('webgpu');
    expect(after.allocated).toBe(before.allocated);
    expect(after.reserved).toBeGreaterThan(after.allocated);
    memory.emptyCache();
    expect(memory.stats('webgpu').reserved).toBe(memory.stats('webgpu').allocated);
    expect(memory.stats('cpu').liveBytes).toBeGreaterThanOrEqual(0);   // the eager CPU counts, a different figure
    expect(() => memory.stats('gpu' as 'cpu')).toThrow(/unknown device "gpu"; use 'cpu' or 'webgpu'/);
  });
});
