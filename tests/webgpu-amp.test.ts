// AMP on WebGPU (issue 24): float16/bfloat16 results rounded on the GPU exactly as the CPU
// rounds them, autocast on 'webgpu' tensors against autocast on the CPU (forward, gradients,
// training with GradScaler), and GradScaler with gradients on the GPU: the unscale and inf/NaN
// check run on the GPU, one read per step (stepAsync), with the CPU scaler's steps, skips, scales.

import { describe, it, expect, beforeAll } from 'vitest';
import { amp, F, initWebGpu, manualSeed, nn, optim, randn, tensor, tidy, webGpuDevice, DeviceError } from '@kiln/core';

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string) => {
  expect(a.length, what).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i]), `${what} ${i}: ${a[i]} vs ${b[i]}`).toBeLessThanOrEqual(tol * (1 + Math.abs(b[i])));
};

describe('AMP on WebGPU', () => {
  beforeAll(async () => { await initWebGpu(); }, 120_000);

  it('rounds float16 and bfloat16 results as the CPU does (ties to even, overflow, subnormals, NaN)', async () => {
    const vals = [0, -0, 1, 1.0001, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 3.14159265, -2.5e-3, 65504, 65519.9, 65520, -70000, 1e-8, 3e-6, 2 ** -24, 1.5 * 2 ** -24, 6e-5, 1e30, Infinity, -Infinity, NaN];
    const x = tensor(vals);
    for (const dt of ['float16', 'bfloat16'] as const) {
      const c = x.to(dt), g = x.to('webgpu').to(dt);
      expect(g.dtype).toBe(dt);
      expect(Array.from(await g.toArrayAsync()), dt).toEqual(Array.from(c.toArray()));
      // an op on float16 tensors rounds its result too
      const cs = c.mul(c).add(c), gs = g.mul(g).add(g);
      expect(Array.from(await gs.toArrayAsync()), `${dt} mul/add`).toEqual(Array.from(cs.toArray()));
    }
  });

  it('autocast on webgpu gives the CPU autocast forward and gradients (float16 tolerance)', async () => {
    const build = () => new nn.Sequential(new nn.Conv2d(1, 4, 3, { padding: 1 }), new nn.ReLU(), new nn.Flatten(), new nn.Linear(4 * 6 * 6, 5));
    manualSeed(4);
    const cpu = build(), x = randn([3, 1, 6, 6]), y = tensor([0, 3, 1], { dtype: 'int32' });
    manualSeed(4);
    const gpu = build().to('webgpu');
    const run = (m: nn.Module, xs: typeof x, ys: typeof y) => {
      const out = amp.autocast(() => m.forward(xs));
      const loss = F.crossEntropy(out.float(), ys);
      loss.backward();
      return { out, loss };
    };
    const c = run(cpu, x, y), g = run(gpu, x.to('webgpu'), y.to('webgpu'));
    expect(g.out.dtype).toBe('float16');
    expect(c.out.dtype).toBe('float16');
    close(await g.out.toArrayAsync(), c.out.toArray(), 2e-3, 'logits');
    close([await g.loss.itemAsync()], [c.loss.item()], 2e-3, 'loss');
    const pc = cpu.parameters(), pg = gpu.parameters();
    for (let i = 0; i < pc.length; i++) close(await pg[i].grad!.toArrayAsync(), pc[i].grad!.toArray(), 5e-3, `grad ${i}`);
  });

  it('trains with autocast + GradScaler on webgpu to the CPU losses (float16 tolerance)', async () => {
    manualSeed(3);
    const x = randn([16, 12]), y = tensor(Array.from({ length: 16 }, (_, i) => i % 4), { dtype: 'int32' });
    const run = async (where: 'cpu' | 'webgpu') => {
      manualSeed(11);
      const model = new nn.Sequential(new nn.Linear(12, 32), new nn.ReLU(), new nn.Linear(32, 4)).to(where);
      const opt = new optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
      const scaler = new amp.GradScaler({ initScale: 1024 });
      const xs = x.to(where), ys = y.to(where), losses: number[] = [];
      for (let s = 0; s < 4; s++) {
        const loss = tidy(() => {
          opt.zeroGrad();
          const l = amp.autocast(() => F.crossEntropy(model.forward(xs), ys));
          scaler.scale(l).backward();
          return l;
        });
        await scaler.stepAsync(opt);
        scaler.update();
        losses.push(await loss.itemAsync());
        loss.dispose();
      }
      return losses;
    };
    const c = await run('cpu'), g = await run('webgpu');
    close(g, c, 3e-3, 'loss');
  });

  it('stepAsync matches the CPU scaler (steps, skipped steps, scales, weights) with one map per step', async () => {
    manualSeed(2);
    const x = randn([16, 8]), y = randn([16, 2]);
    const run = async (where: 'cpu' | 'webgpu') => {
      manualSeed(7);
      const model = new nn.Sequential(new nn.Linear(8, 16), new nn.Tanh(), new nn.Linear(16, 2)).to(where);
      const opt = new optim.Adam(model.parameters(), { lr: 0.01 });
      // 2**127 overflows the first backward (inf gradients: skipped step, backoff), then steps run.
      const scaler = new amp.GradScaler({ initScale: 2 ** 127, growthInterval: 2 });
      const xs = x.to(where), ys = y.mul(1e4).to(where); // large gradients: the first scaled ones overflow
      const scales: number[] = [], losses: number[] = [], maps: number[] = [];
      for (let s = 0; s < 5; s++) {
        const loss = tidy(() => {
          opt.zeroGrad();
          const l = F.mseLoss(model.forward(xs), ys);
          scaler.scale(l).backward();
          return l;
        });
        const m0 = webGpuDevice().stats.maps;
        await scaler.stepAsync(opt);
        maps.push(webGpuDevice().stats.maps - m0);
        scaler.update();
        scales.push(scaler.getScale());
        losses.push(await loss.itemAsync());
        loss.dispose();
      }
      return { scales, losses, maps, w: await model.parameters()[0].toArrayAsync() };
    };
    const c = await run('cpu'), g = await run('webgpu');
    expect(g.scales).toEqual(c.scales);
    expect(c.scales[0]).toBe(2 ** 126); // the first step was skipped on both
    for (let i = 0; i < c.losses.length; i++) expect(Math.abs(g.losses[i] - c.losses[i])).toBeLessThan(1e-5);
    for (let i = 0; i < c.w.length; i++) expect(Math.abs(g.w[i] - c.w[i])).toBeLessThan(1e-5);
    expect(g.maps).toEqual([1, 1, 1, 1, 1]);
  });

  it('the synchronous step()/unscale_() on GPU gradients point to the async forms', () => {
    const p = randn([3], { device: 'webgpu' }).requiresGrad_();
    const opt = new optim.SGD([p], { lr: 0.1 });
    const scaler = new amp.GradScaler();
    scaler.scale(p.sum()).backward();
    expect(() => scaler.step(opt)).toThrow(DeviceError);
    expect(() => scaler.unscale_(opt)).toThrow(/await scaler.unscaleAsync_\(optimizer\)/);
  });
});
