// jit.compile guards on the autocast state (as torch.compile guards on torch.is_autocast_enabled
// and the autocast dtype): a compiled module called outside and inside amp.autocast, and with
// float16 and bfloat16, gets one graph each, each giving what eager gives in that state, and
// going back to an earlier state reuses its graph (no recompilation) — also in
// 'reduce-overhead' mode, whose fast path skips the cache lookup.

import { describe, expect, it } from 'vitest';
import { amp, jit, manualSeed, nn, noGrad, randn, type Tensor } from 'kiln';

function net(): nn.Module {
  manualSeed(5);
  return new nn.Sequential(new nn.Linear(12, 16), new nn.ReLU(), new nn.Linear(16, 3)).eval();
}
const same = (a: Tensor, b: Tensor) => {
  expect(a.dtype).toBe(b.dtype);
  expect(Array.from(a.toArray())).toEqual(Array.from(b.toArray()));
};

describe('jit.compile and amp.autocast', () => {
  for (const mode of ['default', 'reduce-overhead'] as const) {
    it(`${mode}: a graph per autocast state, each equal to eager; states revisited reuse their graph`, () => {
      const m = net();
      const c = jit.compile(m, { mode });
      const x = randn([4, 12]);
      const outside = () => noGrad(() => c.forward(x) as Tensor);
      const half = () => amp.autocast(() => noGrad(() => c.forward(x) as Tensor));
      const bf16 = () => amp.autocast(() => noGrad(() => c.forward(x) as Tensor), { dtype: 'bfloat16' });
      const eager = noGrad(() => m.forward(x));
      const eagerHalf = amp.autocast(() => noGrad(() => m.forward(x)));
      const eagerBf16 = amp.autocast(() => noGrad(() => m.forward(x)), { dtype: 'bfloat16' });

      same(outside(), eager);
      expect(eager.dtype).toBe('float32');
      same(half(), eagerHalf);
      expect(eagerHalf.dtype).toBe('float16');
      same(bf16(), eagerBf16);
      expect(eagerBf16.dtype).toBe('bfloat16');
      expect(c.explain().compiles).toBe(3);
      expect(c.explain().recompiles).toEqual(['autocast changed (now autocast float16)', 'autocast changed (now autocast bfloat16)']);
      // Back to each state: its own graph again, nothing compiled.
      same(outside(), eager);
      same(half(), eagerHalf);
      same(outside(), eager);
      same(amp.autocast(() => noGrad(() => c.forward(x) as Tensor), { enabled: false }), eager);
      expect(c.explain().compiles).toBe(3);
    });
  }
});
