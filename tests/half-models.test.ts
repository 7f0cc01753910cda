// Reduced precision on whole models (issue 21, float16 part): the digits CNN (trained 2 epochs,
// examples/digits) with float16 / bfloat16 weights in the `.tsgraph` (about half the file) and
// under autocast (eager, and traced + optimized + saved) keeps top-1 agreement with float32 on
// ≥ 99% of the 360 digits test images, on the CPU runtime and on WebGPU (Dawn; SwiftShader has
// no shader-f16, so the weights are widened at load there).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { load, type Model } from '@kiln/runtime';
import { readTsgraphHeader } from '@kiln/ir-spec';
import { autocast, jit, noGrad, tensor, Tensor } from 'kiln';
import { loadDigits, trainDigits } from '../examples/digits/train.mjs';

const TRAIN_ROWS = 1437;
let model: ReturnType<typeof trainDigits>['model'];
let test: Tensor;
let reference: Int32Array;
const models: Model[] = [];

function top1(logits: ArrayLike<number>, n: number): Int32Array {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let best = 0;
    for (let c = 1; c < 10; c++) if (logits[i * 10 + c] > logits[i * 10 + best]) best = c;
    out[i] = best;
  }
  return out;
}
const agreement = (a: Int32Array, b: Int32Array) => a.filter((v, i) => v === b[i]).length / a.length;

beforeAll(() => {
  model = trainDigits({ epochs: 2, progress: false }).model;
  const data = loadDigits();
  const n = data.n - TRAIN_ROWS;
  test = tensor(data.x.slice(TRAIN_ROWS * 64), { shape: [n, 1, 8, 8] });
  reference = top1(noGrad(() => model.forward(test)).toArray(), n);
}, 300_000);
afterAll(() => { for (const m of models) m.dispose?.(); });

async function run(bytes: Uint8Array, backend: 'cpu' | 'webgpu'): Promise<Int32Array> {
  const m = await load(bytes, { backend });
  models.push(m);
  const [y] = await m.run([test]);
  return top1(y.data, test.shape[0]);
}

describe('digits CNN in reduced precision', () => {
  it('float16 and bfloat16 weights: the file is about half, predictions agree on ≥ 99% (CPU)', async () => {
    const traced = jit.trace(model, [test], { dynamicAxes: { 0: { 0: 'N' } } });
    const f32 = jit.optimizeForInference(traced);
    const blob = (b: Uint8Array) => readTsgraphHeader(b).header.tensors.reduce((a, t) => a + t.length, 0);
    for (const weights of ['float16', 'bfloat16'] as const) {
      const half = jit.optimizeForInference(traced, { weights });
      const bytes = half.toBytes();
      // The weights take exactly half; the whole CPU-only file (header included) a little more.
      expect(blob(bytes) / blob(f32.toBytes())).toBe(0.5);
      expect(half.toBytes({ kernels: [] }).length / f32.toBytes({ kernels: [] }).length).toBeLessThan(0.56);
      expect(agreement(await run(bytes, 'cpu'), reference)).toBeGreaterThanOrEqual(0.99);
      // The module itself runs the same rounded weights as its file.
      expect(agreement(top1((half.forward(test) as Tensor).toArray(), test.shape[0]), reference)).toBeGreaterThanOrEqual(0.99);
    }
  }, 300_000);

  it('autocast float16 and bfloat16: eager, and traced + optimized + saved, agree on ≥ 99%', async () => {
    for (const dtype of ['float16', 'bfloat16'] as const) {
      const eager = autocast(() => noGrad(() => model.forward(test)), { dtype });
      expect(eager.dtype).toBe(dtype);
      expect(agreement(top1(eager.float().toArray(), test.shape[0]), reference)).toBeGreaterThanOrEqual(0.99);
      const traced = autocast(() => jit.trace(model, [test], { dynamicAxes: { 0: { 0: 'N' } } }), { dtype });
      const bytes = jit.optimizeForInference(traced).toBytes();
      const cpu = await run(bytes, 'cpu');
      expect(agreement(cpu, reference)).toBeGreaterThanOrEqual(0.99);
    }
  }, 300_000);

  it('on WebGPU (Dawn): float16 weights are widened at load and agree with the CPU run', async () => {
    const traced = jit.trace(model, [test], { dynamicAxes: { 0: { 0: 'N' } } });
    const bytes = jit.optimizeForInference(traced, { weights: 'float16' }).toBytes();
    const [cpu, gpu] = [await run(bytes, 'cpu'), await run(bytes, 'webgpu')];
    expect(agreement(gpu, cpu)).toBeGreaterThanOrEqual(0.99);
    expect(agreement(gpu, reference)).toBeGreaterThanOrEqual(0.99);
    const auto = jit.optimizeForInference(autocast(() => jit.trace(model, [test], { dynamicAxes: { 0: { 0: 'N' } } }))).toBytes();
    expect(agreement(await run(auto, 'webgpu'), reference)).toBeGreaterThanOrEqual(0.99);
  }, 300_000);
});
