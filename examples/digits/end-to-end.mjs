// The digits model from training to the runtime alone: train eagerly (train.mjs), compile
// (jit.script, or jit.trace when the scripter refuses the model), optimize (-O2), save
// `digits.tsgraph`, load it with `@kiln/runtime` only and run the 360 test images on the CPU (and
// on WebGPU when the file carries WGSL kernels and an adapter exists). Invariant checked on every
// run: the runtime's predictions (argmax) equal eager's on all test images, and its logits stay
// within 1e-5 relative of eager's; the demo throws when they do not. Plain Node ESM importing only
// from 'kiln' and '@kiln/runtime' (`npm run demo`; tests/digits-e2e.test.ts runs it too).

import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { jit, noGrad, tensor } from 'kiln';
import { load, requestAdapter } from '@kiln/runtime';
import { isMain, loadDigits, trainDigits } from './train.mjs';

const TRAIN_ROWS = 1437; // as in train.mjs: rows 1438–1797 of digits.csv are the test set
const PIXELS = 64;
const CLASSES = 10;
const RTOL = 1e-5;

/** Row-wise argmax of a [n, 10] logit array. */
function argmaxRows(logits, n) {
  const pred = new Int32Array(n);
  for (let r = 0; r < n; r++) {
    let best = 0;
    for (let c = 1; c < CLASSES; c++) if (logits[r * CLASSES + c] > logits[r * CLASSES + best]) best = c;
    pred[r] = best;
  }
  return pred;
}

/** How the runtime's logits compare with eager's: identical predictions, max abs and worst relative difference. */
function compare(eager, got, labels) {
  const n = labels.length;
  const pe = argmaxRows(eager, n), pg = argmaxRows(got, n);
  let identical = 0, correct = 0, maxAbs = 0, worstRel = 0;
  for (let r = 0; r < n; r++) {
    if (pe[r] === pg[r]) identical++;
    if (pg[r] === labels[r]) correct++;
  }
  for (let i = 0; i < eager.length; i++) {
    const d = Math.abs(eager[i] - got[i]);
    maxAbs = Math.max(maxAbs, d);
    worstRel = Math.max(worstRel, d / Math.max(1, Math.abs(eager[i])));
  }
  return { identical, accuracy: correct / n, maxAbsDiff: maxAbs, worstRelDiff: worstRel };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Median wall time (ms) of `runs` calls of `fn`, after one warm-up call. */
async function timeMs(fn, runs) {
  await fn();
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return median(ms);
}

/** The `kernels` array of a `.tsgraph` header (ir-spec/SPEC.md: u64 header length at bytes 16..23, UTF-8 JSON from byte 24). */
function kernelsOf(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = Number(view.getBigUint64(16, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(24, 24 + length)));
  return Array.isArray(header.kernels) ? header.kernels : [];
}

/** jit.script first; jit.trace with a symbolic batch when the scripter does not support the model. */
function compile(model, example, say) {
  try {
    return { how: 'script', compiled: jit.script(model, { inputs: [example] }) };
  } catch (e) {
    const why = (e instanceof Error ? e.message : String(e)).split('\n')[0];
    say(`jit.script does not support this model (${why}); using jit.trace with a symbolic batch N`);
    return { how: 'trace', compiled: jit.trace(model, [example], { dynamicAxes: { 0: { 0: 'N' } } }) };
  }
}

/** Throws unless `cmp` (runtime vs eager on `n` images) is identical in predictions and within RTOL. */
function check(cmp, n, where) {
  if (cmp.identical !== n || !(cmp.worstRelDiff <= RTOL)) {
    throw new Error(`end-to-end.mjs: ${where}: ${cmp.identical}/${n} predictions equal eager's, worst relative logit difference ` +
      `${cmp.worstRelDiff.toExponential(2)} (limit ${RTOL}); the compiled graph does not compute what the eager model does`);
  }
}

/**
 * Trains the digits CNN, compiles, optimizes and saves it, then runs the saved file in the
 * runtime alone and compares it with eager on the 360 test images.
 * @param {object} [options]
 * @param {boolean} [options.progress=true] print training progress and the results
 * @param {string} [options.out='.'] folder that receives digits.tsgraph
 * @param {number} [options.epochs=15]
 * @param {number} [options.runs=5] timed runs per forward (medians are reported)
 * @param {boolean} [options.webgpu=true] also run on WebGPU when possible
 * @param {{ write(s: string): unknown, isTTY?: boolean }} [options.log=process.stdout]
 * @example const r = await runDemo({ out: '/tmp' }); // r.cpu.identical === 360
 */
export async function runDemo(options = {}) {
  const { progress = true, out = '.', epochs = 15, runs = 5, webgpu = true, log = process.stdout } = options;
  const say = (s) => { if (progress) log.write(`${s}\n`); };

  const trained = trainDigits({ epochs, progress, out: log });
  const model = trained.model;
  model.eval();

  const data = loadDigits();
  const n = data.n - TRAIN_ROWS;
  const xTest = data.x.slice(TRAIN_ROWS * PIXELS);
  const labels = data.y.slice(TRAIN_ROWS);
  const xTensor = tensor(xTest, { shape: [n, 1, 8, 8] });
  const eager = Float32Array.from(noGrad(() => model.forward(xTensor)).toArray());

  const { how, compiled } = compile(model, tensor(xTest.slice(0, 2 * PIXELS), { shape: [2, 1, 8, 8] }), say);
  const fast = jit.optimizeForInference(compiled, { level: 2 });
  mkdirSync(out, { recursive: true });
  const path = resolve(join(out, 'digits.tsgraph'));
  await fast.save(path);
  const bytes = readFileSync(path);
  say(`compiled with jit.${how}, optimized (-O2), saved ${path} (${(bytes.length / 1024).toFixed(1)} KiB)`);

  const input = [{ data: xTest, shape: [n, 1, 8, 8], dtype: 'float32' }];
  const cpuModel = await load(bytes, { backend: 'cpu' });
  const [cpuOut] = await cpuModel.run(input);
  const cpu = compare(eager, cpuOut.data, labels);
  check(cpu, n, 'runtime (cpu)');
  const eagerMs = await timeMs(() => noGrad(() => model.forward(xTensor)), runs);
  const cpuMs = await timeMs(() => cpuModel.run(input), runs);

  const gpu = await runWebGpu(bytes, input, eager, labels, n, runs, webgpu);

  say(`test accuracy ${(100 * cpu.accuracy).toFixed(2)}% (${n} images; eager ${(100 * trained.testAccuracy).toFixed(2)}%)`);
  say(`runtime (cpu): ${cpu.identical}/${n} predictions identical to eager, max abs logit difference ${cpu.maxAbsDiff.toExponential(2)}`);
  if (gpu.status === 'ran') say(`runtime (webgpu): ${gpu.identical}/${n} predictions identical to eager, max abs logit difference ${gpu.maxAbsDiff.toExponential(2)}`);
  else say(`WebGPU: skipped — ${gpu.reason}`);
  say(`forward of ${n} images, median of ${runs} runs:`);
  say(`  eager            ${eagerMs.toFixed(2).padStart(9)} ms`);
  say(`  runtime (cpu)    ${cpuMs.toFixed(2).padStart(9)} ms   speedup ${(eagerMs / cpuMs).toFixed(2)}x`);
  if (gpu.status === 'ran') {
    say(`  runtime (webgpu) ${gpu.ms.toFixed(2).padStart(9)} ms   speedup ${(eagerMs / gpu.ms).toFixed(2)}x   (${gpu.adapter}${gpu.emulated ? ': a CPU emulation of a GPU, far slower than a real one' : ''})`);
  }

  return {
    compiledWith: how, path, fileBytes: bytes.length, images: n,
    testAccuracy: cpu.accuracy, eagerAccuracy: trained.testAccuracy, trainSeconds: trained.seconds,
    cpu: { identical: cpu.identical, maxAbsDiff: cpu.maxAbsDiff, worstRelDiff: cpu.worstRelDiff, ms: cpuMs },
    eagerMs, speedup: eagerMs / cpuMs, webgpu: gpu,
  };
}

/** The WebGPU leg: skipped (with the reason) when disabled, when the file has no WGSL kernels, or when no adapter is found. */
async function runWebGpu(bytes, input, eager, labels, n, runs, enabled) {
  if (!enabled) return { status: 'skipped', reason: 'disabled (webgpu: false)' };
  if (kernelsOf(bytes).length === 0) return { status: 'skipped', reason: 'the file has no WGSL kernels' };
  process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
  process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
  mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });
  let gpuModel;
  try {
    gpuModel = await load(bytes, { backend: 'webgpu' });
  } catch (e) {
    return { status: 'skipped', reason: e instanceof Error ? e.message : String(e) };
  }
  const [gpuOut] = await gpuModel.run(input);
  const cmp = compare(eager, gpuOut.data, labels);
  check(cmp, n, 'runtime (webgpu)');
  const ms = await timeMs(() => gpuModel.run(input), runs);
  const adapter = (await requestAdapter()).info;
  return { status: 'ran', identical: cmp.identical, maxAbsDiff: cmp.maxAbsDiff, worstRelDiff: cmp.worstRelDiff, ms, emulated: adapter.isFallbackAdapter, adapter: adapter.description || adapter.vendor };
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: '.' },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('usage: node examples/digits/end-to-end.mjs [--out DIR] [--quiet]\n');
  } else {
    const r = await runDemo({ out: values.out, progress: !values.quiet });
    if (values.quiet) process.stdout.write(`${JSON.stringify(r)}\n`);
  }
}
