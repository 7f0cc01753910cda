// jit.exportOnnx, checked by ONNX Runtime: every model below is exported from its Kiln graph
// (traced, scripted or optimized), loaded in onnxruntime-node and run at two or more batch
// sizes; the outputs must match Kiln's (eager) within float32 tolerance. Also: dim_params named
// as in Kiln or by dynamicAxes, the file path form, and errors that name the node.
import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jit, nn, manualSeed, randn, noGrad, type Tensor } from 'kiln';
import { ResearchModel, ProductionModel } from '../examples/seed/models.mjs';
import { digitsModel } from '../examples/digits/train.mjs';
import { AdaptiveResNet, Halver, Nested, Outer, Repeat } from './script-models/control-flow.js';
import { ortSession, runOrt, expectClose, type Feed } from './helpers/onnx.js';
import { ImageZoo, IntMath, RoundingZoo, VectorZoo } from './helpers/onnx-op-zoo.js';

const CONTROL = fileURLToPath(new URL('./script-models/control-flow.ts', import.meta.url));
const TOL = 2e-5;

/** Exports `compiled`, then checks ONNX Runtime against eager `model` on every input set. */
async function agreesInOrt(model: nn.Module, compiled: jit.OnnxExportable, inputSets: Feed[][], opts: jit.ExportOnnxOptions = {}): Promise<Uint8Array> {
  const bytes = jit.exportOnnx(compiled, undefined, opts);
  const session = await ortSession(bytes);
  for (const inputs of inputSets) {
    const want = noGrad(() => model.forward(...inputs)) as Tensor;
    const [got] = await runOrt(session, inputs);
    expectClose(got, want, TOL, `inputs ${inputs.map((i) => (typeof i === 'object' ? `[${i.shape}]` : String(i))).join(', ')}`);
  }
  return bytes;
}

const traceN = (m: nn.Module, example: Tensor, axes: Record<number, string> = { 0: 'N' }) =>
  jit.trace(m, [example], { dynamicAxes: { 0: axes } });

class Mlp extends nn.Module {
  net = new nn.Sequential(new nn.Linear(10, 32), new nn.GELU(), new nn.Linear(32, 16), new nn.Tanh(), new nn.Linear(16, 3), new nn.Softmax(-1));
  forward(x: Tensor): Tensor { return this.net.forward(x) as Tensor; }
}
class Lstm extends nn.Module {
  lstm = new nn.LSTM(4, 8, { batchFirst: true, numLayers: 2 });
  forward(x: Tensor): Tensor { return (this.lstm.forward(x) as [Tensor, unknown])[0]; }
}
class Gru extends nn.Module {
  gru = new nn.GRU(3, 5, { batchFirst: true });
  forward(x: Tensor): Tensor { return (this.gru.forward(x) as [Tensor, unknown])[0]; }
}
class Attention extends nn.Module {
  attn = new nn.MultiheadAttention(16, 4, { batchFirst: true });
  norm = new nn.LayerNorm(16);
  forward(x: Tensor): Tensor { return this.norm.forward(x.add((this.attn.forward(x, x, x) as [Tensor, unknown])[0])); }
}

describe('jit.exportOnnx runs in ONNX Runtime with Kiln\'s numbers', () => {
  it('seed ResearchModel (traced, eval) and ProductionModel (optimized: folded BN, fused conv+relu+pool, fused linear)', async () => {
    manualSeed(1);
    const research = new ResearchModel(); research.eval();
    await agreesInOrt(research, traceN(research, randn([2, 3, 32, 32])), [[randn([1, 3, 32, 32])], [randn([3, 3, 32, 32])]]);
    const prod = new ProductionModel(); prod.loadStateDict(research.stateDict()); prod.eval();
    const fast = jit.optimizeForInference(traceN(prod, randn([2, 3, 32, 32])));
    expect(fast.graph.toString()).toMatch(/fused_conv2d/);
    await agreesInOrt(prod, fast, [[randn([2, 3, 32, 32])], [randn([5, 3, 32, 32])]]);
  });

  it('digits CNN (traced and optimized)', async () => {
    manualSeed(2);
    const m = digitsModel(); m.eval();
    const traced = traceN(m, randn([2, 1, 8, 8]));
    await agreesInOrt(m, traced, [[randn([1, 1, 8, 8])], [randn([4, 1, 8, 8])]]);
    await agreesInOrt(m, jit.optimizeForInference(traced), [[randn([2, 1, 8, 8])], [randn([7, 1, 8, 8])]]);
  });

  it('an MLP with GELU, tanh and softmax, scripted (dynamic batch) and optimized (fused elementwise)', async () => {
    manualSeed(3);
    const m = new Mlp(); m.eval();
    await agreesInOrt(m, jit.script(m, { inputs: [randn([2, 10])] }), [[randn([1, 10])], [randn([6, 10])]]);
    await agreesInOrt(m, jit.optimizeForInference(traceN(m, randn([2, 10]))), [[randn([3, 10])], [randn([9, 10])]]);
  });

  it('a two-layer LSTM traced with symbolic batch and time (a Loop over T)', async () => {
    manualSeed(4);
    const m = new Lstm(); m.eval();
    const traced = traceN(m, randn([2, 5, 4]), { 0: 'N', 1: 'T' });
    const bytes = await agreesInOrt(m, traced, [[randn([2, 5, 4])], [randn([3, 9, 4])], [randn([1, 1, 4])]]);
    expect(new TextDecoder('latin1').decode(bytes)).toContain('Loop');
  });

  it('a GRU traced with symbolic batch and time', async () => {
    manualSeed(9);
    const m = new Gru(); m.eval();
    await agreesInOrt(m, traceN(m, randn([2, 4, 3]), { 0: 'N', 1: 'T' }), [[randn([2, 4, 3])], [randn([3, 6, 3])]]);
  });

  it('a MultiheadAttention block with a residual and LayerNorm', async () => {
    manualSeed(5);
    const m = new Attention(); m.eval();
    await agreesInOrt(m, traceN(m, randn([2, 6, 16])), [[randn([2, 6, 16])], [randn([5, 6, 16])]]);
  });

  it('AdaptiveResNet scripted: the data-dependent branch becomes an ONNX If and takes both ways', async () => {
    manualSeed(6);
    const m = new AdaptiveResNet(); m.eval();
    const s = jit.script(m, { sourceFile: CONTROL, inputs: [randn([2, 6])] });
    const inputs = [2, 5].flatMap((n) => [0, 20, -20].map((shift) => [randn([n, 6]).add(shift)]));
    const bytes = await agreesInOrt(m, s, inputs);
    expect(new TextDecoder('latin1').decode(bytes)).toContain('then_branch');
  });

  it('scripted loops: a while loop on the data (Halver) and a trip count passed as an argument (Repeat)', async () => {
    manualSeed(7);
    const h = new Halver();
    await agreesInOrt(h, jit.script(h, { sourceFile: CONTROL, inputs: [randn([2, 3])] }), [[randn([2, 3]).mul(10)], [randn([4, 3]).mul(0.1)]]);
    const r = new Repeat();
    await agreesInOrt(r, jit.script(r, { sourceFile: CONTROL, inputs: [randn([2, 3]), 3] }), [[randn([1, 3]), 0], [randn([3, 3]), 4]]);
    const nested = new Nested();
    await agreesInOrt(nested, jit.script(nested, { sourceFile: CONTROL, inputs: [randn([2, 3]), 3] }), [[randn([1, 3]), 0], [randn([3, 3]), 5], [randn([2, 3]).add(2), 4]]);
    const ints = new IntMath();
    await agreesInOrt(ints, jit.script(ints, { inputs: [randn([2, 3]), 4] }), [[randn([1, 3]), 0], [randn([3, 3]), 7], [randn([2, 3]), 11]]);
  });

  it('a scripted submodule with its own if, inlined in a loop over a ModuleList (Outer)', async () => {
    manualSeed(8);
    const m = new Outer(); m.eval();
    await agreesInOrt(m, jit.script(m, { sourceFile: CONTROL, inputs: [randn([2, 4])] }), [[randn([2, 4])], [randn([5, 4]).mul(3)], [randn([1, 4]).sub(2)]]);
  });

  it('the remaining op entries: pooling variants, transposed and grouped conv, reductions, indexing, masks, rounding, special values, sort (traced and optimized)', async () => {
    manualSeed(10);
    const img = new ImageZoo(); img.eval();
    const tImg = traceN(img, randn([2, 2, 8, 8]));
    await agreesInOrt(img, tImg, [[randn([1, 2, 8, 8])], [randn([3, 2, 8, 8])]]);
    await agreesInOrt(img, jit.optimizeForInference(tImg), [[randn([2, 2, 8, 8])]]);
    const vec = new VectorZoo(); vec.eval();
    const tVec = traceN(vec, randn([2, 6]));
    await agreesInOrt(vec, tVec, [[randn([1, 6])], [randn([4, 6])]]);
    await agreesInOrt(vec, jit.optimizeForInference(tVec), [[randn([3, 6])], [randn([5, 6])]]);
    const rz = new RoundingZoo(); rz.eval();
    const tRz = traceN(rz, randn([2, 6]));
    await agreesInOrt(rz, tRz, [[randn([1, 6])], [randn([4, 6])]]);
    await agreesInOrt(rz, jit.optimizeForInference(tRz), [[randn([3, 6])]]);
  });
});

describe('jit.exportOnnx names and options', () => {
  it('writes the file at the path, names inputs/outputs and dim_params as asked', async () => {
    manualSeed(8);
    const m = new Mlp(); m.eval();
    const path = join(mkdtempSync(join(tmpdir(), 'kiln-onnx-')), 'mlp.onnx');
    const bytes = jit.exportOnnx(traceN(m, randn([2, 10])), path, { inputNames: ['input'], outputNames: ['probs'], dynamicAxes: { input: { 0: 'batch_size' }, probs: { 0: 'batch_size' } } });
    expect(readFileSync(path)).toEqual(Buffer.from(bytes));
    const session = await ortSession(bytes);
    expect(session.inputNames).toEqual(['input']);
    expect(session.outputNames).toEqual(['probs']);
    const text = new TextDecoder('latin1').decode(bytes);
    expect(text).toContain('batch_size');
    expect(text).not.toMatch(/\x12\x01N/); // the Kiln symbol N was renamed
  });

  it('keeps Kiln\'s symbol names as dim_params by default', () => {
    const m = new Mlp(); m.eval();
    const bytes = jit.exportOnnx(traceN(m, randn([2, 10]), { 0: 'batch' }));
    expect(new TextDecoder('latin1').decode(bytes)).toContain('batch');
  });

  it('fails naming the axis when dynamicAxes asks for a dim the graph fixed', () => {
    const m = new Mlp(); m.eval();
    const traced = jit.trace(m, [randn([2, 10])]);
    expect(() => jit.exportOnnx(traced, undefined, { dynamicAxes: { x: { 0: 'batch' } } })).toThrow(/axis 0 of 'x'.*size 2/);
  });

  it('fails naming the node for dropout in training mode and for unsupported opsets', () => {
    const m = new nn.Sequential(new nn.Linear(3, 3), new nn.Dropout(0.5));
    const traced = jit.trace(m, [randn([2, 3])], { check: false });
    expect(() => jit.exportOnnx(traced)).toThrow(/node 'uniform' in 1 .*draws random numbers \(dropout in training mode.*model\.eval\(\)/);
    m.eval();
    expect(() => jit.exportOnnx(jit.trace(m, [randn([2, 3])]), undefined, { opsetVersion: 12 })).toThrow(/opsetVersion 12.*13 to 17/);
  });
});
