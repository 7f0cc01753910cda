// Replayed runs (runtime/src/replay.ts): a straight-line CPU graph's run on inputs of the last
// run's dtypes and shapes replays that run's dispatches. What must hold: the numbers of a run
// that is not replayed (a model with a profiler attached runs the normal path every time), across
// changes of batch size and back; the arena's results copied out, so one run's outputs survive
// the next; random draws in the same order; a kernel's data-dependent error named as a run names
// it; the time limit still checked; graphs with control flow or buffer updates never recorded.
import { describe, expect, it } from 'vitest';
import { GraphBuilder, tensorType, type Graph } from '@kiln/ir-spec';
import { createModel, RuntimeError, setNodeProfiler, type Model } from '@kiln/runtime';
import { PASSES } from '@kiln/compiler';

const planMemory = PASSES['plan-memory'];

/** linear → relu → linear → tanh, with a dynamic batch, memory-planned (arena slots). */
function mlp(): Graph {
  const b = new GraphBuilder('mlp');
  const x = b.input('x', tensorType('float32', ['N', 6]));
  const w1 = b.constant('w1', { dtype: 'float32', shape: [5, 6], data: Float32Array.from({ length: 5 * 6 }, (_, i) => Math.sin(i)) });
  const w2 = b.constant('w2', { dtype: 'float32', shape: [3, 5], data: Float32Array.from({ length: 3 * 5 }, (_, i) => Math.cos(i)) });
  const h = b.op1('relu', [b.op1('linear', [x, w1])]);
  const y = b.op1('linear', [h, w2]);
  b.output('y', b.op1('tanh', [y]));
  b.output('h', h);
  return planMemory(b.build());
}

const batch = (n: number, k = 1) => ({ data: Float32Array.from({ length: n * 6 }, (_, i) => Math.sin(i * k) * 3), shape: [n, 6], dtype: 'float32' as const });

/** The model's runs with a profiler attached: the normal path, never a replay. */
function unreplayed<T>(f: () => T): T {
  const before = setNodeProfiler({ onNode() {}, onRun() {} });
  try { return f(); } finally { setNodeProfiler(before); }
}

const values = (outs: { data: ArrayLike<number> }[]) => outs.map((o) => Array.from(o.data));
const recorded = (m: Model) => (m as unknown as { record?: unknown }).record !== undefined;

describe('runtime: replayed runs', () => {
  it('give the normal path\'s numbers across batch sizes, and one run\'s outputs survive the next', async () => {
    const model = createModel(mlp()), plain = createModel(mlp());
    const seen: number[][][] = [];
    for (const [n, k] of [[1, 1], [1, 2], [1, 3], [4, 1], [4, 5], [1, 7], [1, 7]]) {
      const got = model.runSync([batch(n, k)]);
      expect(values(got)).toEqual(unreplayed(() => values(plain.runSync([batch(n, k)]))));
      expect(got[0].shape).toEqual([n, 3]);
      seen.push(values(got));
    }
    expect(recorded(model)).toBe(true);
    expect(values(await model.run([batch(1, 9)]))).toEqual(unreplayed(() => values(plain.runSync([batch(1, 9)]))));
    expect(seen[0]).not.toEqual(seen[1]);
    expect(model.stats?.nodesRun).toBe(plain.stats?.nodesRun);
    expect(model.stats?.peakIntermediateBytes).toBe(plain.stats?.peakIntermediateBytes);
  });

  it('return arrays of their own: the next run does not write what a run returned', () => {
    const model = createModel(mlp());
    model.runSync([batch(2, 1)]);
    const first = model.runSync([batch(2, 2)]);
    const kept = values(first);
    model.runSync([batch(2, 3)]);
    expect(values(first)).toEqual(kept);
  });

  it('with shareArrays, hand over fresh results and copy the rest, as a run does', () => {
    const shared = createModel(mlp(), { shareArrays: true }), plain = createModel(mlp());
    const a = batch(3, 1), b = batch(3, 4);
    const first = shared.runSync([a]);
    const second = shared.runSync([b]);
    const third = shared.runSync([a]);
    expect(values(third)).toEqual(values(first));
    expect(values(second)).toEqual(unreplayed(() => values(plain.runSync([b]))));
    expect(third[0].data).not.toBe(first[0].data);
  });

  it('with shareArrays, take recycled arrays for handed-over outputs once per recycle, never an array the caller kept', () => {
    const b = new GraphBuilder('big');
    const x = b.input('x', tensorType('float32', [2, 8]));
    b.output('y', b.op1('tanh', [b.op1('relu', [x])]));
    const g = planMemory(b.build());
    const model = createModel(g, { shareArrays: true }), plain = createModel(g);
    const at = (k: number) => ({ data: Float32Array.from({ length: 16 }, (_, i) => Math.sin(i + k)), shape: [2, 8], dtype: 'float32' as const });
    const [first] = model.runSync([at(1)]);
    model.runSync([at(1)]); // the first run grew the arena, so this one records
    model.recycle([first]);
    const [second] = model.runSync([at(2)]);
    expect(second.data).not.toBe(first.data); // first was swapped for a kernel-memory array,
    expect(second.data.buffer).toBeInstanceOf(SharedArrayBuffer); // computed into by the replay
    model.recycle([second]);
    const [again] = model.runSync([at(2)]);
    expect(again.data).toBe(second.data);
    model.recycle([again]);
    const [next] = model.runSync([at(2)]);
    expect(next.data).toBe(second.data);
    const kept = Array.from(second.data);
    const [third] = model.runSync([at(3)]);
    expect(third.data).not.toBe(second.data);
    expect(Array.from(second.data)).toEqual(kept);
    expect(Array.from(third.data)).toEqual(unreplayed(() => Array.from(plain.runSync([at(3)])[0].data)));
  });

  it('draw random numbers in the order the normal path does', () => {
    const b = new GraphBuilder('noise');
    const x = b.input('x', tensorType('float32', ['N', 4]));
    b.output('y', b.op1('add', [b.op1('uniform', [x]), b.op1('normal', [x])]));
    const g = b.build();
    const replaying = createModel(g, { seed: 3 }), normal = createModel(g, { seed: 3 });
    const x1 = { data: new Float32Array(8), shape: [2, 4], dtype: 'float32' as const };
    for (let i = 0; i < 4; i++) expect(values(replaying.runSync([x1]))).toEqual(unreplayed(() => values(normal.runSync([x1]))));
  });

  it('name a kernel error at its node, as a run does, and keep replaying after it', () => {
    const b = new GraphBuilder('gather');
    const x = b.input('x', tensorType('float32', [3]));
    const idx = b.input('idx', tensorType('int32', [2]));
    b.output('y', b.op1('index_select', [x, idx], { dim: 0 }));
    const model = createModel(b.build());
    const xs = { data: new Float32Array([1, 2, 3]), shape: [3], dtype: 'float32' as const };
    const at = (i: number, j: number) => ({ data: new Int32Array([i, j]), shape: [2], dtype: 'int32' as const });
    expect(Array.from(model.runSync([xs, at(0, 2)])[0].data)).toEqual([1, 3]);
    expect(recorded(model)).toBe(true);
    let err: unknown;
    try { model.runSync([xs, at(0, 7)]); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(RuntimeError);
    expect((err as RuntimeError).code).toBe('NODE');
    expect((err as RuntimeError).message).toMatch(/index_select\(%x, %idx\).*index 7 is out of range/);
    expect(Array.from(model.runSync([xs, at(2, 1)])[0].data)).toEqual([3, 2]);
  });

  it('check the time limit before every node', () => {
    const model = createModel(mlp(), { maxRunMs: 50 });
    model.runSync([batch(2)]);
    model.runSync([batch(2)]); // the first run grew the arena, so this one records
    expect(recorded(model)).toBe(true);
    const realNow = performance.now.bind(performance);
    let calls = 0;
    // The clock jumps an hour after the replay's start: its next node check must fail the run.
    performance.now = () => realNow() + (calls++ > 0 ? 3.6e6 : 0);
    let err: unknown;
    try { model.runSync([batch(2)]); } catch (e) { err = e; } finally { performance.now = realNow; }
    expect((err as RuntimeError)?.code).toBe('TIME_LIMIT');
  });

  it('are not recorded for graphs with control flow, scalar inputs or buffer updates', () => {
    const b = new GraphBuilder('branch');
    const x = b.input('x', tensorType('float32', [2]));
    const c = b.input('c', { kind: 'scalar', dtype: 'bool' });
    const [y] = b.if(c, () => [b.op1('neg', [x])], () => [b.op1('relu', [x])]);
    b.output('y', y);
    const model = createModel(b.build());
    const xs = { data: new Float32Array([-1, 2]), shape: [2], dtype: 'float32' as const };
    expect(Array.from(model.runSync([xs, true])[0].data)).toEqual([1, -2]);
    expect(Array.from(model.runSync([xs, false])[0].data)).toEqual([0, 2]);
    expect(recorded(model)).toBe(false);
  });
});
