// Dynamic int8 quantization side by side with float32 (`npm run bench:quant`): for the seed CNN
// (its Linear layers quantized), the MLP 784-512-512-10 and the digits CNN, the .tsgraph size
// (jit.optimizeForInference, float32 vs int8), the CPU latency at batch 1 and 32 of the compiled
// model (float32 and int8 timed in 9 alternating rounds in this one process; medians, and the
// median of the rounds' ratios), the share of the seed CNN's time in its Linear layers, and the top-1
// agreement of the int8 model with the float32 one on the 360 digits test images
// (examples/digits: the digits CNN as trained by its example; the MLP trained here for 5 epochs
// on the images scaled to 28×28; the seed CNN with its initial weights on the images scaled to
// 3×32×32 — agreement of an untrained network, whose logits lie close together, is the harder test).

import os from 'node:os';
import { summarize, timeRuns } from './stats.mjs';

const { F, jit, manualSeed, nn, noGrad, optim, quantization, randn, randperm, tensor } = await import('kiln');
const { fastPrimitives } = await import('@kiln/runtime');
const { ResearchModel } = await import('../examples/seed/models.mjs');
const { loadDigits, trainDigits } = await import('../examples/digits/train.mjs');

const loadBefore = os.loadavg();
const TEST_FROM = 1437;
const data = loadDigits();
const nTest = data.n - TEST_FROM;
const testX = tensor(Array.from(data.x.subarray(TEST_FROM * 64)), { shape: [nTest, 1, 8, 8] });
const testY = data.y.subarray(TEST_FROM);
const as28 = (x) => F.interpolate(x, { size: [28, 28], mode: 'bilinear', alignCorners: false }).flatten(1);
const as3x32 = (x) => F.interpolate(x, { size: [32, 32], mode: 'nearest' }).expand([x.shape[0], 3, 32, 32]).contiguous();

function trainMlp() {
  manualSeed(3);
  const mlp = new nn.Sequential(new nn.Linear(784, 512), new nn.ReLU(), new nn.Linear(512, 512), new nn.ReLU(), new nn.Linear(512, 10));
  const x = as28(tensor(Array.from(data.x.subarray(0, TEST_FROM * 64)), { shape: [TEST_FROM, 1, 8, 8] }));
  const y = tensor(Array.from(data.y.subarray(0, TEST_FROM)), { dtype: 'int32' });
  const opt = new optim.Adam(mlp.parameters(), { lr: 1e-3 });
  for (let epoch = 0; epoch < 5; epoch++) {
    const order = randperm(TEST_FROM);
    for (let i = 0; i < TEST_FROM; i += 32) {
      const idx = tensor(Array.from(order.subarray(i, Math.min(i + 32, TEST_FROM))), { dtype: 'int32' });
      opt.zeroGrad();
      F.crossEntropy(mlp.forward(x.indexSelect(0, idx)), y.indexSelect(0, idx)).backward();
      opt.step();
    }
  }
  return mlp.eval();
}

const argmax = (t) => { const a = t.argmax(1).toArray(); return Array.from(a); };

/**
 * Median latency (ms) of `fast` and `fastQ` on `x` (and of `extra` on `extraX`, when given),
 * timed in 9 alternating rounds, and the medians of the rounds' ratios.
 */
function sideBySide(fast, fastQ, x, extra, extraX) {
  // Short alternating rounds: a burst of load on the shared machine lands on one round of one
  // side, and the median over rounds of each round's ratio discards it.
  const tF = [], tQ = [], tE = [], ratio = [], share = [];
  const budgetMs = x.shape[0] > 1 ? 800 : 400;
  const time = (m, input) => summarize(timeRuns(() => m.forward(input), { warmup: 3, minRuns: 5, budgetMs })).median;
  for (let round = 0; round < 9; round++) {
    tF.push(time(fast, x));
    tQ.push(time(fastQ, x));
    ratio.push(tF[round] / tQ[round]);
    if (extra) { tE.push(time(extra, extraX)); share.push(tE[round] / tF[round]); }
  }
  return { msF: summarize(tF).median, msQ: summarize(tQ).median, speedup: summarize(ratio).median, ...(extra ? { msE: summarize(tE).median, share: summarize(share).median } : {}) };
}

/** One model's rows: file sizes, latencies at each batch size (side by side), agreement and accuracy. */
function measure(name, float, example, testInput, batches = [1, 32], part) {
  const q = quantization.quantizeDynamic(float, { layers: [nn.Linear] });
  const dyn = { dynamicAxes: { 0: { 0: 'N' } }, warn: false };
  const fast = jit.optimizeForInference(jit.trace(float, [example], dyn));
  const fastQ = jit.optimizeForInference(jit.trace(q, [example], dyn));
  const bytes = fast.toBytes().length, bytesQ = fastQ.toBytes().length;
  const times = batches.map((b) => ({ batch: b, ...sideBySide(fast, fastQ, b === 1 ? example : randn([b, ...example.shape.slice(1)]), b === 1 ? part?.model : undefined, part?.x) }));
  const [pf, pq] = noGrad(() => [argmax(float.forward(testInput)), argmax(q.forward(testInput))]);
  const agree = pf.filter((p, i) => p === pq[i]).length / pf.length;
  const acc = (p) => p.filter((v, i) => v === testY[i]).length / p.length;
  return { name, bytes, bytesQ, times, agree, accF: acc(pf), accQ: acc(pq) };
}

const rows = [];
manualSeed(0);
const seed = new ResearchModel().eval();
manualSeed(2);
// The share of the seed CNN's float32 batch-1 time that quantizeDynamic can touch: its classifier
// (the only Linear layers; the convolutions stay float32), compiled alone and timed in the same
// rounds as the whole model; and the classifier's own int8 speed-up, side by side.
const headX = randn([1, 8192]);
const headF = jit.optimizeForInference(jit.trace(seed.classifier, [headX], { warn: false }));
const headQ = jit.optimizeForInference(jit.trace(quantization.quantizeDynamic(seed.classifier, { layers: [nn.Linear] }), [headX], { warn: false }));
rows.push(measure('seed CNN (Linear 8192-512-10 int8)', seed, randn([1, 3, 32, 32]), as3x32(testX), [1, 32], { model: headF, x: headX }));
const head = sideBySide(headF, headQ, headX);
rows.push(measure('MLP 784-512-512-10', trainMlp(), randn([1, 784]), as28(testX)));
const { model: digits } = trainDigits({ progress: false });
rows.push(measure('digits CNN (Linear 512-64-10 int8)', digits, randn([1, 1, 8, 8]), testX, [1]));

const kb = (b) => `${(b / 1024).toFixed(0)} KiB`;
const pct = (v) => `${(100 * v).toFixed(1)}%`;
console.log(`load average before: ${loadBefore.map((l) => l.toFixed(2)).join(', ')}; after: ${os.loadavg().map((l) => l.toFixed(2)).join(', ')}\n`);
console.log('| model | float32 file | int8 file | smaller | batch | float32 (median) | int8 (median) | int8 speed-up (median of 9 rounds) | top-1 agreement | accuracy f32 / int8 |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  for (const t of r.times) {
    console.log(`| ${r.name} | ${kb(r.bytes)} | ${kb(r.bytesQ)} | ${(r.bytes / r.bytesQ).toFixed(2)}× | ${t.batch} | ${t.msF.toFixed(3)} ms | ${t.msQ.toFixed(3)} ms | ${t.speedup.toFixed(2)}× | ${pct(r.agree)} | ${pct(r.accF)} / ${pct(r.accQ)} |`);
  }
}
const seed1 = rows[0].times[0], share = seed1.share;
console.log(`\nSeed CNN at batch 1: its classifier alone (Linear 8192-512-ReLU-Linear 512-10) takes ${head.msF.toFixed(3)} ms float32 and ${head.msQ.toFixed(3)} ms int8 (${head.speedup.toFixed(2)}× side by side); timed in the same rounds as the whole float32 model, it is ${pct(share)} of it (median of the rounds' ratios): with the convolutions in float32, the whole model's int8 speed-up is at most ${(1 / (1 - share)).toFixed(2)}× even if the int8 classifier took no time, and ${(1 / (1 - share + share / head.speedup)).toFixed(2)}× at the classifier's own speed-up.`);
console.log(`CPU kernels: ${fastPrimitives().kind}; node ${process.version}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}); accuracy is on the digits labels (the seed CNN is untrained: chance level).`);
