// nn.RNN (Elman, tanh/relu) traced with a dynamic sequence length records a loop over T, as
// LSTM/GRU do (rnn-graph.ts), and its graph and saved file agree with eager at several T and N.
import { describe, it, expect } from 'vitest';
import { load } from '@kiln/runtime';
import { walkNodes, verifyGraph } from '@kiln/ir-spec';
import { jit, manualSeed, nn, noGrad, randn, Tensor } from 'kiln';

function close(got: { data: ArrayLike<number>; shape: readonly number[] }, want: Tensor): void {
  expect([...got.shape]).toEqual([...want.shape]);
  const a = got.data, b = want.toArray();
  let worst = 0;
  for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i])));
  expect(worst).toBeLessThanOrEqual(1e-5);
}

describe('jit.trace of nn.RNN with a dynamic sequence length', () => {
  for (const nonlinearity of ['tanh', 'relu'] as const) {
    it(`${nonlinearity}, 2 layers, bidirectional, batch first: one loop per layer and direction; eager = graph = file at T = 2, 5, 8`, async () => {
      manualSeed(11);
      const m = new nn.RNN(3, 4, { numLayers: 2, bidirectional: true, batchFirst: true, nonlinearity });
      m.eval();
      const traced = jit.trace(m, [randn([2, 5, 3])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } } });
      expect(traced.warnings).toEqual([]);
      expect([...walkNodes(traced.graph.body)].filter((n) => n.op === 'loop')).toHaveLength(4);
      expect(verifyGraph(traced.graph)).toBeUndefined();
      const file = await load(traced.toBytes());
      for (const x of [randn([2, 2, 3]), randn([3, 5, 3]), randn([1, 8, 3])]) {
        const want = noGrad(() => m.forward(x));
        const got = traced.forward(x) as Tensor[];
        want.forEach((w, i) => close(got[i], w));
        const fromFile = await file.run([x]);
        want.forEach((w, i) => close(fromFile[i], w));
      }
    });
  }
});
