// jit.script with run-time numbers as tensor operands: a forward argument (`x.mul(scale)`), a
// number computed from `.item()`, and a size from `x.shape` divided into a reduction — each
// becomes a 0-d tensor through `to_tensor` (never a constant baked at compile time), agrees with
// eager at several batch sizes and values, and runs from .tsgraph in the runtime alone, on the
// CPU and on WebGPU (the structural ops run host-side there too).
import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { load } from '@kiln/runtime';
import { jit, manualSeed, randn, noGrad, type Tensor, type nn } from 'kiln';
import { ManualMean, ScaleShift } from './script-models/numbers.js';
import { EarlyStop } from './script-models/loops.js';

// WebGPU in Node runs on SwiftShader here (DESIGN.md §7).

const FILE = fileURLToPath(new URL('./script-models/numbers.ts', import.meta.url));

function close(got: { data: ArrayLike<number>; shape: readonly number[] }, want: Tensor): void {
  expect([...got.shape]).toEqual(want.shape);
  for (let i = 0; i < want.numel(); i++) expect(Math.abs(got.data[i] - want.data[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want.data[i])));
}

function agree(model: nn.Module, scripted: jit.ScriptModule, ...args: unknown[]): void {
  close(scripted.forward(...args) as Tensor, noGrad(() => model.forward(...args)) as Tensor);
}

describe.each([['runtime text', {}], ['.ts file (type checker)', { sourceFile: FILE }]] as const)('run-time numbers as operands, from the %s', (_, opts) => {
  it('forward arguments scale and shift a tensor through to_tensor, for every value given', () => {
    manualSeed(41);
    const m = new ScaleShift();
    const s = jit.script(m, opts);
    for (const [scale, n] of [[2.5, 3], [-0.5, 0], [1.25, -7]]) agree(m, s, randn([3, 4]), scale, n);
    const text = s.graph.toString();
    expect(text).toMatch(/= to_tensor\(%\d+\) \{dtype="float32"\} : f32\[\]/);
    expect(text).toMatch(/= to_tensor\(%\d+\) \{dtype="int32"\} : i32\[\]/);
    expect(text).not.toMatch(/constant\(\) \{dtype="float32", value=2\.5\}/);
  });

  it('x.shape[0] divides a full reduction and a value read with .item() divides the tensor', () => {
    manualSeed(42);
    const m = new ManualMean();
    const s = jit.script(m, opts);
    for (const n of [1, 2, 5, 9]) agree(m, s, randn([n, 4]).mul(n));
    expect(s.graph.toString()).toMatch(/%(\d+) = dim\(%x\) \{index=0\} : i32[\s\S]*to_tensor\(%\1\)/);
  });
});

describe('run-time numbers in the runtime alone', () => {
  it('saves to .tsgraph and runs from the file with @kiln/runtime', async () => {
    manualSeed(43);
    const m = new ManualMean(), sm = new ScaleShift();
    const model = await load(jit.script(m, { inputs: [randn([2, 4])] }).toBytes());
    const scaled = await load(jit.script(sm, { inputs: [randn([2, 4]), 1.5, 2] }).toBytes());
    for (const n of [1, 6]) {
      const x = randn([n, 4]);
      close((await model.run([x]))[0], noGrad(() => m.forward(x)));
      close((await scaled.run([x, 0.75, 4]))[0], noGrad(() => sm.forward(x, 0.75, 4)));
    }
  });

  it('runs the same files on WebGPU, with a data-dependent break in a loop too', async () => {
    manualSeed(44);
    const m = new ManualMean(), e = new EarlyStop();
    const mean = await load(jit.script(m, { inputs: [randn([2, 4])] }).toBytes(), { backend: 'webgpu' });
    const stop = await load(jit.script(e, { inputs: [randn([2, 3]), 3] }).toBytes(), { backend: 'webgpu' });
    expect(mean.backend).toBe('webgpu');
    const x = randn([3, 4]);
    close((await mean.run([x]))[0], noGrad(() => m.forward(x)));
    for (const [n, shift] of [[5, 3], [12, -2]]) {
      const x2 = randn([2, 3]).add(shift);
      close((await stop.run([x2, n]))[0], noGrad(() => e.forward(x2, n)));
    }
  }, 60_000);
});
