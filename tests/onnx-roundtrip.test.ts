// ONNX round trip: a Kiln graph exported with jit.exportOnnx and imported with jit.loadOnnx
// computes the same outputs as the original graph (within 1e-6), for traced, scripted (If,
// Loop) and optimized graphs at two or more batch sizes; the re-imported graph exports again.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { jit, nn, manualSeed, randn, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/seed/models.mjs';
import { AdaptiveResNet, Halver, Nested } from './script-models/control-flow.js';
import { expectClose } from './helpers/onnx.js';
import { ImageZoo, IntMath, VectorZoo } from './helpers/onnx-op-zoo.js';

const CONTROL = fileURLToPath(new URL('./script-models/control-flow.ts', import.meta.url));

function roundTrips(compiled: jit.OnnxExportable & { forward(...x: (Tensor | number)[]): unknown }, inputs: (Tensor | number)[][]): jit.OnnxModule {
  const back = jit.loadOnnx(jit.exportOnnx(compiled));
  for (const xs of inputs) {
    const want = compiled.forward(...xs) as Tensor;
    expectClose(back.forward(...xs) as Tensor, want, 1e-6, `[${xs.map((x) => (typeof x === 'number' ? x : x.shape.join('x')))}]`);
  }
  return back;
}

class Seq extends nn.Module {
  lstm = new nn.LSTM(3, 5, { batchFirst: true });
  attn = new nn.MultiheadAttention(5, 1, { batchFirst: true });
  forward(x: Tensor): Tensor {
    const h = (this.lstm.forward(x) as [Tensor, unknown])[0];
    return (this.attn.forward(h, h, h) as [Tensor, unknown])[0].softmax(-1);
  }
}

describe('exportOnnx → loadOnnx keeps the graph\'s numbers (1e-6)', () => {
  it('seed ResearchModel, traced and optimized', () => {
    manualSeed(11);
    const m = new ResearchModel(); m.eval();
    const traced = jit.trace(m, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } } });
    const back = roundTrips(traced, [[randn([1, 3, 32, 32])], [randn([3, 3, 32, 32])]]);
    expect(back.graph.inputs.filter((i) => i.kind === 'param').map((i) => i.name)).toContain('features.0.weight');
    roundTrips(jit.optimizeForInference(traced), [[randn([2, 3, 32, 32])], [randn([4, 3, 32, 32])]]);
  });

  it('an LSTM + attention model traced over symbolic batch and time (Loop)', () => {
    manualSeed(12);
    const m = new Seq(); m.eval();
    const traced = jit.trace(m, [randn([2, 4, 3])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } } });
    const back = roundTrips(traced, [[randn([2, 4, 3])], [randn([3, 6, 3])]]);
    expect(back.graph.toString()).toMatch(/= loop\(/);
  });

  it('scripted If (AdaptiveResNet, both branches) and a data-dependent while loop (Halver), exported again', () => {
    manualSeed(13);
    const ar = jit.script(new AdaptiveResNet(), { sourceFile: CONTROL, inputs: [randn([2, 6])] });
    const back = roundTrips(ar, [2, 5].flatMap((n) => [0, 20, -20].map((s) => [randn([n, 6]).add(s)])));
    expect(back.graph.toString()).toMatch(/= if\(/);
    roundTrips(back, [[randn([3, 6]).add(20)], [randn([1, 6]).add(-20)]]);
    const h = jit.script(new Halver(), { sourceFile: CONTROL, inputs: [randn([2, 3])] });
    roundTrips(h, [[randn([2, 3]).mul(10)], [randn([5, 3]).mul(0.1)]]);
    // An int argument (a 0-d int32 ONNX input) driving scalar arithmetic, a loop and an if inside it.
    roundTrips(jit.script(new Nested(), { sourceFile: CONTROL, inputs: [randn([2, 3]), 3] }), [[randn([1, 3]), 0], [randn([3, 3]), 5]]);
    roundTrips(jit.script(new IntMath(), { inputs: [randn([2, 3]), 4] }), [[randn([1, 3]), 0], [randn([3, 3]), 7]]);
  });

  it('the op zoos (every exported op entry) import back with the same numbers', () => {
    manualSeed(14);
    const img = new ImageZoo(); img.eval();
    roundTrips(jit.trace(img, [randn([2, 2, 8, 8])], { dynamicAxes: { 0: { 0: 'N' } } }), [[randn([1, 2, 8, 8])], [randn([3, 2, 8, 8])]]);
    const vec = new VectorZoo(); vec.eval();
    roundTrips(jit.trace(vec, [randn([2, 6])], { dynamicAxes: { 0: { 0: 'N' } } }), [[randn([1, 6])], [randn([4, 6])]]);
  });
});
