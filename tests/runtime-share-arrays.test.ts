// ModelOptions.shareArrays (what jit.compile runs its graphs with): runSync on the CPU reads the
// inputs' arrays in place and hands fresh results over without copies. What must still hold: the
// same numbers as a copying model; a run never writes an input's array; the arrays one run
// returned are not touched by the next run (results take no arena slot); an output that is an
// input (or a view of one) or that appears twice still comes back as an array of its own.
import { describe, expect, it } from 'vitest';
import { GraphBuilder, tensorType } from '@kiln/ir-spec';
import { createModel } from '@kiln/runtime';
import { PASSES } from '@kiln/compiler';

const planMemory = PASSES['plan-memory'];

function graph() {
  const b = new GraphBuilder('share');
  const x = b.input('x', tensorType('float32', [2, 3]));
  const h = b.op1('relu', [x]);
  const y = b.op1('add', [b.op1('mul', [h, h]), x]);
  b.output('y', y);
  b.output('y_again', y);
  b.output('view', b.op1('reshape', [x], { shape: [3, 2] }));
  b.output('x', x);
  return planMemory(b.build());
}

const input = (k: number) => ({ data: Float32Array.from({ length: 6 }, (_, i) => (i - 2.5) * k), shape: [2, 3], dtype: 'float32' as const });

describe('runtime: shareArrays', () => {
  it('gives the copying model\'s results; inputs unwritten; results of one run survive the next; shared buffers come back apart', () => {
    const shared = createModel(graph(), { shareArrays: true });
    const copying = createModel(graph());
    const a = input(1), b = input(-2);
    const keep = a.data.slice();
    const first = shared.runSync([a]);
    expect(first.map((o) => Array.from(o.data))).toEqual(copying.runSync([a]).map((o) => Array.from(o.data)));
    expect(Array.from(a.data)).toEqual(Array.from(keep));
    const firstValues = first.map((o) => Array.from(o.data));
    const second = shared.runSync([b]);
    expect(second.map((o) => Array.from(o.data))).toEqual(copying.runSync([b]).map((o) => Array.from(o.data)));
    expect(first.map((o) => Array.from(o.data)), 'the second run left the first results alone').toEqual(firstValues);
    // y and y_again are one value: two arrays; the view and x: not the input's array.
    expect(second[0].data).not.toBe(second[1].data);
    expect(second[2].data).not.toBe(b.data);
    expect(second[3].data).not.toBe(b.data);
    second[0].data[0] = 123;
    expect(second[1].data[0]).not.toBe(123);
  });

  it('run() (asynchronous) still copies: its caller may change an input while it waits', async () => {
    const shared = createModel(graph(), { shareArrays: true });
    const a = input(1);
    const [, , , x] = await shared.run([a]);
    expect(x.data).not.toBe(a.data);
    expect(Array.from(x.data)).toEqual(Array.from(a.data));
  });
});
