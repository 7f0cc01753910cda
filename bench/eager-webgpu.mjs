// Eager training on WebGPU against eager CPU, side by side in one process, on the BUILT packages
// (`npm run build` first): the digits CNN (examples/digits) with Adam at batch 32, one training
// step = zeroGrad, forward, cross entropy, backward, step, and `await loss.itemAsync()`. Prints the
// median step time per device and their ratio, the submits and maps per step (steady state), and
// the pool's buffers created after each step and the bytes allocated between steps / the peak.
// Each step runs in tidy() and disposes its loss, so buffers return to the pool deterministically,
// without the garbage collector (no --expose-gc).
// Without a GPU the WebGPU rows run on SwiftShader, a CPU emulation of Vulkan: its absolute
// figures say nothing about a real GPU. `node bench/eager-webgpu.mjs [--steps N]`

import { mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { amp, F, initWebGpu, manualSeed, memory, optim, tensor, tidy, webGpuDevice } from 'kiln';
import { digitsModel, loadDigits } from '../examples/digits/train.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

const { values } = parseArgs({ options: { steps: { type: 'string', default: '6' } } });
const STEPS = Number(values.steps), B = 32;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const data = loadDigits();
const batch = (s) => ({
  x: tensor(data.x.slice(s * B * 64, (s + 1) * B * 64), { shape: [B, 1, 8, 8] }),
  y: tensor(data.y.slice(s * B, (s + 1) * B), { shape: [B] }),
});

await initWebGpu();
const dev = webGpuDevice();

/** `mixed`: autocast (float16) forward and GradScaler, whose inf check is one read per step (stepAsync). */
async function train(where, mixed = false) {
  manualSeed(0);
  const model = digitsModel().to(where);
  const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
  const scaler = new amp.GradScaler();
  if (where === 'webgpu') memory.resetPeakStats('webgpu');
  const rows = [];
  for (let s = 0; s < STEPS; s++) {
    const b = batch(s % 40);
    const s0 = { ...dev.stats };
    const t0 = performance.now();
    const loss = tidy(() => {
      opt.zeroGrad();
      if (!mixed) {
        const l = F.crossEntropy(model.forward(b.x.to(where)), b.y.to(where));
        l.backward();
        opt.step();
        return l;
      }
      const l = amp.autocast(() => F.crossEntropy(model.forward(b.x.to(where)), b.y.to(where)));
      scaler.scale(l).backward();
      return l;
    });
    if (mixed) { await scaler.stepAsync(opt); scaler.update(); }
    const value = await loss.itemAsync();
    loss.dispose();
    const ms = performance.now() - t0;
    const m = memory.stats('webgpu');
    rows.push({ ms, loss: value, submits: dev.stats.submits - s0.submits, maps: dev.stats.maps - s0.maps, created: m.buffersCreated, allocated: m.allocated, peak: m.peak });
  }
  return rows;
}

// Alternate the devices so machine load hits both alike.
const cpu = await train('cpu');
const gpu = await train('webgpu');
const half = await train('webgpu', true);
const steady = (rows) => rows.slice(2);
const cpuMs = median(steady(cpu).map((r) => r.ms)), gpuMs = median(steady(gpu).map((r) => r.ms));
const maxDiff = Math.max(...cpu.map((r, i) => Math.abs(r.loss - gpu[i].loss)));
console.log(`eager digits CNN, Adam, batch ${B}, ${STEPS} steps per device in tidy(), no gc (median of steps 3..${STEPS})`);
console.log('| device | median step ms | vs CPU | submits/step | maps/step | pool buffers created, after each step |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(`| cpu | ${cpuMs.toFixed(1)} | 1.00× | – | – | – |`);
console.log(`| webgpu (${dev.gpu.adapterInfo?.description || dev.gpu.adapterInfo?.vendor || 'adapter'}) | ${gpuMs.toFixed(1)} | ${(gpuMs / cpuMs).toFixed(2)}× the time | ${median(steady(gpu).map((r) => r.submits))} | ${median(steady(gpu).map((r) => r.maps))} | ${gpu.map((r) => r.created).join(', ')} |`);
const halfMs = median(steady(half).map((r) => r.ms));
console.log(`| webgpu, autocast float16 + GradScaler | ${halfMs.toFixed(1)} | ${(halfMs / cpuMs).toFixed(2)}× the time | ${median(steady(half).map((r) => r.submits))} | ${median(steady(half).map((r) => r.maps))} | ${half.map((r) => r.created).join(', ')} |`);
console.log(`largest per-step loss difference CPU vs WebGPU: ${maxDiff.toExponential(2)}; float32 vs autocast on WebGPU: ${Math.max(...gpu.map((r, i) => Math.abs(r.loss - half[i].loss))).toExponential(2)}`);
for (const [name, rows] of [['webgpu', gpu], ['webgpu autocast', half]]) {
  console.log(`${name}: bytes allocated between steps ${rows[rows.length - 1].allocated}; peak during its run ${rows[rows.length - 1].peak}`);
}
console.log(`reserved by the pool at the end: ${memory.stats('webgpu').reserved} bytes`);
process.exit(0);
