// jit.trace outputs of every shape a forward may return — a tensor, an array, a tuple, an object,
// and these nested — come back from TracedModule.forward with the same structure at every batch
// size, as flat graph outputs named after their path (`output.1.h`), and unchanged through .tsgraph.

import { describe, it, expect, beforeEach } from 'vitest';
import { manualSeed, nn, randn, type Tensor } from 'kiln';
import { traceAndCompare } from './models/trace-check.js';

/** A linear layer whose result is returned in the shape `pack` gives it. */
class Heads extends nn.Module {
  body = new nn.Linear(6, 12);
  constructor(private readonly pack: (y: Tensor) => unknown) { super(); }
  forward(x: Tensor): unknown { return this.pack(this.body.forward(x)); }
}

const cases: { name: string; pack: (y: Tensor) => unknown; outputs: string[]; structure: unknown }[] = [
  { name: 'a tensor', pack: (y) => y.relu(), outputs: ['output'], structure: [7, 12] },
  { name: 'an array (chunk)', pack: (y) => y.chunk(3, 1), outputs: ['output.0', 'output.1', 'output.2'], structure: [[7, 4], [7, 4], [7, 4]] },
  {
    name: 'a tuple [logits, [sum, mean]]', pack: (y) => [y, [y.sum(1), y.mean()]] as [Tensor, [Tensor, Tensor]],
    outputs: ['output.0', 'output.1.0', 'output.1.1'], structure: [[7, 12], [[7], []]],
  },
  {
    name: 'an object { logits, probs, parts: [a, b] }', pack: (y) => ({ logits: y, probs: y.softmax(-1), parts: y.split(6, 1) }),
    outputs: ['output.logits', 'output.probs', 'output.parts.0', 'output.parts.1'], structure: { logits: [7, 12], probs: [7, 12], parts: [[7, 6], [7, 6]] },
  },
];

beforeEach(() => manualSeed(0));

describe('jit.trace: output structures', () => {
  for (const c of cases) {
    it(`${c.name}: same structure and numbers at N = 1, 7, 32, and through .tsgraph`, async () => {
      const traced = await traceAndCompare({ model: new Heads(c.pack), inputs: (n) => [randn([n, 6])], dynamicAxes: { 0: { 0: 'N' } } });
      expect(traced.graph.outputs.map((o) => o.name)).toEqual(c.outputs);
      const { structureOf } = await import('./models/trace-check.js');
      expect(structureOf(traced.forward(randn([7, 6])))).toEqual(c.structure);
    });
  }

  it('rejects a forward that returns something other than tensors, naming where', async () => {
    const { jit } = await import('kiln');
    expect(() => jit.trace(new Heads((y) => ({ y, n: 3 })), [randn([2, 6])])).toThrowError(/returned number at 'output\.n'; outputs must be tensors/);
  });
});
