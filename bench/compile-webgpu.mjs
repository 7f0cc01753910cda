// jit.compile on WebGPU against eager WebGPU, side by side in one process, on the BUILT packages
// (`npm run build` first): eager, `jit.compile(m)` and `jit.compile(m, { mode: 'reduce-overhead' })`
// (each graph's first run recorded, then replayed) called in rotation, medians per form:
// - inference at batch 1 (the seed CNN, an MLP 784-512-512-10): the host time to issue one call
//   (nothing waited for: what the JavaScript side costs) and the time of a call with
//   `synchronize()` (the GPU's work included), plus the dispatches each call records;
// - one digits CNN training step (forward, cross entropy, backward, Adam) at batch 32, ending
//   with `await loss.itemAsync()`, and the host time to issue it (everything before that await).
// Without a GPU this runs on SwiftShader, a CPU emulation of Vulkan: the host-time rows carry
// over to a real GPU, the synchronized ones say little about one. `node bench/compile-webgpu.mjs
// [--calls N] [--steps N]`

import { mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { F, initWebGpu, jit, manualSeed, nn, noGrad, optim, randn, synchronize, tensor, webGpuDevice } from 'kiln';
import { digitsModel, loadDigits } from '../examples/digits/train.mjs';
import { ResearchModel } from '../examples/seed/models.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

const { values } = parseArgs({ options: { calls: { type: 'string', default: '40' }, steps: { type: 'string', default: '6' } } });
const CALLS = Number(values.calls), STEPS = Number(values.steps);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const FORMS = ['eager', 'jit.compile', "jit.compile 'reduce-overhead'"];

await initWebGpu();
const dev = webGpuDevice();

function forms(make) {
  return FORMS.map((name, i) => {
    const m = make();
    return { name, net: i === 0 ? m : jit.compile(m, i === 2 ? { mode: 'reduce-overhead' } : {}), model: m };
  });
}

async function inference(label, make, x) {
  const fs = forms(() => make().to('webgpu').eval());
  const issue = fs.map(() => []), synced = fs.map(() => []), dispatches = fs.map(() => 0);
  for (const f of fs) { for (let i = 0; i < 3; i++) noGrad(() => f.net.forward(x)); await synchronize(); }
  for (let r = 0; r < CALLS; r++) {
    for (let k = 0; k < fs.length; k++) {
      const f = fs[(k + r) % fs.length], at = fs.indexOf(f);
      const d0 = dev.stats.dispatches, t0 = performance.now();
      noGrad(() => f.net.forward(x));
      issue[at].push(performance.now() - t0);
      dispatches[at] = dev.stats.dispatches - d0;
      await synchronize();
      synced[at].push(performance.now() - t0);
    }
  }
  return fs.map((f, k) => ({ model: label, form: f.name, 'issue ms': median(issue[k]), 'call + sync ms': median(synced[k]), dispatches: dispatches[k] }));
}

async function training() {
  const data = loadDigits();
  const batches = Array.from({ length: 4 }, (_, s) => ({
    x: tensor(data.x.slice(s * 32 * 64, (s + 1) * 32 * 64), { shape: [32, 1, 8, 8] }).to('webgpu'),
    y: tensor(data.y.slice(s * 32, (s + 1) * 32), { shape: [32] }).to('webgpu'),
  }));
  const fs = forms(() => { manualSeed(0); return digitsModel().to('webgpu').train(); });
  const opts = fs.map((f) => new optim.Adam(f.model.parameters(), { lr: 1e-3 }));
  const times = fs.map(() => []), issue = fs.map(() => []), first = [];
  let s = 0;
  const step = async (k) => {
    const b = batches[s++ % batches.length];
    const t0 = performance.now();
    opts[k].zeroGrad();
    const loss = F.crossEntropy(fs[k].net.forward(b.x), b.y);
    loss.backward();
    opts[k].step();
    issue[k].push(performance.now() - t0);
    await loss.itemAsync();
  };
  for (let k = 0; k < fs.length; k++) { const t0 = performance.now(); await step(k); first.push(performance.now() - t0); await step(k); issue[k].length = 0; }
  for (let r = 0; r < STEPS; r++) {
    for (let j = 0; j < fs.length; j++) {
      const k = (j + r) % fs.length, t0 = performance.now();
      await step(k);
      times[k].push(performance.now() - t0);
    }
  }
  return fs.map((f, k) => ({ model: 'digits train step b32', form: f.name, 'issue ms': median(issue[k]), 'step ms': median(times[k]), 'first step ms (incl. compile)': first[k] }));
}

manualSeed(1);
const rows = [
  ...await inference('seed CNN b1', () => { manualSeed(1); return new ResearchModel(); }, randn([1, 3, 32, 32], { device: 'webgpu' })),
  ...await inference('MLP 784-512-512-10 b1', () => { manualSeed(1); return new nn.Sequential(new nn.Linear(784, 512), new nn.ReLU(), new nn.Linear(512, 512), new nn.ReLU(), new nn.Linear(512, 10)); }, randn([1, 784], { device: 'webgpu' })),
];
const eagerOf = (m, key) => rows.find((r) => r.model === m && r.form === 'eager')[key];
for (const r of rows) { r['eager / this (issue)'] = eagerOf(r.model, 'issue ms') / r['issue ms']; r['eager / this (sync)'] = eagerOf(r.model, 'call + sync ms') / r['call + sync ms']; }
console.table(rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'number' && !Number.isInteger(v) ? Number(v.toFixed(3)) : v]))));
const train = await training();
for (const r of train) { r['eager / this (issue)'] = train[0]['issue ms'] / r['issue ms']; r['eager / this (step)'] = train[0]['step ms'] / r['step ms']; }
console.table(train.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'number' ? Number(v.toFixed(2)) : v]))));
