// The real-size benchmark (`npm run bench:realsize`, issue 15): torchvision's ResNet-18 at
// 224×224 (batch 1 and 8) and a 6-layer transformer encoder (d_model 512, 8 heads, ffn 2048,
// sequence 128, batch 1), each in Kiln (the CPU device running the saved -O2 `.tsgraph`, and
// WebGPU from the same file), onnxruntime-node (CPU EP), onnxruntime-web (wasm, the same thread
// count) and onnxruntime-web's WebGPU EP on the Dawn GPU ./../peers/gpu.mjs installs. Columns:
// median latency, each engine's process peak RSS, file size (.tsgraph / .onnx / float32
// weights), Kiln's compile time (trace, -O2, save) and every engine's load time and first run
// (one engine at a time: its load, then its first run at the first batch); then Kiln WebGPU's
// pipeline compile times (per kernel, parallel at load).
//
// Flags: --threads=N (default 1), --runs=N timed CPU runs per cell (default 5), --gpu-runs=N
// (default 3), --gpu-batches=1 (the batches the WebGPU engines run; SwiftShader, the CPU Vulkan
// of machines without a GPU, takes minutes per ResNet-18 run at batch 8: pass --gpu-batches=1,8 on
// a real GPU), --models=resnet18,transformer, --no-gpu (skip both WebGPU engines).
//
// Invariants: the PyTorch models, their ONNX export and state dict come from ./generate.py,
// written into bench/realsize/.cache at benchmark time (regenerated when generate.py changes);
// Kiln's module is loaded from that state dict (strict keys) in a child process that traces,
// optimizes and saves it, and every engine then runs in its own child process (one per model,
// so peak RSS is per engine and model); runs are interleaved round-robin with a rotating start
// so load on the machine falls on all engines alike; no engine is timed before its output was
// compared with onnxruntime-node's (max abs diff printed, within TOLERANCE × the output's scale).

import { createHash } from 'node:crypto';
import { fork, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { seededValues, summarize } from '../stats.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const CACHE = join(HERE, '.cache');
const TOLERANCE = 2e-3;
const argv = process.argv.slice(2);
const flag = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const threads = Number(flag('threads') ?? 1), runs = Number(flag('runs') ?? 5), gpuRuns = Number(flag('gpu-runs') ?? 3);
const noGpu = argv.includes('--no-gpu');
const gpuBatches = (flag('gpu-batches') ?? '1').split(',').map(Number);
const ALL_ENGINES = ['kiln-cpu', 'kiln-webgpu', 'ort-node', 'ort-wasm', 'ort-webgpu'];
const ENGINES = ALL_ENGINES.filter((e) => !noGpu || !e.endsWith('webgpu'));
const LABEL = { 'kiln-cpu': 'Kiln CPU -O2 (.tsgraph)', 'kiln-webgpu': 'Kiln WebGPU -O2 (.tsgraph)', 'ort-node': 'onnxruntime-node (CPU)', 'ort-wasm': 'onnxruntime-web wasm', 'ort-webgpu': 'onnxruntime-web WebGPU' };
const isGpu = (e) => e.endsWith('webgpu');
const tsgraphPath = (model) => join(CACHE, `${model}.tsgraph`);

/** A deterministic input of `shape` (the same data in every process). */
function input(shape, seed) {
  return { data: seededValues(shape.reduce((a, d) => a * d, 1), seed), shape, dtype: 'float32' };
}

// ---- child processes ---------------------------------------------------------------------

/** Kiln: the module from the PyTorch state dict, traced, optimized (-O2) and saved, timed per stage. */
async function compileChild(model) {
  const { jit, noGrad, randn, setNumThreads } = await import('kiln');
  const { REALSIZE_MODELS } = await import('./models.mjs');
  setNumThreads(threads);
  const def = REALSIZE_MODELS[model];
  const t = [performance.now()];
  const m = def.build();
  m.loadSafetensors(readFileSync(join(CACHE, `${model}.safetensors`)));
  m.eval();
  t.push(performance.now());
  const traced = noGrad(() => jit.trace(m, [randn(def.shape(1))], def.dynamicBatch ? { dynamicAxes: { 0: { 0: 'N' } }, warn: false } : { warn: false }));
  t.push(performance.now());
  const optimized = jit.optimizeForInference(traced);
  t.push(performance.now());
  await optimized.save(tsgraphPath(model));
  t.push(performance.now());
  return { buildMs: t[1] - t[0], traceMs: t[2] - t[1], optimizeMs: t[3] - t[2], saveMs: t[4] - t[3], maxRss: process.resourceUsage().maxRSS * 1024 };
}

/** One engine's `load()` and `run(x)` → flat float32 output, for one model. */
async function engine(kind, model) {
  if (kind === 'kiln-cpu' || kind === 'kiln-webgpu') {
    if (kind === 'kiln-webgpu') await (await import('../peers/gpu.mjs')).installGpu();
    const { load, setNumThreads } = await import('@kiln/runtime');
    setNumThreads(threads);
    let m;
    return {
      async load() { m = await load(tsgraphPath(model), { backend: kind === 'kiln-cpu' ? 'cpu' : 'webgpu', maxRunMs: 600_000 }); },
      async run(x) { return (await m.run([x]))[0].data; },
      info() {
        const s = m.device.stats;
        return kind === 'kiln-webgpu' ? { compileMs: s.compileMs, compileTimes: s.compileTimes, kernels: s.kernelsCreated } : {};
      },
    };
  }
  const onnx = join(CACHE, `${model}.onnx`);
  if (kind === 'ort-node') {
    const ort = (await import('onnxruntime-node')).default;
    let s;
    return {
      async load() { s = await ort.InferenceSession.create(onnx, { executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all' }); },
      async run(x) { return (await s.run({ x: new ort.Tensor('float32', x.data, x.shape) })).y.data.slice(); },
    };
  }
  if (kind === 'ort-webgpu') await (await import('../peers/gpu.mjs')).installGpu();
  const ort = await import(kind === 'ort-webgpu' ? 'onnxruntime-web/webgpu' : 'onnxruntime-web');
  ort.env.wasm.numThreads = kind === 'ort-webgpu' ? 1 : threads;
  ort.env.wasm.simd = true;
  ort.env.logLevel = 'error';
  let s;
  return {
    async load() { s = await ort.InferenceSession.create(readFileSync(onnx), { executionProviders: [kind === 'ort-webgpu' ? 'webgpu' : 'wasm'], graphOptimizationLevel: 'all' }); },
    async run(x) {
      const t = new ort.Tensor('float32', x.data, x.shape);
      const out = await s.run({ x: t });
      const data = out.y.data.slice();
      t.dispose?.();
      out.y.dispose?.();
      return data;
    },
  };
}

/** A child's message loop: load (timed), input, first (timed, with the output), time, info, rss. */
async function child(role, kind, model) {
  if (role === 'compile') {
    process.send({ ok: await compileChild(model) });
    return;
  }
  const e = await engine(kind, model);
  const inputs = new Map();
  const handle = async (m) => {
    switch (m.cmd) {
      case 'load': { const t0 = performance.now(); await e.load(); return { ms: performance.now() - t0 }; }
      case 'input': inputs.set(m.batch, m.x); return {};
      case 'first': { const t0 = performance.now(); const out = await e.run(inputs.get(m.batch)); return { ms: performance.now() - t0, out: Float32Array.from(out) }; }
      case 'time': { const t0 = performance.now(); await e.run(inputs.get(m.batch)); return { ms: performance.now() - t0 }; }
      case 'info': return e.info?.() ?? {};
      case 'rss': return { maxRss: process.resourceUsage().maxRSS * 1024 };
      default: throw new Error(`unknown command ${m.cmd}`);
    }
  };
  process.on('message', async (m) => {
    try { process.send({ ok: await handle(m) }); } catch (err) { process.send({ error: err?.stack ?? String(err) }); }
  });
  process.send({ ok: 'ready' });
}

// ---- parent ------------------------------------------------------------------------------

/** A child process, with `ask(msg)` → its answer and `first` → its first message. */
function start(args, what) {
  const proc = fork(fileURLToPath(import.meta.url), [...args, `--threads=${threads}`], { serialization: 'advanced', stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
  let pending = null;
  const settle = (m) => { const p = pending; pending = null; p?.(m); };
  const first = new Promise((resolve) => { pending = resolve; });
  proc.on('message', settle);
  proc.on('exit', (code) => settle({ error: `${what} exited with ${code}` }));
  const unwrap = (m) => { if (m.error) throw new Error(`bench/realsize: ${what}: ${m.error}`); return m.ok; };
  const ask = async (msg) => {
    const r = new Promise((resolve) => { pending = resolve; });
    proc.send(msg);
    return unwrap(await r);
  };
  return { proc, ask, first: first.then(unwrap) };
}

/** Writes the PyTorch models into the cache unless it holds this generate.py's output. */
function ensureCache() {
  const script = join(HERE, 'generate.py');
  const stamp = join(CACHE, 'generator.sha256');
  const hash = createHash('sha256').update(readFileSync(script)).digest('hex');
  const have = existsSync(stamp) && readFileSync(stamp, 'utf8') === hash;
  if (have && Object.keys(JSON.parse(readFileSync(join(CACHE, 'manifest.json'), 'utf8')).models).length) return;
  mkdirSync(CACHE, { recursive: true });
  process.stderr.write('bench/realsize: generating the PyTorch models (python3 bench/realsize/generate.py)…\n');
  const r = spawnSync('python3', [script, CACHE], { stdio: 'inherit' });
  if (r.status !== 0) {
    throw new Error('bench/realsize: generate.py failed; it needs Debian\'s python3-torch, python3-torchvision and python3-onnx (apt-get install them)');
  }
  writeFileSync(stamp, hash);
}

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return { d: Infinity, scale: 0 };
  let d = 0, scale = 0;
  for (let i = 0; i < a.length; i++) { d = Math.max(d, Math.abs(a[i] - b[i])); scale = Math.max(scale, Math.abs(b[i])); }
  return { d, scale };
}

async function benchModel(name, manifest) {
  const { REALSIZE_MODELS } = await import('./models.mjs');
  const def = REALSIZE_MODELS[name];
  process.stderr.write(`bench/realsize: ${name}: Kiln trace + -O2 + save…\n`);
  const compiler = start(['--role=compile', `--model=${name}`], `compile ${name}`);
  const compile = await compiler.first;
  compiler.proc.kill();
  const all = ENGINES.map((kind) => ({ kind, ...start(['--role=engine', `--engine=${kind}`, `--model=${name}`], `${kind} on ${name}`) }));
  await Promise.all(all.map((c) => c.first));
  const loadMs = {}, firstMs = {}, diffs = [], lat = {}, failed = {};
  // An engine that cannot load or run the model (an EP without an op) gets a row saying why;
  // onnxruntime-node, the reference, must work.
  const attempt = async (c, fn) => {
    if (failed[c.kind]) return undefined;
    try { return await fn(); } catch (e) {
      if (c.kind === 'ort-node') throw e;
      failed[c.kind] = String(e.message).split('\n').find((l) => /error/i.test(l))?.slice(0, 200) ?? String(e.message).slice(0, 200);
      process.stderr.write(`bench/realsize: ${LABEL[c.kind]} failed on ${name}: ${e.message}\n`);
      c.proc.kill();
      return undefined;
    }
  };
  const live = (batch) => all.filter((c) => !failed[c.kind] && (batch === undefined || !isGpu(c.kind) || gpuBatches.includes(batch)));
  // Each engine's load and then its first run at the first batch, one engine at a time, as a
  // user's program does them: no load or first run competes with another engine's for the CPU
  // (an engine loaded earlier may still be compiling in the background while a later one runs).
  const firstOuts = {};
  const first = async (c, batch, x) => attempt(c, async () => { await c.ask({ cmd: 'input', batch, x }); return c.ask({ cmd: 'first', batch }); });
  const x0 = input(def.shape(def.batches[0]), 1000 + def.batches[0]);
  for (const c of all) {
    loadMs[c.kind] = (await attempt(c, () => c.ask({ cmd: 'load' })))?.ms;
    if (!live(def.batches[0]).includes(c)) continue;
    const r = await first(c, def.batches[0], x0);
    if (r) { firstMs[c.kind] = r.ms; firstOuts[c.kind] = r.out; }
  }
  for (const batch of def.batches) {
    process.stderr.write(`bench/realsize: ${name}, batch ${batch}: first runs and checks…\n`);
    const x = batch === def.batches[0] ? x0 : input(def.shape(batch), 1000 + batch);
    const outs = batch === def.batches[0] ? firstOuts : {};
    for (const c of live(batch)) {
      if (batch === def.batches[0]) continue;
      const r = await first(c, batch, x);
      if (r) outs[c.kind] = r.out;
    }
    for (const c of live(batch)) {
      if (c.kind === 'ort-node') continue;
      const { d, scale } = maxAbsDiff(outs[c.kind], outs['ort-node']);
      diffs.push({ batch, kind: c.kind, d, scale });
      // A wrong output is never timed: the engine's row says by how much it differed.
      if (!(d <= TOLERANCE * Math.max(1, scale))) {
        failed[c.kind] = `output differs from onnxruntime-node's by ${d} at batch ${batch} (outputs up to ${scale.toFixed(3)})`;
        process.stderr.write(`bench/realsize: ${LABEL[c.kind]} on ${name}: ${failed[c.kind]}\n`);
        c.proc.kill();
      }
    }
    process.stderr.write(`bench/realsize: ${name}, batch ${batch}: timing…\n`);
    const children = live(batch);
    const times = Object.fromEntries(children.map((c) => [c.kind, []]));
    for (let r = 0; r < Math.max(runs, gpuRuns); r++) {
      for (let k = 0; k < children.length; k++) {
        const c = children[(r + k) % children.length];
        if (r >= (isGpu(c.kind) ? gpuRuns : runs)) continue;
        const t = await attempt(c, () => c.ask({ cmd: 'time', batch }));
        if (t) times[c.kind].push(t.ms);
      }
    }
    lat[batch] = Object.fromEntries(Object.entries(times).filter(([, t]) => t.length).map(([k, t]) => [k, summarize(t).median]));
  }
  const rss = {}, info = {};
  for (const c of live()) { rss[c.kind] = (await c.ask({ cmd: 'rss' })).maxRss; info[c.kind] = await c.ask({ cmd: 'info' }); c.proc.kill(); }
  const files = { tsgraph: statSync(tsgraphPath(name)).size, onnx: statSync(join(CACHE, `${name}.onnx`)).size, weights: manifest.models[name].float32WeightBytes };
  return { name, def, compile, failed, loadMs, firstMs, diffs, lat, rss, info, files, parameters: manifest.models[name].parameters };
}

function report(r) {
  const ms = (v) => (v === undefined ? '—' : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ms`);
  const mb = (b) => (b === undefined ? '—' : `${(b / 1e6).toFixed(1)} MB`);
  const c = r.compile;
  const shape = r.def.shape('N').join('×');
  console.log(`\n### ${r.name} (${(r.parameters / 1e6).toFixed(1)}M parameters, input ${shape}; float32 weights ${mb(r.files.weights)})\n`);
  const batches = r.def.batches;
  console.log(`| engine | ${batches.map((b) => `latency, batch ${b}`).join(' | ')} | peak RSS | file | compile | load | first run (batch ${batches[0]}) | load + first run |`);
  console.log(`| --- |${' ---: |'.repeat(batches.length + 6)}`);
  for (const kind of ENGINES) {
    if (r.failed[kind]) { console.log(`| ${LABEL[kind]} | failed: ${r.failed[kind].replaceAll('|', '/')} |`); continue; }
    const kiln = kind.startsWith('kiln');
    const file = kiln ? `${mb(r.files.tsgraph)} .tsgraph` : `${mb(r.files.onnx)} .onnx`;
    const compile = kiln ? ms(c.traceMs + c.optimizeMs + c.saveMs) : '—';
    console.log(`| ${LABEL[kind]} | ${batches.map((b) => ms(r.lat[b][kind])).join(' | ')} | ${mb(r.rss[kind])} | ${file} | ${compile} | ${ms(r.loadMs[kind])} | ${ms(r.firstMs[kind])} | ${r.firstMs[kind] === undefined ? '—' : ms(r.loadMs[kind] + r.firstMs[kind])} |`);
  }
  console.log(`\nKiln compile (one child process, shared by both Kiln rows): state dict ${ms(c.buildMs)} (build + loadSafetensors), trace ${ms(c.traceMs)}, optimizeForInference ${ms(c.optimizeMs)}, save ${ms(c.saveMs)}; ` +
    `that process's peak RSS ${mb(c.maxRss)}. .tsgraph / float32 weights: ${(r.files.tsgraph / r.files.weights).toFixed(3)}×; .onnx / weights: ${(r.files.onnx / r.files.weights).toFixed(3)}×.`);
  console.log(`Max abs diff vs onnxruntime-node: ${r.diffs.map((d) => `${LABEL[d.kind]} (batch ${d.batch}) ${d.d.toExponential(1)}`).join(', ')} (outputs up to ${Math.max(...r.diffs.map((d) => d.scale)).toFixed(2)}).`);
  const gpu = r.info['kiln-webgpu'];
  if (gpu?.compileTimes) {
    const load = gpu.compileTimes.filter((t) => t.when === 'load');
    const slow = [...load].sort((a, b) => b.ms - a.ms).slice(0, 5);
    const sum = load.reduce((a, t) => a + t.ms, 0);
    const first = gpu.compileTimes.filter((t) => t.when === 'first-use');
    console.log(`Kiln WebGPU pipelines: ${load.length} compiled in parallel at load in ${ms(gpu.compileMs)} wall (per-kernel times sum to ${ms(sum)}; median ${ms(summarize(load.map((t) => t.ms)).median)}); ` +
      `slowest: ${slow.map((t) => `${t.name} ${ms(t.ms)}`).join(', ')}; compiled at first use: ${first.length ? first.map((t) => `${t.name} ${ms(t.ms)}`).join(', ') : 'none'}.`);
  }
}

async function main() {
  ensureCache();
  const manifest = JSON.parse(readFileSync(join(CACHE, 'manifest.json'), 'utf8'));
  const names = (flag('models') ?? 'resnet18,transformer').split(',');
  for (const name of names) report(await benchModel(name, manifest)); // each table as soon as its model is done
  const gpuName = noGpu ? null : await (await import('../peers/gpu.mjs')).adapterName();
  console.log(`\nMedians of ${runs} timed runs per CPU cell and ${gpuRuns} per WebGPU cell, interleaved across engines after one untimed first run; ` +
    `${noGpu ? '' : `the WebGPU engines ran batch ${gpuBatches.join(', ')} only (— elsewhere); `}--threads=${threads} for Kiln, onnxruntime-node (intra-op) and onnxruntime-web wasm; peak RSS is each engine's own process over the whole model (load, both batches). ` +
    `PyTorch ${manifest.torch}, torchvision ${manifest.torchvision}, ONNX opset ${manifest.opset}; node ${process.version}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), ` +
    `load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}${gpuName ? `; WebGPU adapter: ${gpuName}` : ''}.`);
  process.exit(0);
}

const role = flag('role');
if (role) await child(role, flag('engine'), flag('model'));
else await main();
