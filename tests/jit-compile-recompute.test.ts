// Recomputation in training graphs (jit.compile's `recompute`): a saved value made by a cheap
// deterministic op from values the backward keeps anyway is computed again by the backward
// graph instead of being held. differentiate() must only ever shrink the saved set, never
// recompute a random op, and give bit-identical gradients; through jit.compile the digits CNN
// (batch norms, relus, dropout) trains to the same losses and parameters bit for bit, holding
// fewer bytes (explain().graphs[i].saved).
import { describe, expect, it } from 'vitest';
import { F, jit, manualSeed, nn, optim, randn, tensor } from 'kiln';
import { GraphBuilder, tensorType, type Graph } from '@kiln/ir-spec';
import { differentiate } from '../packages/kiln/src/jit/compile-autodiff.js';

/** x → batch_norm (training) → relu → mul by a uniform mask → sum: what a BN + dropout block saves. */
function block(): Graph {
  const b = new GraphBuilder('block');
  const x = b.input('x', tensorType('float32', [4, 3, 2, 2]));
  const w = b.input('w', tensorType('float32', [3]));
  const [mean, variance] = b.op('batch_norm_stats', [x], {});
  const y = b.op1('relu', [b.op1('batch_norm', [x, mean, variance, w, null], { eps: 1e-5 })]);
  const mask = b.op1('uniform', [], { shape: [4, 3, 2, 2] });
  const z = b.op1('mul', [b.op1('exp', [y]), mask]);
  b.output('z', z);
  return b.build();
}

const opsOf = (g: Graph) => g.body.nodes.map((n) => n.op);

describe('recomputation in training graphs', () => {
  it('differentiate() recomputes cheap saved values from kept ones, never a random op, and only shrinks the saved set', () => {
    const g = block(), wrt = new Set(['x', 'w']);
    const held = differentiate(g, wrt, [0]);
    const again = differentiate(g, wrt, [0], { recompute: true });
    expect(held.recomputed).toBe(0);
    expect(again.recomputed).toBeGreaterThan(0);
    expect(again.savedValues.length).toBeLessThan(held.savedValues.length);
    const savedOps = (j: typeof held) => j.forward.outputs.slice(g.outputs.length).map((o) => g.body.nodes.find((n) => n.outputs.includes(o.value))!.op);
    // exp(y) is recomputed from y, y from the batch norm of x with its kept statistics; the mask stays saved.
    expect(savedOps(held)).toContain('exp');
    expect(savedOps(again)).not.toContain('exp');
    expect(savedOps(again)).toContain('uniform');
    expect(opsOf(again.backward)).not.toContain('uniform');
    expect(opsOf(again.backward)).toEqual(expect.arrayContaining(['exp', 'relu', 'batch_norm']));
    // Every value the recomputing backward reads was saved by the plain one.
    for (const name of again.savedValues) {
      const v = again.forward.outputs.find((o) => o.name === name)!.value;
      expect(held.forward.outputs.some((o) => o.value === v)).toBe(true);
    }
  });

  it('jit.compile({ recompute: true }) trains the digits-style CNN to bit-identical losses and parameters, holding fewer bytes', () => {
    const make = () => new nn.Sequential(
      new nn.Conv2d(1, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(),
      new nn.Conv2d(8, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(),
      new nn.MaxPool2d(2), new nn.Flatten(), new nn.Dropout(0.25), new nn.Linear(8 * 4 * 4, 10));
    manualSeed(1);
    const xs = Array.from({ length: 3 }, () => randn([8, 1, 8, 8]));
    const ys = Array.from({ length: 3 }, (_, i) => tensor(Int32Array.from({ length: 8 }, (_, j) => (i * 8 + j) % 10), { shape: [8] }));
    const train = (recompute: boolean) => {
      manualSeed(7);
      const model = make().train();
      const net = jit.compile(model, { recompute });
      const opt = new optim.Adam(model.parameters(), { lr: 1e-2 });
      const losses: number[] = [];
      for (let k = 0; k < 12; k++) {
        opt.zeroGrad();
        const loss = F.crossEntropy(net.forward(xs[k % 3]), ys[k % 3]);
        losses.push(loss.item());
        loss.backward();
        opt.step();
      }
      return { losses, params: model.parameters().map((p) => Array.from(p.contiguous().data.slice(0, p.numel()))), saved: net.explain().graphs[0].saved! };
    };
    const held = train(false), again = train(true);
    expect(again.losses).toEqual(held.losses);
    expect(again.params).toEqual(held.params);
    expect(held.saved.recomputed).toBe(0);
    expect(again.saved.recomputed).toBeGreaterThan(0);
    expect(again.saved.bytes).toBeLessThan(held.saved.bytes);
  });
});
