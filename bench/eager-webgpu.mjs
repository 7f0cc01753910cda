// Eager training on WebGPU against eager CPU, side by side in one process, on the BUILT packages
// (`npm run build` first): the digits CNN (examples/digits) with Adam at batch 32, one training
// step = zeroGrad, forward, cross entropy, backward, step, and `await loss.itemAsync()`. Prints the
// median step time per device and their ratio, the submits and maps per step (steady state), and
// the pool's buffers created after step 1 and after the last step (the process runs with
// --expose-gc and collects after each step, so buffers return to the pool deterministically).
// Without a GPU the WebGPU rows run on SwiftShader, a CPU emulation of Vulkan: its absolute
// figures say nothing about a real GPU. `node --expose-gc bench/eager-webgpu.mjs [--steps N]`

import { mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { F, initWebGpu, manualSeed, memory, optim, tensor, webGpuDevice } from 'kiln';
import { digitsModel, loadDigits } from '../examples/digits/train.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

const { values } = parseArgs({ options: { steps: { type: 'string', default: '6' } } });
const STEPS = Number(values.steps), B = 32;
const gc = globalThis.gc ?? (() => {});
const collect = async () => { for (let i = 0; i < 2; i++) { gc(); await new Promise((r) => setTimeout(r, 0)); } };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const data = loadDigits();
const batch = (s) => ({
  x: tensor(data.x.slice(s * B * 64, (s + 1) * B * 64), { shape: [B, 1, 8, 8] }),
  y: tensor(data.y.slice(s * B, (s + 1) * B), { shape: [B] }),
});

await initWebGpu();
const dev = webGpuDevice();

async function train(where) {
  manualSeed(0);
  const model = digitsModel().to(where);
  const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
  const rows = [];
  for (let s = 0; s < STEPS; s++) {
    const b = batch(s % 40);
    const s0 = { ...dev.stats };
    const t0 = performance.now();
    opt.zeroGrad();
    const loss = F.crossEntropy(model.forward(b.x.to(where)), b.y.to(where));
    loss.backward();
    opt.step();
    const value = await loss.itemAsync();
    const ms = performance.now() - t0;
    rows.push({ ms, loss: value, submits: dev.stats.submits - s0.submits, maps: dev.stats.maps - s0.maps });
    await collect();
    rows[s].created = memory.stats('webgpu').buffersCreated;
  }
  return rows;
}

// Alternate the devices so machine load hits both alike.
const cpu = await train('cpu');
const gpu = await train('webgpu');
const steady = (rows) => rows.slice(2);
const cpuMs = median(steady(cpu).map((r) => r.ms)), gpuMs = median(steady(gpu).map((r) => r.ms));
const maxDiff = Math.max(...cpu.map((r, i) => Math.abs(r.loss - gpu[i].loss)));
console.log(`eager digits CNN, Adam, batch ${B}, ${STEPS} steps per device (median of steps 3..${STEPS})${globalThis.gc ? '' : ' — run with --expose-gc for deterministic buffer counts'}`);
console.log('| device | median step ms | vs CPU | submits/step | maps/step | pool buffers created, after each step |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(`| cpu | ${cpuMs.toFixed(1)} | 1.00× | – | – | – |`);
console.log(`| webgpu (${dev.gpu.adapterInfo?.description || dev.gpu.adapterInfo?.vendor || 'adapter'}) | ${gpuMs.toFixed(1)} | ${(gpuMs / cpuMs).toFixed(2)}× the time | ${median(steady(gpu).map((r) => r.submits))} | ${median(steady(gpu).map((r) => r.maps))} | ${gpu.map((r) => r.created).join(', ')} |`);
console.log(`largest per-step loss difference CPU vs WebGPU: ${maxDiff.toExponential(2)}`);
process.exit(0);
