// The runtime's Winograd F(4×4, 3×3) conv against PyTorch 1.13 (tests/golden-kiln/winograd_conv,
// made by scripts/golden/winograd_conv.py): conv stacks with BatchNorm (eval) and ReLU, traced,
// compiled at -O2 (BatchNorm folded into constant weights and bias, conv + relu fused) and run
// by the CPU runtime, where every conv's constant weight takes F(4×4) (winograd4Applies); ragged
// output sizes, padding 0 and 1, batch 1 and 2, 16–64 input channels. Tolerance: the conv golden
// file's (tests/golden/ops/conv.json: rtol 1e-4, atol 1e-5); F(4×4) rounds about 10× more than
// the direct sum (eager), which the test also checks, but stays well inside it.

import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { jit, nn, noGrad, tensor } from 'kiln';
import { createModel, fastPrimitives, winograd4Applies } from '@kiln/runtime';
import { LEVELS, runPipeline } from '@kiln/compiler';

interface Golden { shape: number[]; data: number[] }
interface Case { name: string; layers: { cin: number; cout: number; padding: number; bn: boolean }[]; state_dict: Record<string, Golden>; input: Golden; output: Golden }
const FILE = new URL('./golden-kiln/winograd_conv/cases.json', import.meta.url);
const { cases } = JSON.parse(readFileSync(FILE, 'utf8')) as { cases: Case[] };
const TOL = { rtol: 1e-4, atol: 1e-5 };

function build(c: Case): nn.Sequential {
  const mods: nn.Module[] = [];
  for (const l of c.layers) {
    mods.push(new nn.Conv2d(l.cin, l.cout, 3, { padding: l.padding, bias: !l.bn }));
    if (l.bn) mods.push(new nn.BatchNorm2d(l.cout));
    mods.push(new nn.ReLU());
  }
  const m = new nn.Sequential(...mods);
  const sd = m.stateDict();
  const loaded = { ...sd };
  for (const [k, v] of Object.entries(c.state_dict)) loaded[k] = tensor(v.data, { shape: v.shape });
  m.loadStateDict(loaded);
  m.eval();
  return m;
}

describe('Winograd F(4×4, 3×3) in the CPU runtime against PyTorch', () => {
  for (const c of cases) {
    it(c.name, () => {
      expect(fastPrimitives().conv3x3, 'WebAssembly SIMD kernels').toBeDefined();
      // Every conv of the case is one the runtime runs as F(4×4).
      let [, , H, W] = c.input.shape;
      for (const l of c.layers) {
        const OH = H + 2 * l.padding - 2, OW = W + 2 * l.padding - 2;
        const win = { kh: 3, kw: 3, sh: 1, sw: 1, pt: l.padding, pl: l.padding, dh: 1, dw: 1 };
        expect(winograd4Applies({ N: c.input.shape[0], C: l.cin, H, W, Cout: l.cout, G: 1, OH, OW, win })).toBe(true);
        [H, W] = [OH, OW];
      }
      const m = build(c);
      const x = { data: Float32Array.from(c.input.data), shape: c.input.shape, dtype: 'float32' as const };
      const graph = jit.trace(m, [tensor(x.data, { shape: x.shape })], { warn: false, checkTrace: false }).graph;
      const compiled = createModel(runPipeline(graph, { passes: LEVELS[2] }).graph);
      const got = compiled.runSync([x])[0].data as Float32Array;
      const eager = noGrad(() => m.forward(tensor(x.data, { shape: x.shape })).toArray()) as number[];
      const want = c.output.data;
      expect(got.length).toBe(want.length);
      let worst = 0, worstEager = 0;
      for (let i = 0; i < want.length; i++) {
        const bound = TOL.atol + TOL.rtol * Math.abs(want[i]);
        worst = Math.max(worst, Math.abs(got[i] - want[i]) / bound);
        worstEager = Math.max(worstEager, Math.abs(eager[i] - want[i]) / bound);
        if (!(Math.abs(got[i] - want[i]) <= bound)) throw new Error(`${c.name}: output ${i} is ${got[i]}, PyTorch ${want[i]}`);
      }
      // The direct conv (eager) stays within the same bound.
      expect(worstEager).toBeLessThanOrEqual(1);
      expect(worst).toBeLessThanOrEqual(1);
    });
  }
});
