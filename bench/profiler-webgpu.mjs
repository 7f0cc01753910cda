// What profiling a compiled WebGPU run costs, side by side in one process, on the BUILT packages
// (`npm run build` first): the seed ResearchModel (-O2, batch 8) on two WebGPU devices, one made
// without timestamp queries and one with them (`load(..., { profile: true })`). Rounds interleave
// four cases — each device unprofiled, and each under profiler.profile (CPU-side 'synchronized'
// timing without timestamps, 'gpu' timing with them) — and print median wall ms per run, the
// ratio against the plain unprofiled run, the submits per run, and for the profiled cases the
// table's total against the run's wall time. Without a GPU, Dawn runs on SwiftShader (a CPU
// emulation of Vulkan): its absolute figures say nothing about a real GPU.
// `node bench/profiler-webgpu.mjs [--rounds N]`

import { mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { jit, manualSeed, profiler, randn } from 'kiln';
import { load } from '@kiln/runtime';
import { ResearchModel } from '../examples/seed/models.mjs';
import { summarize } from './stats.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const ROUNDS = Number(values.rounds);

manualSeed(0);
const model = new ResearchModel().eval();
const x = randn([8, 3, 32, 32]);
const bytes = jit.optimizeForInference(jit.trace(model, [x], { warn: false })).toBytes();
const input = [{ data: x.data, shape: [...x.shape], dtype: 'float32' }];
const plain = await load(bytes, { backend: 'webgpu' });
const timed = await load(bytes, { backend: 'webgpu', profile: true });

const cases = [
  { name: 'no timestamps, not profiled', m: plain, prof: false },
  { name: 'no timestamps, profiled (synchronized)', m: plain, prof: true },
  { name: 'timestamps, not profiled', m: timed, prof: false },
  { name: 'timestamps, profiled (gpu)', m: timed, prof: true },
];
for (const c of cases) { c.ms = []; c.submits = []; c.tableOverWall = []; c.timing = ''; await c.m.run(input); }
for (let r = 0; r < ROUNDS; r++) {
  for (const c of cases) {
    const s0 = c.m.device.stats.submits;
    const t0 = performance.now();
    if (c.prof) {
      const p = await profiler.profile({ activities: ['webgpu'] }, () => c.m.run(input));
      c.ms.push(performance.now() - t0);
      const run = p.events.find((e) => e.kind === 'run');
      c.tableOverWall.push(p.keyAverages().totalMs() / (run.endMs - run.startMs));
      c.timing = p.events.find((e) => e.kind === 'node').timing;
    } else {
      await c.m.run(input);
      c.ms.push(performance.now() - t0);
    }
    c.submits.push(c.m.device.stats.submits - s0);
  }
}
const base = summarize(cases[0].ms).median;
console.log(`ResearchModel -O2, batch 8, WebGPU (${ROUNDS} interleaved rounds; median wall ms per run)`);
console.log('| case | median ms | vs plain run | submits/run | table total / run wall |');
console.log('|---|---|---|---|---|');
for (const c of cases) {
  const med = summarize(c.ms).median;
  const tw = c.tableOverWall.length ? summarize(c.tableOverWall).median.toFixed(2) : '-';
  console.log(`| ${c.name} | ${med.toFixed(1)} | ${(med / base).toFixed(2)}x | ${summarize(c.submits).median} | ${tw} |`);
}
plain.device.destroy();
timed.device.destroy();
