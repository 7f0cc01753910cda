// batch_norm_backward, the one-kernel gradient graph autodiff (jit.compile) emits for a
// training-mode batch norm (batch_norm over batch_norm_stats of the same x): it must give what
// eager autograd gives through the two ops' own gradient rules, for every shape and with or
// without a weight; and differentiate() must emit it exactly for that pair.
import { describe, expect, it } from 'vitest';
import { dispatch, manualSeed, randn, type Tensor } from '@kiln/core';
import { getOp, GraphBuilder, tensorType, type CpuTensor } from '@kiln/ir-spec';
import { differentiate } from '../packages/kiln/src/jit/compile-autodiff.js';

const cpu = (t: Tensor): CpuTensor => ({ data: t.contiguous().data.slice(0, t.numel()), shape: [...t.shape], dtype: 'float32' });

function eagerGrads(x: Tensor, w: Tensor | null, b: Tensor | null, g: Tensor, eps: number, relu: boolean) {
  const [mean, variance] = dispatch('batch_norm_stats', [x], {}) as Tensor[];
  const [y] = dispatch('batch_norm', [x, mean, variance, w, b], { eps }) as Tensor[];
  const out = relu ? y.relu() : y;
  out.mul(g).sum().backward();
  return { dx: x.grad!, dw: w?.grad ?? null, db: b?.grad ?? null, mean: mean.detach(), variance: variance.detach(), out: out.detach() };
}

function close(a: Float32Array | ArrayLike<number>, b: Float32Array | ArrayLike<number>, tol: number) {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  expect(worst).toBeLessThan(tol);
}

describe('batch_norm_backward', () => {
  const cases: { shape: number[]; weight: boolean; eps: number; relu?: boolean }[] = [
    { shape: [4, 3, 5, 6], weight: true, eps: 1e-5 },
    { shape: [32, 16, 8, 8], weight: true, eps: 1e-5 },
    { shape: [7, 5], weight: false, eps: 1e-3 },
    { shape: [2, 4, 9], weight: true, eps: 0.1 },
    { shape: [4, 3, 5, 6], weight: true, eps: 1e-5, relu: true },
    { shape: [7, 5], weight: false, eps: 1e-3, relu: true },
  ];
  for (const c of cases) {
    it(`equals eager autograd through ${c.relu ? 'relu, ' : ''}batch_norm and batch_norm_stats: [${c.shape}]${c.weight ? '' : ' without weight'}, eps ${c.eps}`, () => {
      manualSeed(3);
      const C = c.shape[1];
      const x = randn(c.shape).mul(2).add(0.5).requiresGrad_();
      const w = c.weight ? randn([C]).requiresGrad_() : null;
      const b = c.weight ? randn([C]).requiresGrad_() : null;
      const g = randn(c.shape);
      const want = eagerGrads(x, w, b, g, c.eps, !!c.relu);
      const [dx, dw, db] = getOp('batch_norm_backward').cpu([cpu(g), cpu(x.detach()), cpu(want.mean), cpu(want.variance), w ? cpu(w.detach()) : null, c.relu ? cpu(want.out) : null], { eps: c.eps }, {});
      close(dx.data as Float32Array, cpu(want.dx).data, 1e-5);
      if (w) close(dw.data as Float32Array, cpu(want.dw!).data, 1e-4);
      if (b) close(db.data as Float32Array, cpu(want.db!).data, 1e-4);
    });
  }

  it('differentiate() emits it for batch_norm over batch_norm_stats of the same x (with the relu after it), and the rules otherwise', () => {
    const graph = (stats: boolean, relu = false) => {
      const gb = new GraphBuilder('bn');
      const x = gb.input('x', tensorType('float32', [4, 3, 2, 2]));
      const w = gb.input('w', tensorType('float32', [3]));
      const m = gb.input('m', tensorType('float32', [3]));
      const v = gb.input('v', tensorType('float32', [3]));
      const [mean, variance] = stats ? gb.op('batch_norm_stats', [x], {}) : [m, v];
      const y = gb.op('batch_norm', [x, mean, variance, w, null], { eps: 1e-5 })[0];
      gb.output('y', relu ? gb.op1('relu', [y]) : y);
      return gb.build();
    };
    const ops = (stats: boolean, relu = false) => differentiate(graph(stats, relu), new Set(['x', 'w']), [0]).backward.body.nodes.map((n) => n.op);
    expect(ops(true)).toContain('batch_norm_backward');
    expect(ops(true, true).filter((op) => op !== 'constant')).toEqual(['batch_norm_backward']);
    expect(ops(false)).not.toContain('batch_norm_backward');
  });
});
