// A character-level transformer language model, end to end with Kiln's PyTorch-style API:
// `nn.Embedding` + a learned position embedding, `nn.TransformerEncoder` (pre-norm layers,
// causal mask), a `utils.data.DataLoader` over windows of text.txt, Adam with
// `optim.lrScheduler.OneCycleLR`, `nn.utils.clipGradNorm_`; then
// sampling with multinomial, `jit.trace` with a symbolic sequence length, saving a .tsgraph and
// sampling again from the file with the runtime alone.
//
//   npm run build && node examples/charlm/train.mjs [--steps 300] [--seed 0] [--out DIR]

import { readFileSync, realpathSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { tensor, nn, F, optim, utils, noGrad, manualSeed, Generator, jit, expand, ones, multinomial } from 'kiln';
import { load } from '@kiln/runtime';

const TEXT = fileURLToPath(new URL('./text.txt', import.meta.url));

/** The characters of `text`, sorted, and the int32 codes of the text. */
export function encodeText(text) {
  const vocab = [...new Set(text)].sort();
  const index = new Map(vocab.map((c, i) => [c, i]));
  return { vocab, codes: Int32Array.from(text, (c) => index.get(c)) };
}

/** Causal transformer LM: tokens [B, T] int32 → logits [B, T, vocab]. */
export class CharLM extends nn.Module {
  constructor(vocabSize, { dModel = 32, nhead = 4, layers = 2, blockSize = 32 } = {}) {
    super();
    this.blockSize = blockSize;
    this.tok = new nn.Embedding(vocabSize, dModel);
    this.pos = new nn.Embedding(blockSize, dModel);
    this.encoder = new nn.TransformerEncoder(
      new nn.TransformerEncoderLayer(dModel, nhead, { dimFeedforward: 4 * dModel, dropout: 0, batchFirst: true, normFirst: true }),
      layers, new nn.LayerNorm(dModel));
    this.head = new nn.Linear(dModel, vocabSize);
  }
  forward(tokens) {
    const T = tokens.shape[1];
    // Positions 0..T-1 as a cumulative sum of ones shaped like the tokens' time axis, so a trace
    // with a symbolic T records ops that follow T instead of a constant.
    const positions = expand(ones([]), [T]).cumsum(0).sub(1).int();
    const x = this.tok.forward(tokens).add(this.pos.forward(positions));
    return this.head.forward(this.encoder.forward(x, { isCausal: true }));
  }
}

/** Draws the next character's index from probabilities `p` with `multinomial` (one sample). */
export function sampleRow(p, gen) {
  return multinomial(tensor(Float32Array.from(p)), 1, { generator: gen }).item();
}

/** Windows of `blockSize + 1` characters: input = first blockSize, target = last blockSize. */
class Windows extends utils.data.Dataset {
  constructor(codes, blockSize) { super(); this.codes = codes; this.blockSize = blockSize; }
  get length() { return this.codes.length - this.blockSize - 1; }
  getItem(i) {
    const w = this.codes.subarray(i, i + this.blockSize + 1);
    return [tensor(w.subarray(0, this.blockSize), { dtype: 'int32' }), tensor(w.subarray(1), { dtype: 'int32' })];
  }
}

/**
 * Trains the model; returns it with the loss history, the sample texts and timings.
 * @param {{ steps?: number, seed?: number, batchSize?: number, sampleChars?: number, out?: string, log?: (s: string) => void }} [o]
 */
export async function trainCharLM(o = {}) {
  const { steps = 300, seed = 0, batchSize = 32, sampleChars = 120, log = (s) => process.stdout.write(`${s}\n`) } = o;
  const start = performance.now();
  const text = readFileSync(TEXT, 'utf8');
  const { vocab, codes } = encodeText(text);
  manualSeed(seed);
  const model = new CharLM(vocab.length);
  const loader = new utils.data.DataLoader(new Windows(codes, model.blockSize), { batchSize, shuffle: true, dropLast: true, generator: new Generator(seed) });
  const opt = new optim.Adam(model.parameters(), { lr: 1e-2 });
  const sched = new optim.lrScheduler.OneCycleLR(opt, { maxLr: 1e-2, totalSteps: steps, pctStart: 0.2 });
  const losses = [];
  model.train();
  outer: for (;;) {
    for await (const [xb, yb] of loader) {
      if (losses.length === steps) break outer;
      opt.zeroGrad();
      const logits = model.forward(xb);
      const loss = F.crossEntropy(logits.reshape([-1, vocab.length]), yb.reshape([-1]));
      loss.backward();
      nn.utils.clipGradNorm_(model.parameters(), 1.0);
      opt.step();
      sched.step();
      losses.push(loss.item());
      if (losses.length % 50 === 0) log(`step ${losses.length}/${steps}  loss ${mean(losses.slice(-50)).toFixed(3)}  lr ${sched.getLastLr()[0].toExponential(2)}`);
    }
  }
  const trainSeconds = (performance.now() - start) / 1000;
  model.eval();
  const prompt = 'the potter ';
  const eagerSample = noGrad(() => sample((ids) => {
    const logits = model.forward(tensor(ids, { dtype: 'int32', shape: [1, ids.length] }));
    return softmax(logits.slice(1, ids.length - 1, ids.length).reshape([-1]).toArray());
  }, prompt, vocab, model.blockSize, sampleChars, new Generator(seed)));
  log(`eager sample: ${JSON.stringify(eagerSample)}`);

  // Compile with a symbolic sequence length, save, and sample from the file with the runtime.
  const example = tensor(codes.subarray(0, 8), { dtype: 'int32', shape: [1, 8] });
  const traced = jit.trace(model, [example], { dynamicAxes: { 0: { 1: 'T' } } });
  const dir = o.out ?? mkdtempSync(join(tmpdir(), 'kiln-charlm-'));
  const path = join(dir, 'charlm.tsgraph');
  await traced.save(path);
  const runtimeModel = await load(readFileSync(path), { backend: 'cpu' });
  const fileSample = await sampleAsync(async (ids) => {
    const [out] = await runtimeModel.run([{ data: Int32Array.from(ids), shape: [1, ids.length], dtype: 'int32' }]);
    const V = vocab.length, last = out.data.subarray((ids.length - 1) * V, ids.length * V);
    const p = softmax(last);
    return p;
  }, prompt, vocab, model.blockSize, sampleChars, new Generator(seed));
  log(`sample from ${path}: ${JSON.stringify(fileSample)}`);
  return { model, vocab, losses, eagerSample, fileSample, trainSeconds, seconds: (performance.now() - start) / 1000, path };
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
function softmax(z) {
  const m = Math.max(...z);
  const e = Array.from(z, (v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}

/** Extends `prompt` by `n` characters, each drawn from `probs(last blockSize ids)`. */
function sample(probs, prompt, vocab, blockSize, n, gen) {
  const ids = Array.from(prompt, (c) => vocab.indexOf(c));
  for (let k = 0; k < n; k++) ids.push(sampleRow(probs(ids.slice(-blockSize)), gen));
  return ids.map((i) => vocab[i]).join('');
}
async function sampleAsync(probs, prompt, vocab, blockSize, n, gen) {
  const ids = Array.from(prompt, (c) => vocab.indexOf(c));
  for (let k = 0; k < n; k++) ids.push(sampleRow(await probs(ids.slice(-blockSize)), gen));
  return ids.map((i) => vocab[i]).join('');
}

function isMain(url) {
  try { return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(url)); } catch { return false; }
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({ options: { steps: { type: 'string' }, seed: { type: 'string' }, out: { type: 'string' } } });
  const r = await trainCharLM({ steps: values.steps ? Number(values.steps) : undefined, seed: values.seed ? Number(values.seed) : undefined, out: values.out });
  console.log(`trained ${r.losses.length} steps in ${r.trainSeconds.toFixed(1)} s; loss ${mean(r.losses.slice(0, 10)).toFixed(3)} → ${mean(r.losses.slice(-20)).toFixed(3)}; total ${r.seconds.toFixed(1)} s`);
}
