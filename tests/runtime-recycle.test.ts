// Model.recycle (jit.compile hands the forward's saved arrays back once the backward graph has
// read them): a later runSync computes a result of the same dtype and size into a handed-back
// array instead of a fresh one (on the CPU device with WebAssembly over a shared memory, into an
// array of the kernel memory the pool swapped it for, so the kernels write there in place). What
// must hold: the same numbers as a model that recycles nothing; each handed-back array serves at
// most one result; arrays of other sizes or dtypes are not reused, views of part of a buffer are
// never written (only swapped), and an array handed back twice counts once; without shareArrays
// recycle does nothing. The results here come from kernels that write into the offered array
// (relu, mul, gt, where, sub, max pool's values and indices), so the numbers check those too.
import { describe, expect, it } from 'vitest';
import { GraphBuilder, tensorType } from '@kiln/ir-spec';
import { createModel } from '@kiln/runtime';
import { PASSES } from '@kiln/compiler';

const planMemory = PASSES['plan-memory'];

/** Large enough that the WebAssembly kernels run (MIN_ELEMENTS), with a bool and an int32 result. */
function graph() {
  const b = new GraphBuilder('recycle');
  const x = b.input('x', tensorType('float32', [2, 4, 32, 32]));
  const h = b.op1('relu', [x]);
  const m = b.op1('mul', [h, x]);
  const [v, idx] = b.op('max_pool2d', [m], { kernel_size: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1], ceil_mode: false });
  const big = b.op1('gt', [m, h]);
  const w = b.op1('where', [big, m, x]);
  b.output('relu', h);
  b.output('mul', m);
  b.output('pool', v);
  b.output('idx', idx);
  b.output('gt', big);
  b.output('where', b.op1('sub', [w, h]));
  return planMemory(b.build());
}

const input = (k: number) => ({ data: Float32Array.from({ length: 2 * 4 * 32 * 32 }, (_, i) => Math.sin(i * 0.37 + k) * (i % 7 - 3)), shape: [2, 4, 32, 32], dtype: 'float32' as const });
const values = (outs: readonly { data: ArrayLike<number> }[]) => outs.map((o) => Array.from(o.data));

describe('runtime: Model.recycle', () => {
  it('computes the next run\'s results into handed-back arrays, with the same numbers', () => {
    const recycling = createModel(graph(), { shareArrays: true });
    const plain = createModel(graph(), { shareArrays: true });
    const first = recycling.runSync([input(1)]);
    recycling.recycle(first);
    // On the CPU device with WebAssembly over a shared memory, the arrays handed back are swapped
    // for arrays in the kernel memory (one each), which the second run's results are computed into.
    const second = recycling.runSync([input(2)]);
    expect(values(second)).toEqual(values(plain.runSync([input(2)])));
    for (const o of second) expect(o.data.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(new Set(second.map((o) => o.data)).size).toBe(second.length);
    // Handed back again, the same arrays serve the third run: every result took one of them, each once.
    const held = second.map((o) => o.data);
    recycling.recycle(second);
    const third = recycling.runSync([input(3)]);
    expect(values(third)).toEqual(values(plain.runSync([input(3)])));
    for (const o of third) expect(held).toContain(o.data);
    expect(new Set(third.map((o) => o.data)).size).toBe(third.length);
  });

  it('takes no array of another size or dtype, never a partial view itself, and an array given twice once', () => {
    const m = createModel(graph(), { shareArrays: true });
    const [relu] = m.runSync([input(1)]);
    const part = new Float32Array(new ArrayBuffer(relu.data.byteLength * 2), 0, relu.data.length);
    const short = new Float32Array(relu.data.length - 1);
    m.recycle([{ ...relu, data: part }, { ...relu, data: short }, { ...relu, dtype: 'int32', data: new Int32Array(relu.data.length) }]);
    m.recycle([relu, relu]);
    const outs = m.runSync([input(2)]);
    expect(outs.some((o) => o.data === part || o.data === short || o.data === relu.data)).toBe(false);
    // part and relu were swapped for one kernel-memory array each (relu once), which two of the
    // three float32 results of relu's size took.
    expect(outs.filter((o) => o.data.buffer instanceof SharedArrayBuffer)).toHaveLength(2);
  });

  it('does nothing without shareArrays (run() copies its results)', () => {
    const m = createModel(graph());
    const first = m.runSync([input(1)]);
    m.recycle(first);
    const second = m.runSync([input(2)]);
    for (const o of second) expect(first.map((f) => f.data)).not.toContain(o.data);
  });
});
