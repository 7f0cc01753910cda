// Load time of saved `.tsgraph` files on the CPU (`npm run bench:load`): a ResNet-18
// (torchvision's layout, 224×224, batch 1, random init, traced and -O2) — `load` plus the first
// `run`, then 5 more runs for the later-run time and the process's peak RSS — and a chain of
// 100,000 relu nodes — `load` alone; and the compile side of the same ResNet-18 from its source:
// `jit.script` (with a 1×3×224×224 example), `optimizeForInference` (-O2) and `toBytes` (save),
// the compiler's first import not counted (loading ts-morph, which the first jit.script call
// does, is counted). Each sample is a fresh node process
// (what a user starting a program pays: cold JIT, cold caches; the module imports are not
// counted), medians of several, as wall time and as the process's CPU time (user + system, all
// threads: steadier than wall time on a shared machine). Invariant: the files are built once per
// invocation into a temporary folder and removed at exit; nothing here asserts a time.
//
// With `--only webgpu` (not in the default set: slow on SwiftShader): the same ResNet-18 file on
// WebGPU — load, first and second run, and every pipeline's compile time and whether it was
// compiled at load (in parallel) or at first use (a stall of the first run).
//
// `node bench/load.mjs [--runs N] [--only resnet18|chain|script|webgpu]`; `--child FILE KIND` is the
// measuring child's entry (internal).

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMain, seededValues, summarize } from './stats.mjs';

const CHAIN_NODES = 100_000;
/** Runs of the ResNet-18 after its first, in the same child: the later-run time and the peak RSS. */
const STEADY_RUNS = 5;

/** Builds the ResNet-18 file (trace at batch 1, -O2) and returns its bytes. */
export async function resnet18Bytes() {
  const { jit, manualSeed, noGrad, tensor } = await import('kiln');
  const { ResNet18 } = await import('./realsize/models.mjs');
  manualSeed(0);
  const model = new ResNet18().eval();
  const x = tensor(seededValues(3 * 224 * 224, 7), { shape: [1, 3, 224, 224] });
  const traced = noGrad(() => jit.trace(model, [x]));
  return jit.optimizeForInference(traced).toBytes();
}

/** The bytes of a chain of `n` relu nodes over one input (built as issue 17 built it: no source locations). */
export async function chainBytes(n) {
  const { GraphBuilder, encodeTsgraph, tensorType } = await import('@kiln/ir-spec');
  const b = new GraphBuilder('chain');
  let x = b.input('x', tensorType('float32', [4]));
  for (let i = 0; i < n; i++) x = b.op1('relu', [x]);
  b.output('y', x);
  return encodeTsgraph(b.build());
}

/** The scripting child: imports first (not timed), the model built (not timed), then script, -O2 and save. */
async function scriptChild() {
  const { jit, manualSeed, tensor } = await import('kiln');
  const { ResNet18 } = await import('./realsize/models.mjs');
  manualSeed(0);
  const model = new ResNet18().eval();
  const x = tensor(seededValues(3 * 224 * 224, 7), { shape: [1, 3, 224, 224] });
  const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  const t0 = performance.now(), c0 = cpu();
  const scripted = jit.script(model, { inputs: [x] });
  const t1 = performance.now(), c1 = cpu();
  const fast = jit.optimizeForInference(scripted);
  const t2 = performance.now();
  const bytes = fast.toBytes();
  const t3 = performance.now(), c3 = cpu();
  console.log(JSON.stringify({ scriptMs: t1 - t0, o2Ms: t2 - t1, saveMs: t3 - t2, scriptCpuMs: c1 - c0, totalCpuMs: c3 - c0, bytes: bytes.byteLength }));
  process.exit(0);
}

/**
 * The WebGPU child (Dawn; SwiftShader where there is no GPU): load, the first run and a second,
 * and the device's pipeline compile times — were all compiled at load, in parallel, or did the
 * first run wait for some (`when: 'first-use'`)?
 */
async function webgpuChild(file) {
  process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
  process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
  mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });
  const { load } = await import('@kiln/runtime');
  const input = { data: seededValues(3 * 224 * 224, 7), shape: [1, 3, 224, 224], dtype: 'float32' };
  const t0 = performance.now();
  const model = await load(file, { backend: 'webgpu', maxRunMs: 600_000 });
  const t1 = performance.now();
  await model.run([input]);
  const t2 = performance.now();
  await model.run([input]);
  const t3 = performance.now();
  const s = model.device.stats;
  console.log(JSON.stringify({ loadMs: t1 - t0, firstRunMs: t2 - t1, secondRunMs: t3 - t2, compileMs: s.compileMs, compileTimes: s.compileTimes }));
  process.exit(0);
}

/** The measuring child: imports first (not timed), then load (+ the first run for a model). */
async function child(file, kind) {
  if (kind === 'script') return scriptChild();
  if (kind === 'webgpu') return webgpuChild(file);
  const { load } = await import('@kiln/runtime');
  const input = kind === 'resnet18'
    ? { data: seededValues(3 * 224 * 224, 7), shape: [1, 3, 224, 224], dtype: 'float32' }
    : { data: new Float32Array([1, -2, 3, -4]), shape: [4], dtype: 'float32' };
  // CPU time of this thread beside the wall time: on a loaded machine it moves far less.
  const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  const t0 = performance.now(), c0 = cpu();
  const model = await load(file, { backend: 'cpu' });
  const t1 = performance.now(), c1 = cpu();
  await model.run([input]);
  const t2 = performance.now(), c2 = cpu();
  // A model's later runs (the median of a few): what the first run's one-time work buys.
  const steady = [];
  for (let i = 0; kind === 'resnet18' && i < STEADY_RUNS; i++) {
    const a = performance.now(), ac = cpu();
    await model.run([input]);
    steady.push({ ms: performance.now() - a, cpuMs: cpu() - ac });
  }
  const mid = (f) => [...steady].map(f).sort((a, b) => a - b)[steady.length >> 1];
  console.log(JSON.stringify({
    loadMs: t1 - t0, firstRunMs: t2 - t1, loadCpuMs: c1 - c0, firstRunCpuMs: c2 - c1,
    steadyMs: steady.length ? mid((r) => r.ms) : 0, steadyCpuMs: steady.length ? mid((r) => r.cpuMs) : 0, peakRssMB: process.resourceUsage().maxRSS / 1e3,
  }));
  model.dispose?.();
  process.exit(0);
}

function childSamples(file, kind, runs) {
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', file, kind], { encoding: 'utf8', maxBuffer: 2 ** 26 });
    samples.push(JSON.parse(out.trim().split('\n').pop()));
  }
  return samples;
}

function measureChild(file, kind, runs) {
  const samples = childSamples(file, kind, runs);
  const med = (f) => summarize(samples.map(f)).median;
  return {
    load: med((r) => r.loadMs), first: med((r) => r.firstRunMs), total: med((r) => r.loadMs + r.firstRunMs),
    loadCpu: med((r) => r.loadCpuMs), totalCpu: med((r) => r.loadCpuMs + r.firstRunCpuMs),
    steady: med((r) => r.steadyMs), steadyCpu: med((r) => r.steadyCpuMs), peakRss: med((r) => r.peakRssMB),
  };
}

/** The per-pipeline compile times of the last `--only webgpu` measurement (one sample's), slowest first. */
let perKernel = [];

export async function measure({ runs = 5, only } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-load-'));
  const rows = {};
  try {
    if (!only || only === 'resnet18') {
      const file = join(dir, 'resnet18.tsgraph');
      const bytes = await resnet18Bytes();
      writeFileSync(file, bytes);
      const m = measureChild(file, 'resnet18', runs);
      rows['ResNet-18 224x224 -O2: file size (MB)'] = bytes.byteLength / 1e6;
      rows['ResNet-18: load (ms)'] = m.load;
      rows['ResNet-18: first run (ms)'] = m.first;
      rows['ResNet-18: load + first run (ms)'] = m.total;
      rows['ResNet-18: load + first run, CPU time (ms)'] = m.totalCpu;
      rows[`ResNet-18: later run, median of ${STEADY_RUNS} (ms)`] = m.steady;
      rows['ResNet-18: later run, CPU time (ms)'] = m.steadyCpu;
      rows['ResNet-18: process peak RSS (MB)'] = m.peakRss;
    }
    if (only === 'webgpu') {
      const file = join(dir, 'resnet18.tsgraph');
      writeFileSync(file, await resnet18Bytes());
      const samples = childSamples(file, 'webgpu', runs);
      const med = (f) => summarize(samples.map(f)).median;
      rows['ResNet-18 WebGPU: load (ms)'] = med((r) => r.loadMs);
      rows['ResNet-18 WebGPU: first run (ms)'] = med((r) => r.firstRunMs);
      rows['ResNet-18 WebGPU: second run (ms)'] = med((r) => r.secondRunMs);
      rows['ResNet-18 WebGPU: pipeline compile, wall (ms)'] = med((r) => r.compileMs);
      const times = samples[samples.length >> 1].compileTimes;
      const atLoad = times.filter((t) => t.when === 'load'), atFirst = times.filter((t) => t.when === 'first-use');
      rows['ResNet-18 WebGPU: pipelines compiled at load (count)'] = atLoad.length;
      rows['ResNet-18 WebGPU: pipelines compiled at first use (count)'] = atFirst.length;
      rows['ResNet-18 WebGPU: per-pipeline compile, sum (ms)'] = atLoad.reduce((a, t) => a + t.ms, 0);
      rows['ResNet-18 WebGPU: per-pipeline compile, median (ms)'] = summarize(atLoad.map((t) => t.ms)).median;
      perKernel = [...times].sort((a, b) => b.ms - a.ms);
    }
    if (!only || only === 'chain') {
      const file = join(dir, 'chain.tsgraph');
      const bytes = await chainBytes(CHAIN_NODES);
      writeFileSync(file, bytes);
      const m = measureChild(file, 'chain', runs);
      rows[`relu chain of ${CHAIN_NODES} nodes: file size (MB)`] = bytes.byteLength / 1e6;
      rows[`relu chain: load (ms)`] = m.load;
      rows[`relu chain: load, CPU time (ms)`] = m.loadCpu;
      rows[`relu chain: first run (ms)`] = m.first;
    }
    if (!only || only === 'script') {
      const samples = childSamples('-', 'script', runs);
      const med = (f) => summarize(samples.map(f)).median;
      rows['ResNet-18: jit.script (ms)'] = med((r) => r.scriptMs);
      rows['ResNet-18: jit.script, CPU time (ms)'] = med((r) => r.scriptCpuMs);
      rows['ResNet-18: script + -O2 + save (ms)'] = med((r) => r.scriptMs + r.o2Ms + r.saveMs);
      rows['ResNet-18: script + -O2 + save, CPU time (ms)'] = med((r) => r.totalCpuMs);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const argv = process.argv.slice(2);
  if (argv[0] === '--child') {
    await child(argv[1], argv[2]);
  } else {
    const arg = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
    const rows = await measure({ runs: Number(arg('--runs') ?? 5), only: arg('--only') });
    for (const [k, v] of Object.entries(rows)) console.log(`${k.padEnd(48)} ${v.toFixed(k.includes('MB') ? 2 : k.includes('count') ? 0 : 1)}`);
    if (perKernel.length) console.log(`per pipeline (name, when, ms), slowest first:\n${perKernel.map((t) => `  ${t.name.padEnd(40)} ${t.when.padEnd(9)} ${t.ms.toFixed(1)}`).join('\n')}`);
  }
}
