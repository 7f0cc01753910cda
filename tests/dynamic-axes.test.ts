// Symbolic dims beyond dim 0 (`dynamicAxes` over a sequence length T) for jit.script and
// jit.trace: sequence models compile once with a symbolic T, agree with eager at several T and
// N, and run from their `.tsgraph` in the runtime alone at several T. An LSTM/GRU traced with a
// dynamic T becomes a loop region over T instead of a trace fixed at the example's T.
import { describe, it, expect } from 'vitest';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from '@kiln/runtime';
import { verifyGraph, walkNodes, type Graph } from '@kiln/ir-spec';
import { jit, manualSeed, nn, noGrad, randn, Tensor } from 'kiln';
import { BiGru, DecayOverSteps, HandRnn, LstmTagger, MhaPool, PairSteps, TinyAttention } from './script-models/sequence.js';
import { LstmModel } from './models/trace-models.js';

// WebGPU runs on SwiftShader where there is no GPU (DESIGN.md); set before the device is created.
process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

const flat = (v: unknown): Tensor[] => (v instanceof Tensor ? [v] : Array.isArray(v) ? v.flatMap(flat) : []);
const ops = (g: Graph): string[] => [...walkNodes(g.body)].map((n) => n.op);

function close(got: { data: ArrayLike<number>; shape: readonly number[] }, want: Tensor): void {
  expect([...got.shape]).toEqual([...want.shape]);
  const a = got.data, b = want.toArray();
  let worst = 0;
  for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i])));
  expect(worst).toBeLessThanOrEqual(1e-5);
}

/** `compiled` (a ScriptModule or TracedModule) and its saved file agree with eager at every input set. */
async function agreeEverywhere(model: nn.Module, compiled: { forward(...xs: Tensor[]): unknown; toBytes(): Uint8Array }, sets: Tensor[][]): Promise<void> {
  const file = await load(compiled.toBytes());
  for (const xs of sets) {
    const want = flat(noGrad(() => model.forward(...xs)));
    const got = flat(compiled.forward(...xs));
    expect(got).toHaveLength(want.length);
    want.forEach((w, i) => close(got[i], w));
    const fromFile = await file.run(xs);
    want.forEach((w, i) => close(fromFile[i], w));
  }
}

describe('jit.script with dynamicAxes: a symbolic sequence length T', () => {
  it('LSTM tagger (batchFirst, 2 layers): one graph with x: f32[N,T,6] and a loop over T, equal to eager at T = 3, 5, 9 and from its file', async () => {
    manualSeed(1);
    const m = new LstmTagger();
    m.eval();
    const s = jit.script(m, { dynamicAxes: { 0: { 0: 'N', 1: 'T' } } });
    const sets = [[randn([2, 3, 6])], [randn([1, 5, 6])], [randn([4, 9, 6])]];
    s.forward(...sets[0]);
    const graph = s.graph;
    expect(graph.inputs[0].value.type).toMatchObject({ shape: ['N', 'T', 6] });
    expect(graph.outputs[0].value.type).toMatchObject({ shape: ['N', 'T', 3] });
    // Each LSTM layer's steps are one loop whose trip count is T (not unrolled at T's example size).
    expect(ops(graph).filter((o) => o === 'loop')).toHaveLength(2);
    expect(verifyGraph(graph)).toBeUndefined();
    await agreeEverywhere(m, s, sets);
    // Other sizes of N and T reuse the graph compiled first.
    expect(s.graph).toBe(graph);
  });

  for (const [name, make] of [['matmul over T (scores [N,T,T], softmax, LayerNorm, feed-forward)', () => new TinyAttention()], ['nn.MultiheadAttention (4 heads, batchFirst) pooled over T', () => new MhaPool()]] as const) {
    it(`a transformer-like block, ${name}: symbolic T, equal to eager at T = 2, 5, 9 and from its file`, async () => {
      manualSeed(2);
      const m = make();
      m.eval();
      const s = jit.script(m, { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, inputs: [randn([2, 4, 16])] });
      const graph = s.graph;
      expect(graph.inputs[0].value.type).toMatchObject({ shape: ['N', 'T', 16] });
      await agreeEverywhere(m, s, [[randn([3, 2, 16])], [randn([2, 5, 16])], [randn([1, 9, 16])]]);
      expect(s.graph).toBe(graph);
    });
  }

  it('only the named dims are symbolic: { 0: { 1: "T" } } fixes N; another N compiles a second graph, another T does not', () => {
    manualSeed(3);
    const m = new TinyAttention();
    m.eval();
    const s = jit.script(m, { dynamicAxes: { 0: { 1: 'T' } }, inputs: [randn([2, 4, 16])] });
    const first = s.graph;
    expect(first.inputs[0].value.type).toMatchObject({ shape: [2, 'T', 16] });
    for (const x of [randn([2, 7, 16]), randn([3, 7, 16]), randn([2, 1, 16])]) close(s.forward(x) as Tensor, noGrad(() => m.forward(x)));
    // The last call (N = 2 again) ran the first graph; N = 3 got a graph of its own.
    expect(s.graph).toBe(first);
    s.forward(randn([3, 2, 16]));
    expect(s.graph).not.toBe(first);
    expect(s.graph.inputs[0].value.type).toMatchObject({ shape: [3, 'T', 16] });
  });

  it('a loop of the model\'s own over x.shape[1]: jit.trace warns that T is fixed and advises jit.script, which keeps T symbolic', async () => {
    const m = new DecayOverSteps();
    const traced = jit.trace(m, [randn([2, 4, 3])], { dynamicAxes: { 0: { 1: 'T' } }, warn: false });
    expect(traced.warnings.find((w) => w.kind === 'control-flow')?.message).toMatch(/so the trace only holds for T=4\. Use jit\.script for this module/);
    const s = jit.script(m, { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, inputs: [randn([2, 4, 3])] });
    expect(ops(s.graph)).toContain('loop');
    await agreeEverywhere(m, s, [[randn([2, 1, 3])], [randn([3, 4, 3])], [randn([1, 9, 3])]]);
  });

  it('a hand-written recurrence reading step t with x.slice(1, t, t + 1): the trace fixes T and advises jit.script, which loops over a symbolic T', async () => {
    manualSeed(7);
    const m = new HandRnn();
    const traced = jit.trace(m, [randn([2, 5, 4])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, warn: false });
    expect(traced.warnings.find((w) => w.kind === 'control-flow')?.message).toMatch(/Use jit\.script for this module with the same dynamicAxes \(a loop up to a tensor size becomes a loop region; read step t as x\.slice\(dim, t, t \+ 1\)\), or do not declare this axis dynamic\.$/);
    const s = jit.script(m, { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, inputs: [randn([2, 5, 4])] });
    expect(s.graph.inputs[0].value.type).toMatchObject({ shape: ['N', 'T', 4] });
    // The step is an index_select at [t] inside the loop (a slice's bounds would be fixed numbers).
    expect(s.code).toMatch(/index_select\(x, /);
    await agreeEverywhere(m, s, [[randn([3, 1, 4])], [randn([2, 4, 4])], [randn([1, 9, 4])]]);
    // The same from the .ts file, with the type checker.
    const typed = jit.script(m, { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, inputs: [randn([2, 3, 4])], sourceFile: fileURLToPath(new URL('./script-models/sequence.ts', import.meta.url)) });
    await agreeEverywhere(m, typed, [[randn([2, 6, 4])]]);
  });

  it('a slice of run-time length (x.slice(1, t, t + 2)) is still a located ScriptError', () => {
    expect(() => jit.script(new PairSteps(), { dynamicAxes: { 0: { 1: 'T' } }, inputs: [randn([2, 5, 4])] }))
      .toThrowError(/PairSteps\.forward \(runtime text\):3:\d+: the tensor method \.slice\(\) failed while recording it .*a run-time number argument is passed as a 0-d tensor/s);
  });

  it('a bad declaration is an error that names the argument and the dim', () => {
    const m = new TinyAttention();
    const x = randn([2, 4, 16]);
    expect(() => jit.script(m, { dynamicAxes: { 0: { 1: 'T' } }, dynamicBatch: true, inputs: [x] }))
      .toThrowError("jit.script: pass either dynamicAxes or dynamicBatch, not both; with dynamicAxes only the dims it names are symbolic (name dim 0 too for a dynamic batch, e.g. { 0: { 0: 'N', 1: 'T' } })");
    expect(() => jit.script(m, { dynamicAxes: { 0: { 3: 'T' } }, inputs: [x] }))
      .toThrowError('jit.script: dynamicAxes names dim 3 of argument 0, which has shape [2,4,16]');
    expect(() => jit.script(m, { dynamicAxes: { 1: { 0: 'N' } }, inputs: [x] }))
      .toThrowError('jit.script: dynamicAxes names argument 1, but forward was called with 1 argument(s)');
    expect(() => jit.script(m, { dynamicAxes: { 0: { 1: 'seq len' } }, inputs: [x] }))
      .toThrowError(`jit.script: dynamic axis name "seq len" (argument 0, dim 1) must be an identifier such as 'T' (not starting with 'kiln_')`);
    const g = new BiGru();
    expect(() => jit.script(g, { dynamicAxes: { 0: { 1: 'N' }, 1: { 1: 'N' } }, inputs: [randn([5, 3, 5]), randn([4, 2, 4])] }))
      .toThrowError("jit.script: 'N' names dims of different sizes in this call (3 at argument 0, dim 1, and 2 at argument 1, dim 1); the same name must mean the same size, so give the dims different names if they may differ");
    expect(() => jit.script((a: Tensor, k: number) => a.mul(k), { dynamicAxes: { 1: { 0: 'N' } }, inputs: [x, 2] }))
      .toThrowError('jit.script: dynamicAxes names argument 1, which is number; only tensor arguments have dims');
  });
});

describe('jit.trace with a dynamic sequence length over LSTM/GRU layers', () => {
  it('LSTM (batchFirst, 2 layers) with dynamicAxes { 0: { 0: "N", 1: "T" } }: no warning, loops over T, equal to eager at T = 3, 5, 9 and from its file', async () => {
    manualSeed(4);
    const m = new LstmModel();
    m.eval();
    const traced = jit.trace(m, [randn([2, 5, 6])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, checkInputs: [[randn([3, 9, 6])], [randn([1, 3, 6])]] });
    expect(traced.warnings).toEqual([]);
    expect(traced.graph.inputs[0].value.type).toMatchObject({ shape: ['N', 'T', 6] });
    expect(traced.graph.outputs.map((o) => o.value.type)).toMatchObject([{ shape: ['N', 'T', 8] }, { shape: [2, 'N', 8] }, { shape: [2, 'N', 8] }]);
    expect(ops(traced.graph).filter((o) => o === 'loop')).toHaveLength(2);
    // The layer's parameters keep their names (the state dict's).
    expect(traced.graph.inputs.filter((i) => i.kind === 'param').map((i) => i.name)).toContain('lstm.weight_hh_l1');
    expect(verifyGraph(traced.graph)).toBeUndefined();
    await agreeEverywhere(m, traced, [[randn([2, 3, 6])], [randn([2, 5, 6])], [randn([4, 9, 6])], [randn([1, 1, 6])]]);
    // The -O2 pipeline (freeze, fusion, ...) keeps the loops and the values.
    const fast = jit.optimizeForInference(traced);
    expect(ops(fast.graph)).toContain('loop');
    await agreeEverywhere(m, fast, [[randn([3, 2, 6])], [randn([2, 7, 6])]]);
  });

  it('bidirectional 2-layer GRU, sequence first, with an initial state: T and N both dynamic', async () => {
    manualSeed(5);
    const m = new BiGru();
    m.eval();
    const axes = { 0: { 0: 'T', 1: 'N' }, 1: { 1: 'N' } };
    const traced = jit.trace(m, [randn([4, 2, 5]), randn([4, 2, 4])], { dynamicAxes: axes });
    expect(traced.warnings).toEqual([]);
    expect(ops(traced.graph).filter((o) => o === 'loop')).toHaveLength(4);
    await agreeEverywhere(m, traced, [[randn([3, 2, 5]), randn([4, 2, 4])], [randn([9, 3, 5]), randn([4, 3, 4])], [randn([1, 1, 5]), randn([4, 1, 4])]]);
  });

  it('recording again with loops starts from the same buffers: a training-mode BatchNorm after the LSTM updates its running stats once, as one eager run', () => {
    manualSeed(8);
    class LstmBn extends nn.Module {
      lstm = new nn.LSTM(6, 8, { batchFirst: true });
      bn = new nn.BatchNorm1d(8);
      forward(x: Tensor): Tensor { return this.bn.forward(this.lstm.forward(x)[0].transpose(1, 2)); }
    }
    const m = new LstmBn();
    const twin = new LstmBn();
    twin.loadStateDict(m.stateDict());
    const x = randn([3, 5, 6]);
    noGrad(() => twin.forward(x));
    const traced = jit.trace(m, [x], { dynamicAxes: { 0: { 1: 'T' } }, checkTrace: false });
    expect(ops(traced.graph)).toContain('loop');
    for (const k of ['bn.running_mean', 'bn.running_var', 'bn.num_batches_tracked']) {
      expect([...m.stateDict()[k].toArray()], k).toEqual([...twin.stateDict()[k].toArray()]);
    }
  });

  it('an LSTM whose T is fixed stays unrolled (a dynamic batch alone changes no op)', () => {
    const m = new LstmModel();
    m.eval();
    const traced = jit.trace(m, [randn([2, 3, 6])], { dynamicAxes: { 0: { 0: 'N' } } });
    expect(ops(traced.graph)).not.toContain('loop');
    expect(traced.graph.inputs[0].value.type).toMatchObject({ shape: ['N', 3, 6] });
  });

  it('a bare nn.LSTM traced with only T dynamic (N fixed): loops over T; its file run on WebGPU equals eager at T = 2 and 6', async () => {
    manualSeed(6);
    const m = new nn.LSTM(3, 4, { batchFirst: true });
    m.eval();
    const traced = jit.trace(m, [randn([2, 4, 3])], { dynamicAxes: { 0: { 1: 'T' } } });
    expect(traced.graph.inputs[0].value.type).toMatchObject({ shape: [2, 'T', 3] });
    expect(traced.graph.inputs.filter((i) => i.kind === 'param').map((i) => i.name)).toEqual(['weight_ih_l0', 'bias_ih_l0', 'weight_hh_l0', 'bias_hh_l0']);
    const bytes = traced.toBytes();
    const gpu = await load(bytes, { backend: 'webgpu' });
    for (const T of [2, 6]) {
      const x = randn([2, T, 3]);
      const want = flat(noGrad(() => m.forward(x)));
      const got = await gpu.run([x]);
      want.forEach((w, i) => close(got[i], w));
    }
  }, 120_000);
});

describe('jit.trace: what a compile costs in model runs', () => {
  /** Linear + relu that records the batch size of every forward call. */
  class Counted extends nn.Module {
    fc = new nn.Linear(4, 3);
    batches: number[] = [];
    constructor(private readonly minBatch = 1) { super(); }
    forward(x: Tensor): Tensor {
      this.batches.push(x.shape[0]);
      if (x.shape[0] < this.minBatch) throw new Error(`needs a batch of at least ${this.minBatch}`);
      return this.fc.forward(x).relu();
    }
  }

  it('checkTrace runs eager again on the example, so randomness outside the graph is caught', () => {
    class Random extends nn.Module {
      forward(x: Tensor): Tensor { return x.add(Math.random()); }
    }
    expect(() => jit.trace(new Random(), [randn([2, 4])], { warn: false })).toThrow(/checkTrace: on the example inputs, output .* differs from eager/);
  });

  it('probes a dynamic batch at a small size, not at the example size + 1, and the graph holds at other sizes', async () => {
    manualSeed(3);
    const m = new Counted();
    const traced = jit.trace(m, [randn([8, 4])], { dynamicAxes: { 0: { 0: 'N' } } });
    expect(m.batches).toEqual([8, 2, 8]); // the example, the probe, checkTrace's eager run
    await agreeEverywhere(m, traced, [[randn([5, 4])], [randn([1, 4])]]);
  });

  it('probes at the example size + 1 when the model cannot run at the small size', async () => {
    const m = new Counted(3);
    const traced = jit.trace(m, [randn([8, 4])], { dynamicAxes: { 0: { 0: 'N' } } });
    expect(m.batches).toEqual([8, 2, 9, 8]);
    await agreeEverywhere(m, traced, [[randn([5, 4])]]);
  });
});
