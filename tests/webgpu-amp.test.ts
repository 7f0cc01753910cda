// GradScaler with gradients on WebGPU (issue 24, AMP on the GPU): the unscale and inf/NaN check
// run on the GPU, one read per step (stepAsync), with the CPU scaler's steps, skips and scales.
// (float16 storage on the GPU is not here yet: autocast on 'webgpu' tensors is not covered.)

import { describe, it, expect, beforeAll } from 'vitest';
import { amp, F, initWebGpu, manualSeed, nn, optim, randn, tidy, webGpuDevice, DeviceError } from '@kiln/core';

describe('GradScaler on WebGPU', () => {
  beforeAll(async () => { await initWebGpu(); });

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
