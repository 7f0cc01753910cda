// jit.trace end to end on every model issue 4 lists: traced == eager within 1e-5 (relative) at
// batch sizes 1, 7 and 32 after tracing at batch 2 with a dynamic batch axis `N`, the output
// structure preserved, and the same numbers after a round trip through `.tsgraph` → jit.load.

import { describe, it, expect, beforeEach } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jit, manualSeed, noGrad, randn, tensor, type Tensor } from 'kiln';
import { walkNodes, type Graph } from '@kiln/ir-spec';
import { ResearchModel, ProductionModel, seedInputShape } from '../examples/seed/models.mjs';
import { digitsModel } from '../examples/digits/train.mjs';
import { AttentionBlock, LstmModel, SharedModel, TreeModel, causalMask, countTree, type Tree } from './models/trace-models.js';
import { expectMatches, relativeError, traceAndCompare } from './models/trace-check.js';

const batchAxis = { 0: { 0: 'N' } };
const opsOf = (g: Graph): string[] => [...walkNodes(g.body)].map((n) => n.op).filter((op) => op !== 'constant');

beforeEach(() => manualSeed(0));

describe('jit.trace: seed models', () => {
  it('ResearchModel (eval): traced == eager at N = 1, 7, 32, and after save → jit.load', async () => {
    const m = new ResearchModel();
    m.eval();
    const traced = await traceAndCompare({ model: m, inputs: (n) => [randn(seedInputShape(n))], dynamicAxes: batchAxis });
    expect(traced.graph.inputs[0].value.type).toMatchObject({ shape: ['N', 3, 32, 32] });
    expect(traced.graph.outputs[0].value.type).toMatchObject({ shape: ['N', 10] });
    // Save to a real file and load it by path.
    const dir = mkdtempSync(join(tmpdir(), 'kiln-trace-'));
    try {
      await traced.save(join(dir, 'research.tsgraph'));
      const loaded = await jit.load(join(dir, 'research.tsgraph'));
      const x = randn(seedInputShape(3));
      const [y] = await loaded.run([x]);
      // The runtime's kernels (Winograd F(4×4) for constant 3×3 weights): against the output's scale.
      expect(relativeError(y, noGrad(() => m.forward(x)), 1), 'research from file').toBeLessThanOrEqual(1e-5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ProductionModel (ResearchModel\'s weights, no dropout): traced == eager and has no dropout node', async () => {
    const research = new ResearchModel();
    const m = new ProductionModel();
    m.loadStateDict(research.stateDict());
    m.eval();
    const traced = await traceAndCompare({ model: m, inputs: (n) => [randn(seedInputShape(n))], dynamicAxes: batchAxis });
    expect(opsOf(traced.graph)).not.toContain('dropout');
    // nn.Identity records nothing; the weights are the research model's, under the same names.
    const names = traced.graph.inputs.filter((i) => i.kind === 'param').map((i) => i.name);
    expect(names.sort()).toEqual(Object.keys(research.stateDict()).filter((k) => !k.endsWith('num_batches_tracked')).sort());
  });

  it('digits CNN (examples/digits): traced == eager at N = 1, 7, 32 and after a .tsgraph round trip', async () => {
    const m = digitsModel();
    m.eval();
    await traceAndCompare({ model: m, inputs: (n) => [randn([n, 1, 8, 8])], dynamicAxes: batchAxis });
  });
});

describe('jit.trace: recurrent and attention models', () => {
  it('LSTM (batchFirst, 2 layers): [output, [h, c]] comes back from TracedModule.forward at every batch size', async () => {
    const m = new LstmModel();
    m.eval();
    const traced = await traceAndCompare({ model: m, inputs: (n) => [randn([n, 5, 6])], dynamicAxes: batchAxis });
    const out = traced.forward(randn([3, 5, 6])) as [Tensor, [Tensor, Tensor]];
    expect(out[0].shape).toEqual([3, 5, 8]);
    expect(out[1].map((t) => t.shape)).toEqual([[2, 3, 8], [2, 3, 8]]);
    expect(traced.graph.outputs.map((o) => o.name)).toEqual(['output.0', 'output.1.0', 'output.1.1']);
  });

  for (const needWeights of [true, false]) {
    it(`MultiheadAttention block with a causal float mask and a bool keyPaddingMask, needWeights=${needWeights}`, async () => {
      const m = new AttentionBlock(tensor(causalMask(5)), needWeights);
      m.eval();
      // Row b pads its last b % 3 positions; key 0 is never padded, so no query sees only -inf.
      const padding = (n: number) => tensor(Array.from({ length: n }, (_, b) => Array.from({ length: 5 }, (_, s) => s >= 5 - (b % 3))));
      const traced = await traceAndCompare({
        model: m, inputs: (n) => [randn([n, 5, 16]), padding(n)],
        // The same name in two inputs means the same size.
        dynamicAxes: { 0: { 0: 'N' }, 1: { 0: 'N' } },
      });
      expect(traced.graph.outputs.map((o) => o.name)).toEqual(needWeights ? ['output.y', 'output.weights'] : ['output']);
      if (needWeights) expect(traced.graph.outputs[1].value.type).toMatchObject({ shape: ['N', 5, 5] });
      // The causal mask is a tensor field, hence a buffer: a named graph input, read as a field.
      expect(traced.graph.inputs.find((i) => i.name === 'mask')).toMatchObject({ kind: 'param' });
      expect(traced.code).toMatch(/= reshape\(this\.mask, \{shape=\[1,5,5\]\}\);  \/\/ attn$/m);
      // The padding mask's additive form follows N (an expand of 0, not a constant of the example's size).
      expect(traced.code).toContain('expand(v');
      expect([...walkNodes(traced.graph.body)].filter((n) => n.op === 'constant' && 'name' in n.attrs)).toEqual([]);
    });
  }
});

describe('jit.trace: weight sharing and recursion', () => {
  it('a submodule called twice: one parameter in the graph, used by two linear nodes', async () => {
    const m = new SharedModel();
    const traced = await traceAndCompare({ model: m, inputs: (n) => [randn([n, 8])], dynamicAxes: batchAxis });
    const params = traced.graph.inputs.filter((i) => i.kind === 'param');
    expect(params.map((p) => p.name)).toEqual(['shared.weight', 'shared.bias', 'head.weight', 'head.bias']);
    const w = params[0].value;
    const users = [...walkNodes(traced.graph.body)].filter((n) => n.inputs.includes(w));
    expect(users.map((n) => [n.op, n.meta.scope])).toEqual([['linear', 'shared'], ['linear', 'shared']]);
  });

  it('a recursive tree model traced for one fixed tree: the graph is that tree unrolled', async () => {
    const tree: Tree = [[0, [1, 2]], [3, 0]];
    const m = new TreeModel(tree);
    const traced = await traceAndCompare({ model: m, inputs: (n) => [randn([n, 4, 4])], dynamicAxes: batchAxis });
    // The trace does not keep the recursion: it records the ops this one tree runs. Each leaf is
    // slice + reshape + linear, each inner node cat + linear + tanh, then one output linear — so
    // 5 leaves and 4 inner nodes give 3·5 + 3·4 + 1 = 28 ops. Another tree needs another trace.
    const [leaves, inner] = countTree(tree);
    expect([leaves, inner]).toEqual([5, 4]);
    const ops = opsOf(traced.graph);
    expect(ops).toHaveLength(3 * leaves + 3 * inner + 1);
    expect(ops.filter((o) => o === 'cat')).toHaveLength(inner);
    expect(ops.filter((o) => o === 'slice')).toHaveLength(leaves);
    // The leaf encoder's one weight is shared by all five leaves.
    expect(traced.graph.inputs.filter((i) => i.kind === 'param').map((i) => i.name)).toEqual(['leaf.weight', 'leaf.bias', 'compose.weight', 'compose.bias', 'out.weight', 'out.bias']);
    // The traced graph is right for its tree and wrong for another: it still computes `tree`.
    const other = new TreeModel([0, 1]);
    other.loadStateDict(m.stateDict());
    const x = randn([3, 4, 4]);
    expectMatches(traced.forward(x), noGrad(() => m.forward(x)), 'fixed tree');
    expect(traced.forward(x).toArray()).not.toEqual(noGrad(() => other.forward(x)).toArray());
  });
});
