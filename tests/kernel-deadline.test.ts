// A run's time limit reaches into one long kernel (issue 17): a node that passes the check
// before it starts (its work at the device's peak rate fits the time left) but runs far below
// that rate is interrupted at the run's deadline — a TIME_LIMIT error saying "interrupted",
// counted by ir-spec's kernelInterrupts — on the JavaScript kernels and on the WebAssembly
// ones, on 1 thread and on 2 (a split round stops claiming chunks, waits for the claimed ones,
// and the pool serves the next run). The padding-heavy conv that once ran past 5 s under a
// 100 ms limit now visits only its in-bounds taps. No test here asserts a wall-clock time.

import { afterAll, describe, expect, it } from 'vitest';
import { encodeTsgraph, GraphBuilder, kernelInterrupts, tensorType, type Graph } from '@kiln/ir-spec';
import { getNumThreads, load, RuntimeError, setNumThreads } from '@kiln/runtime';
import { hugeConvGraph } from './fixtures/untrusted-graphs.js';

type Input = { data: Float32Array; shape: number[]; dtype: 'float32' };
const filled = (shape: number[], v: number): Input => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(v), shape, dtype: 'float32' });

/** One op over graph inputs of the given shapes. */
function oneOp(op: string, shapes: number[][], attrs: Record<string, unknown> = {}): Graph {
  const b = new GraphBuilder(op);
  const ins = shapes.map((s, i) => b.input(`x${i}`, tensorType('float32', s)));
  const outs = b.op(op, ins, attrs);
  b.output('y', outs[0]);
  return b.build();
}

async function interrupted(g: Graph, inputs: Input[], maxRunMs: number): Promise<RuntimeError> {
  const model = await load(encodeTsgraph(g), { backend: 'cpu', maxRunMs });
  const before = kernelInterrupts();
  let err: unknown;
  try { await model.run(inputs); } catch (e) { err = e; }
  expect(err, 'the run should fail').toBeInstanceOf(RuntimeError);
  const e = err as RuntimeError;
  expect(e.code).toBe('TIME_LIMIT');
  // Not refused before it starts: the node began and its kernel was stopped part way.
  expect(e.message).toMatch(new RegExp(`interrupted at \\d+ ms, past the run's limit of ${maxRunMs} ms`));
  expect(kernelInterrupts()).toBe(before + 1);
  return e;
}

const saved = getNumThreads();
afterAll(() => setNumThreads(saved));

for (const threads of [1, 2]) {
  describe(`on ${threads} thread${threads > 1 ? 's' : ''}`, () => {
    it('a WebAssembly matmul far longer than the time left is interrupted, and the next run is right', async () => {
      setNumThreads(threads);
      // 6.9e10 multiply-adds: 537 ms at the peak rate of one thread, many seconds at the real
      // one. The operands are expanded from one number, so no input copy eats the time left.
      const n = 4096, b = new GraphBuilder('matmul');
      const x = b.input('x', tensorType('float32', [1, 1]));
      const a = b.op1('expand', [x], { shape: [n, n] });
      b.output('y', b.op1('matmul', [a, a]));
      const e = await interrupted(b.build(), [filled([1, 1], 0.5)], 2000);
      expect(e.node).toMatch(/matmul/);
      // The kernel memory and the thread pool serve the next run as before.
      const small = await load(encodeTsgraph(oneOp('matmul', [[64, 64], [64, 64]])), { backend: 'cpu', maxRunMs: 60_000 });
      const [y] = await small.run([filled([64, 64], 0.5), filled([64, 64], 0.25)]);
      expect([...y.data].every((v) => v === 8)).toBe(true);
    });
    it('a JavaScript conv2d (one output channel) with a huge kernel is interrupted', async () => {
      setNumThreads(threads);
      // 1.6e9 multiply-adds in the implicit GEMM: ~13 ms at the peak rate, about a second in JavaScript.
      await interrupted(oneOp('conv2d', [[1, 1, 400, 400], [1, 1, 200, 200]]), [filled([1, 1, 400, 400], 1), filled([1, 1, 200, 200], 1)], 300);
    });
    it('a WebAssembly conv2d packed a block of rows at a time is interrupted', async () => {
      setNumThreads(threads);
      // K = 10,000 taps (past the direct kernel), 8 output channels: 3.3e9 multiply-adds.
      await interrupted(oneOp('conv2d', [[1, 1, 300, 300], [8, 1, 100, 100]]), [filled([1, 1, 300, 300], 1), filled([8, 1, 100, 100], 1)], 200);
    });
    it('a max pool with a huge window is interrupted', async () => {
      setNumThreads(threads);
      // 201² windows of 200² taps: 1.6e9 comparisons.
      await interrupted(oneOp('max_pool2d', [[1, 1, 400, 400]], { kernel_size: [200, 200], stride: [1, 1] }), [filled([1, 1, 400, 400], 1)], 300);
    });
  });
}

describe('windows reading mostly padding', () => {
  it('a 243×243 kernel over one pixel padded by 242 visits only its in-bounds taps', async () => {
    // Once 3.5e9 multiply-adds of zeros (past 5 s under a 100 ms limit); now one tap per output.
    const model = await load(encodeTsgraph(hugeConvGraph(243)), { backend: 'cpu', maxRunMs: 60_000 });
    const [y] = await model.run([filled([1, 1, 1, 1], 1)]);
    expect(y.shape).toEqual([1, 1, 243, 243]);
    expect([...y.data].every((v) => v === 1)).toBe(true);
  });
});
