// Reduced precision (issue 21): file sizes and top-1 agreement with float32 on the 360 digits
// test images, for the digits CNN (examples/digits, trained KILN_DIGITS_EPOCHS epochs, default 2)
// and the seed CNN (examples/seed ProductionModel, seeded random weights; the 8×8 digits
// upsampled to 3×32×32). Variants: `.tsgraph` files with float16 / bfloat16 weights run by the
// CPU runtime, and autocast float16 / bfloat16 (eager, and traced + optimized + saved).
// Run: npm run bench:half   (agreement is deterministic; each table says how long it took)

import { load } from '@kiln/runtime';
import { autocast, F, jit, manualSeed, noGrad, tensor } from 'kiln';
import { loadDigits, trainDigits } from '../examples/digits/train.mjs';
import { ProductionModel } from '../examples/seed/models.mjs';

const TRAIN_ROWS = 1437;
const epochs = Number(process.env.KILN_DIGITS_EPOCHS ?? 2);

function top1(logits, n) {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let best = 0;
    for (let c = 1; c < 10; c++) if (logits[i * 10 + c] > logits[i * 10 + best]) best = c;
    out[i] = best;
  }
  return out;
}
const agree = (a, b) => a.filter((v, i) => v === b[i]).length / a.length;
const pct = (x) => `${(100 * x).toFixed(2)}%`;
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;

async function runFile(bytes, x) {
  const m = await load(bytes, { backend: 'cpu', maxRunMs: 3_600_000 });
  const [y] = await m.run([x]);
  return top1(y.data, x.shape[0]);
}

async function report(name, model, x) {
  const t0 = performance.now();
  model.eval();
  const n = x.shape[0];
  const ref = top1(noGrad(() => model.forward(x)).toArray(), n);
  // Traced on 4 images (the batch dim symbolic): tracing runs the model once, on its example.
  const example = x.narrow(0, 0, 4).contiguous();
  const traced = jit.trace(model, [example], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
  const f32 = jit.optimizeForInference(traced).toBytes({ kernels: [] });
  const rows = [['float32 weights (file)', f32.length, agree(await runFile(f32, x), ref)]];
  for (const weights of ['float16', 'bfloat16']) {
    const bytes = jit.optimizeForInference(traced, { weights }).toBytes({ kernels: [] });
    rows.push([`${weights} weights (file)`, bytes.length, agree(await runFile(bytes, x), ref)]);
  }
  for (const dtype of ['float16', 'bfloat16']) {
    const eager = autocast(() => noGrad(() => model.forward(x)), { dtype });
    rows.push([`autocast ${dtype} (eager)`, null, agree(top1(eager.float().toArray(), n), ref)]);
    const t = autocast(() => jit.trace(model, [example], { dynamicAxes: { 0: { 0: 'N' } }, warn: false }), { dtype });
    const bytes = jit.optimizeForInference(t).toBytes({ kernels: [] });
    rows.push([`autocast ${dtype} (file)`, bytes.length, agree(await runFile(bytes, x), ref)]);
  }
  console.log(`\n${name} (${n} digits test images; CPU-only .tsgraph files, no WGSL; ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  console.log('| variant | file | size vs float32 | top-1 agreement with float32 |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const [v, size, a] of rows) console.log(`| ${v} | ${size === null ? '—' : kb(size)} | ${size === null ? '—' : `${(size / f32.length).toFixed(3)}×`} | ${pct(a)} |`);
}

const data = loadDigits();
const n = data.n - TRAIN_ROWS;
const digits = tensor(data.x.slice(TRAIN_ROWS * 64), { shape: [n, 1, 8, 8] });
const { model, testAccuracy } = trainDigits({ epochs, progress: false });
console.log(`digits CNN trained ${epochs} epochs: test accuracy ${pct(testAccuracy)}`);
await report('digits CNN', model, digits);

manualSeed(0);
const seed = new ProductionModel();
const big = noGrad(() => F.interpolate(digits, { scaleFactor: 4, mode: 'nearest' }).expand([n, 3, 32, 32]).contiguous());
await report('seed CNN (ProductionModel, random weights)', seed, big);
