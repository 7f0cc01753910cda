// The issue #22 ops under jit.trace and jit.script: models using them (tests/script-models/
// api-ops.ts) give eager's numbers traced, scripted, and from their saved .tsgraph on the CPU
// runtime; the new primitives appear as graph ops.
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { jit, randn, manualSeed, noGrad, type Tensor, type nn } from 'kiln';
import { load } from '@kiln/runtime';
import { CausalAttention, ImageOps, PadResize, SeqOps, TopSort } from './script-models/api-ops.js';

const FILE = fileURLToPath(new URL('./script-models/api-ops.ts', import.meta.url));

function close(got: ArrayLike<number>, want: ArrayLike<number>, tol = 1e-4): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * Math.max(1, Math.abs(want[i])))) throw new Error(`element ${i}: got ${got[i]}, want ${want[i]}`);
  }
}

const cases: [string, () => nn.Module, number[], string[]][] = [
  ['ImageOps', () => new ImageOps(), [2, 3, 4, 5], ['index_select', 'slice_backward']],
  ['SeqOps', () => new SeqOps(), [2, 4, 6], ['sort', 'floor', 'round', 'log1p', 'expm1', 'trunc', 'prod']],
];

describe.each(cases)('%s compiles', (_name, make, shape, ops) => {
  it('traced, scripted and loaded from .tsgraph give eager numbers', async () => {
    manualSeed(3);
    const m = make();
    m.eval();
    const x = randn(shape);
    const want = (noGrad(() => m.forward(x)) as Tensor).toArray();
    const traced = jit.trace(m, [x]);
    const text = traced.graph.toString();
    for (const op of ops) expect(text).toContain(`${op}(`);
    close((traced.forward(x) as Tensor).toArray(), want);
    const scripted = jit.script(m, { sourceFile: FILE });
    close((scripted.forward(x) as Tensor).toArray(), want);
    const g = await load(traced.toBytes(), { backend: 'cpu' });
    const [y] = await g.run([{ data: x.toArray(), shape, dtype: 'float32' }]);
    close(y.data, want);
  });
});

describe('symbolic dims', () => {
  const dyn: [string, () => nn.Module, number[], Record<number, string>][] = [
    ['causal attention over a symbolic sequence length', () => new CausalAttention(), [2, 5, 4], { 1: 'L' }],
    ['topk and sort with a symbolic batch', () => new TopSort(), [3, 6], { 0: 'N' }],
    ['pad and interpolate with a symbolic batch', () => new PadResize(), [2, 3, 4, 5], { 0: 'N' }],
  ];
  it.each(dyn)('%s: a trace runs at another size with eager numbers', (_name, make, shape, axes) => {
    manualSeed(4);
    const m = make();
    const traced = jit.trace(m, [randn(shape)], { dynamicAxes: { 0: axes } });
    const other = shape.map((s, i) => (i in axes ? s + 3 : s));
    const x = randn(other);
    close((traced.forward(x) as Tensor).toArray(), (noGrad(() => m.forward(x)) as Tensor).toArray());
  });
});
