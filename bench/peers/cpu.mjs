// Kiln against onnxruntime-web (wasm, SIMD), tfjs-backend-wasm and onnxruntime-node (native) on the CPU
// (`npm run bench:peers:cpu`, `--threads=N` (default 1), `--runs=N` (default 9), `--models=resnet,mlp`
// (a subset by name), `--gap=ms` (pause before each timed run, default 20)). Rows: the seed
// CNN at batch 1 and 32, an MLP 784-512-512-10 at batch 1 and 64, a small ResNet at batch 1 and
// 16 (./cpu-models.mjs) — Kiln eager, the traced graph run by the runtime's CPU device at -O0,
// -O2, -O2 without its memory plan (every intermediate allocated per run, no arena) and -O2 with
// constant 3×3 weights kept off Winograd F(4×4, 3×3) (KILN_WINOGRAD=0) — then
// each engine's peak RSS, Kiln's reported peak of intermediates with and without the arena, and
// Kiln's matmul GFLOP/s (512³, 1024³) on 1 and 2 threads.
// Invariants: every engine runs in its own child process (so peak RSS is per engine), the parent
// drives them one run at a time, round-robin with a rotating start, so load on the machine falls
// on all engines alike and the ratios come from one run; no row is timed before its output
// matched Kiln eager's within TOLERANCE; the same weights everywhere (./cpu-peers.mjs).

import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { summarize } from '../stats.mjs';

const TOLERANCE = 1e-3;
/** Warm-up per engine and row before timing: runs for WARM_MS (at least WARM_MIN runs, at most WARM_MAX). */
const WARM_MS = 1000, WARM_MIN = 3, WARM_MAX = 2000;
const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const threads = arg('threads', 1), runs = arg('runs', 9), GAP_MS = arg('gap', 20);
/** `--models=a,b`: only the models whose name contains one of these (case-insensitive); default all. */
const only = process.argv.find((a) => a.startsWith('--models='))?.split('=')[1]?.toLowerCase().split(',');
// With --threads above 1, also Kiln -O2 on one thread, in the same sweep (does the second core help?).
const ENGINES = ['kiln-eager', 'kiln-O0', 'kiln-O2', 'kiln-O2-no-plan', 'kiln-O2-no-winograd', ...(threads > 1 ? ['kiln-O2-1t'] : []), 'ort-wasm', 'tfjs-wasm', 'ort-node'];

// ---- child: one engine --------------------------------------------------------------------

/** The engine's runner per model: `load(name, weights)` then `run(name, x)` → flat output. */
async function engine(kind) {
  if (kind.startsWith('kiln')) {
    // Constant 3×3 weights on the direct/im2col conv instead of Winograd F(4×4, 3×3) (read when kiln loads).
    if (kind === 'kiln-O2-no-winograd') process.env.KILN_WINOGRAD = '0';
    const { setNumThreads, getNumThreads } = await import('kiln');
    const { createModel } = await import('@kiln/runtime');
    const { LEVELS, runPipeline } = await import('@kiln/compiler');
    const { MODELS, eager, traceBatchDynamic } = await import('./cpu-models.mjs');
    setNumThreads(kind === 'kiln-O2-1t' ? 1 : threads);
    const passes = { 'kiln-O0': LEVELS[0], 'kiln-O2': LEVELS[2], 'kiln-O2-1t': LEVELS[2], 'kiln-O2-no-winograd': LEVELS[2], 'kiln-O2-no-plan': LEVELS[2].filter((p) => p !== 'plan-memory') }[kind];
    const loaded = new Map();
    return {
      threads: getNumThreads(),
      load(name) {
        const { model } = MODELS[name].kiln();
        if (!passes) { loaded.set(name, { run: (x) => eager(model, x) }); return; }
        const compiled = createModel(runPipeline(traceBatchDynamic(model, MODELS[name].input), { passes }).graph);
        loaded.set(name, { run: (x) => compiled.runSync([x])[0].data, stats: () => compiled.stats });
      },
      run: (name, x) => loaded.get(name).run(x),
      stats: (name) => loaded.get(name).stats?.(),
    };
  }
  const { PEER_MODELS } = await import('./cpu-peers.mjs');
  const { toNhwc } = await import('./tfjs-models.mjs');
  if (kind === 'ort-wasm') {
    const ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = threads;
    ort.env.wasm.simd = true;
    ort.env.logLevel = 'error';
    const sessions = new Map();
    return {
      name: `onnxruntime-web ${ort.env.versions?.web ?? ''}`,
      get threads() { return ort.env.wasm.numThreads; },
      async load(name, weights) {
        sessions.set(name, await ort.InferenceSession.create(PEER_MODELS[name].onnx(weights), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' }));
      },
      async run(name, x) {
        const out = await sessions.get(name).run({ x: new ort.Tensor('float32', x.data, x.shape) });
        return out.logits.data.slice();
      },
    };
  }
  if (kind === 'ort-node') {
    // Native onnxruntime (its CPU execution provider): the reference the wasm engines are measured
    // against, on the same thread count.
    const ort = (await import('onnxruntime-node')).default;
    const sessions = new Map();
    return {
      name: `onnxruntime-node ${ort.env.versions?.node ?? ''}`.trim(),
      threads,
      async load(name, weights) {
        sessions.set(name, await ort.InferenceSession.create(PEER_MODELS[name].onnx(weights), { executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all' }));
      },
      async run(name, x) {
        const out = await sessions.get(name).run({ x: new ort.Tensor('float32', x.data, x.shape) });
        return out.logits.data.slice();
      },
    };
  }
  const path = await import('node:path');
  const { createRequire } = await import('node:module');
  const tf = await import('@tensorflow/tfjs-core');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  wasm.setWasmPaths(`${path.dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm/package.json'))}/dist/`);
  wasm.setThreadsCount(threads);
  if (!(await tf.setBackend('wasm'))) throw new Error('bench/peers/cpu: tfjs could not start its wasm backend');
  await tf.ready();
  const models = new Map();
  return {
    name: `tfjs-backend-wasm ${tf.version_core}`,
    threads: wasm.getThreadsCount(),
    load(name, weights) { models.set(name, { ...PEER_MODELS[name].tfjs(tf, weights), nhwc: PEER_MODELS[name].nhwc }); },
    prepare(name, x) { return models.get(name).nhwc ? toNhwc(x) : x; },
    async run(name, x) {
      const input = tf.tensor(x.data, x.shape, 'float32');
      const y = models.get(name).forward(input);
      const data = await y.data();
      input.dispose();
      y.dispose();
      return data;
    },
  };
}

/** The child's message loop: load, input, check, time, rss, gflops. */
async function child(kind) {
  const e = kind === 'gflops' ? null : await engine(kind);
  const inputs = new Map();
  const handle = async (m) => {
    switch (m.cmd) {
      case 'hello': return { name: e.name, threads: e.threads };
      case 'load': await e.load(m.model, m.weights); return {};
      case 'input': inputs.set(`${m.model}/${m.batch}`, e.prepare ? e.prepare(m.model, m.x) : m.x); return {};
      case 'check': {
        const out = await e.run(m.model, inputs.get(`${m.model}/${m.batch}`));
        return { out: Float32Array.from(out), stats: e.stats?.(m.model) };
      }
      case 'warm': {
        // Steady state before timing, alike for every engine: JIT tiers (Kiln's executor is
        // JavaScript) and caches settle over the first runs, so each engine runs for WARM_MS (V8
        // optimizes a function only after many calls: a small row needs hundreds of runs),
        // between WARM_MIN and WARM_MAX runs.
        const x = inputs.get(`${m.model}/${m.batch}`);
        const t0 = performance.now();
        for (let i = 0; i < WARM_MAX && (i < WARM_MIN || performance.now() - t0 < WARM_MS); i++) await e.run(m.model, x);
        return {};
      }
      case 'time': {
        const x = inputs.get(`${m.model}/${m.batch}`);
        const c0 = process.cpuUsage(), t0 = performance.now();
        await e.run(m.model, x);
        const ms = performance.now() - t0, c = process.cpuUsage(c0);
        return { ms, cpuMs: (c.user + c.system) / 1000 };
      }
      case 'rss': return { maxRss: process.resourceUsage().maxRSS * 1024 };
      case 'gflops': return { gflops: await gflops(m.threads) };
      default: throw new Error(`unknown command ${m.cmd}`);
    }
  };
  process.on('message', async (m) => {
    try { process.send({ ok: await handle(m) }); } catch (err) { process.send({ error: err?.stack ?? String(err) }); }
  });
  process.send({ ok: 'ready' });
}

/** Kiln matmul GFLOP/s at n = 512 and 1024 on `t` threads (medians). */
async function gflops(t) {
  const { randn, matmul, manualSeed, setNumThreads } = await import('kiln');
  const { timeRuns } = await import('../stats.mjs');
  setNumThreads(t);
  const out = {};
  for (const n of [512, 1024]) {
    manualSeed(1);
    const a = randn([n, n]), b = randn([n, n]);
    out[n] = (2 * n ** 3) / summarize(timeRuns(() => matmul(a, b), { warmup: 2, minRuns: 5, budgetMs: 2500 })).median / 1e6;
  }
  return out;
}

// ---- parent --------------------------------------------------------------------------------

/** A child process running `kind`, with `ask(msg)` → its answer. */
function start(kind) {
  const proc = fork(fileURLToPath(import.meta.url), [`--child=${kind}`, `--threads=${threads}`], { serialization: 'advanced', stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
  let pending = null;
  const ready = new Promise((resolve) => { pending = resolve; });
  proc.on('message', (m) => {
    const p = pending;
    pending = null;
    p?.(m);
  });
  proc.on('exit', (code) => { if (pending) pending({ error: `${kind} exited with ${code}` }); });
  const ask = async (msg) => {
    const r = new Promise((resolve) => { pending = resolve; });
    proc.send(msg);
    const m = await r;
    if (m.error) throw new Error(`bench/peers/cpu: ${kind}: ${m.error}`);
    return m.ok;
  };
  return { kind, proc, ready, ask };
}

async function main() {
  const { MODELS, eager } = await import('./cpu-models.mjs');
  const { setNumThreads } = await import('kiln');
  setNumThreads(threads);
  const children = ENGINES.map(start);
  await Promise.all(children.map((c) => c.ready));
  const info = await Promise.all(children.map((c) => c.ask({ cmd: 'hello' })));
  const label = (i) => ({ 'kiln-eager': 'Kiln eager', 'kiln-O0': 'Kiln -O0', 'kiln-O2': 'Kiln -O2', 'kiln-O2-no-plan': 'Kiln -O2, no plan', 'kiln-O2-no-winograd': 'Kiln -O2, no Winograd', 'kiln-O2-1t': 'Kiln -O2, 1 thread' }[ENGINES[i]] ?? info[i].name);
  const col = (k) => ENGINES.indexOf(k);
  const results = [];
  const peaks = [];
  for (const [name, def] of Object.entries(MODELS)) {
    if (only && !only.some((o) => name.toLowerCase().includes(o))) continue;
    const { model, weights } = def.kiln();
    for (const c of children) await c.ask({ cmd: 'load', model: name, weights: c.kind.startsWith('kiln') ? undefined : weights });
    for (const batch of def.batches) {
      process.stderr.write(`bench/peers/cpu: ${name}, batch ${batch}…\n`);
      const x = def.input(batch), want = eager(model, x);
      const stats = [];
      for (const [i, c] of children.entries()) {
        await c.ask({ cmd: 'input', model: name, batch, x });
        const { out, stats: s } = await c.ask({ cmd: 'check', model: name, batch });
        let d = out.length === want.length ? 0 : Infinity;
        for (let k = 0; k < out.length && d !== Infinity; k++) d = Math.max(d, Math.abs(out[k] - want[k]));
        if (!(d <= TOLERANCE)) throw new Error(`bench/peers/cpu: ${label(i)} on ${name} at batch ${batch} differs from Kiln eager by ${d}`);
        await c.ask({ cmd: 'warm', model: name, batch });
        stats[i] = s;
      }
      peaks.push({ name, batch, plan: stats[col('kiln-O2')]?.peakIntermediateBytes, noPlan: stats[col('kiln-O2-no-plan')]?.peakIntermediateBytes });
      const times = children.map(() => []), cpu = children.map(() => []);
      for (let r = 0; r < runs; r++) {
        for (let k = 0; k < children.length; k++) {
          const j = (r + k) % children.length;
          // A pause before each timed run: threads an engine keeps spinning after its run (onnxruntime's
          // pool, Kiln's workers) then sleep again, instead of taking a core from the next engine's run.
          await new Promise((resolve) => setTimeout(resolve, GAP_MS));
          const t = await children[j].ask({ cmd: 'time', model: name, batch });
          times[j].push(t.ms);
          cpu[j].push(t.cpuMs);
        }
      }
      results.push({ name, batch, med: times.map((t) => summarize(t).median), cpuMed: cpu.map((t) => summarize(t).median) });
    }
  }
  const rss = await Promise.all(children.map((c) => c.ask({ cmd: 'rss' })));
  for (const c of children) c.proc.kill();
  const flops = [];
  for (const t of [1, 2]) {
    const c = start('gflops');
    await c.ready;
    flops.push({ t, ...(await c.ask({ cmd: 'gflops', threads: t })).gflops });
    c.proc.kill();
  }

  const ms = (v) => `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ms`;
  const ratio = (a, b) => `${(a / b).toFixed(2)}×`;
  console.log(`| model, batch | ${ENGINES.map((_, i) => label(i)).join(' | ')} | -O2 vs ort-web | -O2 vs tfjs-wasm | -O2 vs ort-node | -O2 vs -O0 | -O2 vs eager | no plan vs -O2 | no Winograd vs -O2 |${threads > 1 ? ` -O2 ${threads} threads vs 1 |` : ''}`);
  console.log(`| --- |${' ---: |'.repeat(ENGINES.length + 7 + (threads > 1 ? 1 : 0))}`);
  for (const { name, batch, med } of results) {
    const o2 = med[col('kiln-O2')];
    console.log(`| ${name}, ${batch} | ${med.map(ms).join(' | ')} | ${ratio(med[col('ort-wasm')], o2)} | ${ratio(med[col('tfjs-wasm')], o2)} | ${ratio(med[col('ort-node')], o2)} | ${ratio(med[col('kiln-O0')], o2)} | ${ratio(med[col('kiln-eager')], o2)} | ${ratio(med[col('kiln-O2-no-plan')], o2)} | ${ratio(med[col('kiln-O2-no-winograd')], o2)} |${threads > 1 ? ` ${ratio(med[col('kiln-O2-1t')], o2)} |` : ''}`);
  }
  // CPU time of the engine's process per run (all its threads): on a loaded machine, where wall
  // time mostly measures waiting for a core, this is the steadier comparison (at --threads=1).
  console.log(`\n| model, batch (CPU time per run) | ${ENGINES.map((_, i) => label(i)).join(' | ')} | -O2 vs ort-web | -O2 vs tfjs-wasm | -O2 vs ort-node | -O2 vs -O0 | -O2 vs eager | no Winograd vs -O2 |`);
  console.log(`| --- |${' ---: |'.repeat(ENGINES.length + 6)}`);
  for (const { name, batch, cpuMed: med } of results) {
    const o2 = med[col('kiln-O2')];
    console.log(`| ${name}, ${batch} | ${med.map(ms).join(' | ')} | ${ratio(med[col('ort-wasm')], o2)} | ${ratio(med[col('tfjs-wasm')], o2)} | ${ratio(med[col('ort-node')], o2)} | ${ratio(med[col('kiln-O0')], o2)} | ${ratio(med[col('kiln-eager')], o2)} | ${ratio(med[col('kiln-O2-no-winograd')], o2)} |`);
  }
  const mib = (b) => (b / 2 ** 20).toFixed(1);
  console.log(`\n| engine | threads | peak RSS of its process (MiB) |\n| --- | ---: | ---: |`);
  ENGINES.forEach((_, i) => console.log(`| ${label(i)} | ${info[i].threads} | ${mib(rss[i].maxRss)} |`));
  const kib = (b) => (b / 1024).toFixed(1);
  console.log(`\n| model, batch | Kiln -O2 peak of intermediates: the arena (KiB) | without the plan (KiB) |\n| --- | ---: | ---: |`);
  for (const p of peaks) console.log(`| ${p.name}, ${p.batch} | ${kib(p.plan)} | ${kib(p.noPlan)} |`);
  console.log(`\n| Kiln matmul | 512³ GFLOP/s | 1024³ GFLOP/s |\n| --- | ---: | ---: |`);
  for (const f of flops) console.log(`| ${f.t} thread${f.t > 1 ? 's' : ''} | ${f[512].toFixed(1)} | ${f[1024].toFixed(1)} |`);
  console.log(`\n${runs} timed runs per cell after a warm-up of ${WARM_MS} ms (${WARM_MIN}–${WARM_MAX} runs) per engine and row, interleaved across engines with a pause of ${GAP_MS} ms before each, medians; ratios > 1 mean Kiln -O2 is faster ("no plan vs -O2" > 1 means the arena made -O2 faster; "-O2 N threads vs 1" > 1 means the other cores made -O2 faster). ` +
    `--threads=${threads}; node ${process.version}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}).`);
}

const childKind = process.argv.find((a) => a.startsWith('--child='))?.split('=')[1];
if (childKind) await child(childKind);
else await main();
