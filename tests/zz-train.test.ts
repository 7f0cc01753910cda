import { it, expect } from 'vitest';
import { initWebGpu, tensor, memory, F, optim, manualSeed, webGpuDevice } from '@kiln/core';
// @ts-expect-error js
import { loadDigits, digitsModel } from '../examples/digits/train.mjs';
it('train', async () => {
  await initWebGpu();
  const data = loadDigits();
  const B = 32;
  const batch = (s: number) => ({ x: tensor(data.x.slice(s * B * 64, (s + 1) * B * 64), { shape: [B, 1, 8, 8] }), y: tensor(data.y.slice(s * B, (s + 1) * B), { shape: [B] }) });
  async function run(device: 'cpu' | 'webgpu', steps: number) {
    manualSeed(0);
    const model = digitsModel();
    if (device === 'webgpu') model.to('webgpu');
    const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
    const losses: number[] = [], stats: unknown[] = [];
    for (let s = 0; s < steps; s++) {
      const b = batch(s % 40);
      const t0 = performance.now();
      opt.zeroGrad();
      const loss = F.crossEntropy(model.forward(b.x.to(device)), b.y.to(device));
      loss.backward();
      opt.step();
      losses.push(await loss.itemAsync());
      if (device === 'webgpu') { const m = memory.stats(); stats.push([m.submits, m.buffersCreated, m.maps, Math.round(performance.now() - t0)]); }
    }
    return { losses, stats };
  }
  const cpu = await run('cpu', 8);
  const gpu = await run('webgpu', 8);
  console.log(cpu.losses, gpu.losses, gpu.stats);
}, 600_000);
