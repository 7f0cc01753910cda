// The standalone runtime's CPU executor on hand-built graphs: every structural op (constant,
// scalar, scalar_op, dim, item, tuple, tuple_get, if, loop) and registry ops, checked against
// the ops' own kernels or values worked out by hand; input validation; memory accounting;
// the device seam; limits and errors.

import { describe, expect, it } from 'vitest';
import {
  Block, Graph, GraphBuilder, Node, Value, getOp, scalarType, tensorType,
  type CpuTensor, type DType, type TypedArray,
} from '@kiln/ir-spec';
import { createCpuDevice, createDevice, createModel, fastPrimitives, load, RuntimeError, type Device, type Output } from '@kiln/runtime';
import { values } from './helpers/rng.js';

// ---- helpers --------------------------------------------------------------------------------


const numel = (shape: readonly number[]) => shape.reduce((a, d) => a * d, 1);
const f32 = (shape: number[], seed: number): CpuTensor => ({ data: values(numel(shape), seed), shape, dtype: 'float32' });
/** An op's kernel with the primitives the CPU device passes (WebAssembly SIMD where available). */
const kernel = (op: string, inputs: (CpuTensor | null)[], attrs: Record<string, unknown> = {}): CpuTensor[] =>
  getOp(op).cpu(inputs, getOp(op).attrs.parse(attrs), { prims: fastPrimitives() });
const k1 = (op: string, inputs: (CpuTensor | null)[], attrs: Record<string, unknown> = {}) => kernel(op, inputs, attrs)[0];

/** Expects a RuntimeError with `code` whose message contains every fragment. */
function expectError(fn: () => unknown, code: string, ...fragments: string[]): RuntimeError {
  let caught: unknown;
  try { fn(); } catch (e) { caught = e; }
  expect(caught, 'expected a RuntimeError').toBeInstanceOf(RuntimeError);
  const e = caught as RuntimeError;
  expect(e.code).toBe(code);
  for (const f of fragments) expect(e.message).toContain(f);
  return e;
}

const CONV = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
const POOL = { kernel_size: [2, 2], stride: [2, 2] };

/** conv(3→4, 3×3, pad 1) → relu → maxpool 2 → flatten → linear(64→5), as a graph and as kernels. */
function smallCnn() {
  const p = {
    w1: f32([4, 3, 3, 3], 11), b1: f32([4], 12),
    w2: f32([5, 64], 13), b2: f32([5], 14),
  };
  const b = new GraphBuilder('cnn');
  const x = b.input('x', tensorType('float32', ['N', 3, 8, 8]));
  const w1 = b.param('conv.weight', p.w1), b1 = b.param('conv.bias', p.b1);
  const w2 = b.param('fc.weight', p.w2), b2 = b.param('fc.bias', p.b2);
  const c = b.op1('conv2d', [x, w1, b1], CONV);
  const r = b.op1('relu', [c]);
  const [m] = b.op('max_pool2d', [r], POOL);
  const f = b.op1('reshape', [m], { shape: ['N', 64] });
  b.output('logits', b.op1('linear', [f, w2, b2]));
  const eager = (input: CpuTensor) => {
    const c1 = k1('conv2d', [input, p.w1, p.b1], CONV);
    const pooled = kernel('max_pool2d', [k1('relu', [c1])], POOL)[0];
    return k1('linear', [k1('reshape', [pooled], { shape: [input.shape[0], 64] }), p.w2, p.b2]);
  };
  return { graph: b.build(), eager };
}

function only(outs: Output[]): Output {
  expect(outs).toHaveLength(1);
  return outs[0];
}

// ---- registry ops ---------------------------------------------------------------------------

describe('runtime: registry ops', () => {
  it('runs a small CNN at several batch sizes, equal to its kernels', async () => {
    const { graph, eager } = smallCnn();
    const model = createModel(graph);
    expect(model.inputs).toEqual([{ name: 'x', type: 'f32[N,3,8,8]' }]);
    expect(model.outputs).toEqual([{ name: 'logits', type: 'f32[N,5]' }]);
    expect(model.backend).toBe('cpu');
    for (const n of [1, 3, 5]) {
      const x = f32([n, 3, 8, 8], 100 + n);
      const y = only(await model.run([x]));
      const want = eager(x);
      expect(y.name).toBe('logits');
      expect(y.shape).toEqual([n, 5]);
      expect(y.dtype).toBe('float32');
      expect(Array.from(y.data)).toEqual(Array.from(want.data));
    }
  });

  it('run, runSync and runNamed agree', async () => {
    const { graph } = smallCnn();
    const model = createModel(graph);
    const x = f32([2, 3, 8, 8], 7);
    const a = only(await model.run([x])), b = only(model.runSync([x])), c = only(await model.runNamed({ x }));
    expect(Array.from(b.data)).toEqual(Array.from(a.data));
    expect(Array.from(c.data)).toEqual(Array.from(a.data));
  });

  it('outputs are fresh arrays: changing one does not change the model', async () => {
    const b = new GraphBuilder('param-out');
    const x = b.input('x', tensorType('float32', [2]));
    const w = b.param('w', { dtype: 'float32', shape: [2], data: new Float32Array([1, 2]) });
    b.output('w', b.op1('reshape', [w], { shape: [1, 2] }));
    b.output('x', x);
    const model = createModel(b.build());
    const input = { data: new Float32Array([5, 6]), shape: [2], dtype: 'float32' };
    const [w1, x1] = await model.run([input]);
    expect(Array.from(w1.data)).toEqual([1, 2]);
    w1.data[0] = 99;
    x1.data[0] = 99;
    const [w2] = await model.run([input]);
    expect(Array.from(w2.data)).toEqual([1, 2]);
    expect(Array.from(input.data)).toEqual([5, 6]);
  });
});

// ---- control flow ---------------------------------------------------------------------------

describe('runtime: if', () => {
  /** if (c) x + 1 else x * 3, with c a bool scalar input. */
  function ifOnScalar(): Graph {
    const b = new GraphBuilder('if-scalar');
    const x = b.input('x', tensorType('float32', ['N']));
    const c = b.input('c', scalarType('bool'));
    const [y] = b.if(c, () => [b.op1('add', [x, b.literal(1)])], () => [b.op1('mul', [x, b.literal(3)])]);
    b.output('y', y);
    return b.build();
  }

  it('takes each branch on a bool scalar', async () => {
    const model = createModel(ifOnScalar());
    const xs = { data: new Float32Array([1, -2, 3]), shape: [3], dtype: 'float32' };
    expect(Array.from(only(await model.run([xs, true])).data)).toEqual([2, -1, 4]);
    expect(Array.from(only(await model.run([xs, false])).data)).toEqual([3, -6, 9]);
    // A 0-d bool tensor works for a scalar input too.
    expect(Array.from(only(await model.run([xs, { data: new Uint8Array([0]), shape: [], dtype: 'bool' }])).data)).toEqual([3, -6, 9]);
  });

  it('takes each branch on a one-element bool tensor computed in the graph', async () => {
    const b = new GraphBuilder('if-tensor');
    const x = b.input('x', tensorType('float32', ['N', 2]));
    const positive = b.op1('gt', [b.op1('sum', [x]), b.literal(0)]);
    const [y] = b.if(positive, () => [b.op1('neg', [x])], () => [b.op1('relu', [x])]);
    b.output('y', y);
    const model = createModel(b.build());
    const pos = { data: new Float32Array([1, 2, -0.5, 0]), shape: [2, 2], dtype: 'float32' };
    const neg = { data: new Float32Array([-1, 2, -3, 0]), shape: [2, 2], dtype: 'float32' };
    expect(Array.from(only(await model.run([pos])).data)).toEqual([-1, -2, 0.5, -0]);
    expect(Array.from(only(await model.run([neg])).data)).toEqual([0, 2, 0, 0]);
  });
});

describe('runtime: loop', () => {
  it('trip-count form carries a tensor and a scalar and sees the trip index', async () => {
    const b = new GraphBuilder('loop-trips');
    const x = b.input('x', tensorType('float32', ['N']));
    const trips = b.input('trips', scalarType('int32'));
    const [acc, total] = b.loop(trips, null, [x, b.scalar(0)], (i, [a, s]) => ({
      next: [b.op1('add', [b.op1('mul', [a, b.literal(2)]), b.literal(1)]), b.op1('scalar_op', [s, i], { fn: 'add' })],
    }));
    b.output('acc', acc);
    b.output('total', total);
    const model = createModel(b.build());
    expect(model.outputs).toEqual([{ name: 'acc', type: 'f32[N]' }, { name: 'total', type: 'i32' }]);
    const xs = { data: new Float32Array([0, 1]), shape: [2], dtype: 'float32' };
    for (const n of [0, 1, 4]) {
      const [a, t] = await model.run([xs, n]);
      // a ← 2a + 1, n times: a_n = 2^n (a + 1) - 1; total = 0 + 1 + ... + (n-1).
      expect(Array.from(a.data)).toEqual([0, 1].map((v) => 2 ** n * (v + 1) - 1));
      expect(t).toMatchObject({ name: 'total', shape: [], dtype: 'int32' });
      expect(t.data[0]).toBe(n * (n - 1) / 2 + 0);
    }
  });

  it('condition form runs until the body says stop', async () => {
    const b = new GraphBuilder('loop-cond');
    const x = b.input('x', tensorType('float32', [1]));
    const [y, count] = b.loop(null, b.scalar(true, 'bool'), [x, b.scalar(0)], (_i, [a, k]) => {
      const doubled = b.op1('mul', [a, b.literal(2)]);
      const below = b.op1('scalar_op', [b.op1('item', [doubled]), b.scalar(100, 'float32')], { fn: 'lt' });
      return { next: [doubled, b.op1('scalar_op', [k, b.scalar(1)], { fn: 'add' })], continue: below };
    });
    b.output('y', y);
    b.output('count', count);
    const model = createModel(b.build());
    const [out, k] = await model.run([{ data: new Float32Array([3]), shape: [1], dtype: 'float32' }]);
    // 3 → 6 → 12 → 24 → 48 → 96 → 192 (stops once the value is no longer below 100).
    expect(Array.from(out.data)).toEqual([192]);
    expect(Array.from(k.data)).toEqual([6]);
  });

  it('a false initial condition runs no trip; maxTrips and condition together stop at the first', async () => {
    const b = new GraphBuilder('loop-both');
    const x = b.input('x', tensorType('float32', [1]));
    const trips = b.input('trips', scalarType('int32'));
    const go = b.input('go', scalarType('bool'));
    const [y] = b.loop(trips, go, [x], (i, [a]) => ({
      next: [b.op1('add', [a, b.literal(1)])],
      continue: b.op1('scalar_op', [i, b.scalar(2)], { fn: 'lt' }), // stops after trip i = 2
    }));
    b.output('y', y);
    const model = createModel(b.build());
    const xs = { data: new Float32Array([10]), shape: [1], dtype: 'float32' };
    const run = async (trips: number, go: boolean) => Array.from(only(await model.run([xs, trips, go])).data);
    expect(await run(10, false)).toEqual([10]);
    expect(await run(10, true)).toEqual([13]); // the condition stops it after 3 trips
    expect(await run(2, true)).toEqual([12]); // maxTrips stops it first
    expect(await run(-1, true)).toEqual([10]);
  });
});

describe('runtime: nested regions, tuples, scalars', () => {
  it('runs an if inside a loop inside an if', async () => {
    // outer: if (flag) { loop 5 trips: v ← (i even ? v + i : v - 1) } else { v * 10 }
    const b = new GraphBuilder('nested');
    const x = b.input('x', tensorType('float32', [2]));
    const flag = b.input('flag', scalarType('bool'));
    const [y] = b.if(flag, () => b.loop(b.scalar(5), null, [x], (i, [v]) => {
      const even = b.op1('scalar_op', [b.op1('scalar_op', [i, b.scalar(2)], { fn: 'mod' }), b.scalar(0)], { fn: 'eq' });
      const [nv] = b.if(even, () => [b.op1('add', [v, b.op1('mul', [b.literal(1), b.literal(2)])])], () => [b.op1('sub', [v, x])]);
      return { next: [nv] };
    }), () => [b.op1('mul', [x, b.literal(10)])]);
    b.output('y', y);
    const model = createModel(b.build());
    const xs = { data: new Float32Array([1, 2]), shape: [2], dtype: 'float32' };
    // Trips i = 0..4: even adds 2, odd subtracts x.
    let v = [1, 2];
    for (let i = 0; i < 5; i++) v = i % 2 === 0 ? v.map((e) => e + 2) : v.map((e, k) => e - [1, 2][k]);
    expect(Array.from(only(await model.run([xs, true])).data)).toEqual(v);
    expect(Array.from(only(await model.run([xs, false])).data)).toEqual([10, 20]);
  });

  it('builds and projects tuples, through an if, and flattens a tuple output', async () => {
    const b = new GraphBuilder('tuples');
    const x = b.input('x', tensorType('float32', ['N']));
    const c = b.input('c', scalarType('bool'));
    const n = b.op1('dim', [x], { index: 0 });
    const pair = b.op1('tuple', [x, n]);
    const [chosen] = b.if(c, () => [pair], () => [b.op1('tuple', [b.op1('neg', [x]), b.op1('scalar_op', [n], { fn: 'neg' })])]);
    b.output('first', b.op1('tuple_get', [chosen], { index: 0 }));
    b.output('both', chosen);
    const model = createModel(b.build());
    expect(model.outputs.map((o) => o.name)).toEqual(['first', 'both.0', 'both.1']);
    expect(model.outputs[2].type).toBe('i32');
    const xs = { data: new Float32Array([1, 2, 3]), shape: [3], dtype: 'float32' };
    const [first, t0, t1] = await model.run([xs, false]);
    expect(Array.from(first.data)).toEqual([-1, -2, -3]);
    expect(t0.name).toBe('both.0');
    expect(Array.from(t0.data)).toEqual([-1, -2, -3]);
    expect(t1).toMatchObject({ name: 'both.1', shape: [], dtype: 'int32' });
    expect(Array.from(t1.data)).toEqual([-3]);
  });

  it('dim, scalar_op and symbolic reshape/expand follow the batch size', async () => {
    const b = new GraphBuilder('symbolic');
    const x = b.input('x', tensorType('float32', ['N', 2, 3]));
    const n = b.op1('dim', [x], { index: 0 });
    const twice = b.op1('scalar_op', [n, b.scalar(2)], { fn: 'mul' });
    const half = b.op1('scalar_op', [n, b.scalar(2)], { fn: 'div' });
    const floor = b.op1('scalar_op', [b.op1('scalar_op', [n, b.scalar(-3)], { fn: 'sub' }), b.scalar(2)], { fn: 'floordiv' });
    const flat = b.op1('reshape', [x], { shape: ['N', 6] });
    const wide = b.op1('expand', [b.op1('sum', [flat], { dim: [1], keepdim: true })], { shape: ['N', 4] });
    b.output('twice', twice);
    b.output('half', half);
    b.output('floor', floor);
    b.output('wide', wide);
    const model = createModel(b.build());
    for (const batch of [1, 2, 7]) {
      const input = f32([batch, 2, 3], batch);
      const [t, h, fl, w] = await model.run([input]);
      expect(Array.from(t.data)).toEqual([batch * 2]);
      expect(h.dtype).toBe('float32');
      expect(Array.from(h.data)).toEqual([batch / 2]);
      expect(Array.from(fl.data)).toEqual([Math.floor((batch + 3) / 2)]);
      expect(w.shape).toEqual([batch, 4]);
      const sums = k1('sum', [k1('reshape', [input], { shape: [batch, 6] })], { dim: [1], keepdim: true });
      expect(Array.from(w.data)).toEqual(Array.from(sums.data).flatMap((s) => [s, s, s, s]));
    }
  });

  it('scalar_op follows Python for floordiv/mod of negatives and refuses division by zero', () => {
    const b = new GraphBuilder('scalars');
    const a = b.input('a', scalarType('int32'));
    const d = b.input('d', scalarType('int32'));
    b.output('q', b.op1('scalar_op', [a, d], { fn: 'floordiv' }));
    b.output('r', b.op1('scalar_op', [a, d], { fn: 'mod' }));
    b.output('m', b.op1('scalar_op', [a, d], { fn: 'max' }));
    const model = createModel(b.build());
    const [q, r, m] = model.runSync([-7, 2]);
    expect([q.data[0], r.data[0], m.data[0]]).toEqual([-4, 1, 2]);
    expectError(() => model.runSync([5, 0]), 'NODE', 'scalar_op', 'by zero');
  });
});

// ---- validation -----------------------------------------------------------------------------

describe('runtime: input validation', () => {
  function twoInputs() {
    const b = new GraphBuilder('two');
    const x = b.input('x', tensorType('float32', ['N', 3, 4, 4]));
    const y = b.input('y', tensorType('float32', ['N', 2]));
    b.output('s', b.op1('add', [b.op1('sum', [x], { dim: [1, 2, 3] }), b.op1('sum', [y], { dim: [1] })]));
    return createModel(b.build());
  }
  const t = (shape: number[], dtype: DType = 'float32'): { data: TypedArray; shape: number[]; dtype: DType } =>
    ({ data: dtype === 'float32' ? new Float32Array(numel(shape)) : dtype === 'int32' ? new Int32Array(numel(shape)) : new Uint8Array(numel(shape)), shape, dtype });

  it('accepts matching inputs', () => {
    expect(only(twoInputs().runSync([t([2, 3, 4, 4]), t([2, 2])])).shape).toEqual([2]);
  });

  it('refuses a wrong count, naming the inputs', () => {
    expectError(() => twoInputs().runSync([t([2, 3, 4, 4])]), 'INPUT', 'expected 2 inputs', 'x: f32[N,3,4,4]', 'y: f32[N,2]', 'got 1');
  });

  it('refuses a wrong dtype, rank and concrete dim with the expected type', () => {
    expectError(() => twoInputs().runSync([t([2, 3, 4, 4], 'int32'), t([2, 2])]), 'INPUT', "input 'x': expected f32[N,3,4,4], got i32[2,3,4,4]");
    expectError(() => twoInputs().runSync([t([2, 3, 4]), t([2, 2])]), 'INPUT', "input 'x': expected f32[N,3,4,4], got f32[2,3,4]");
    expectError(() => twoInputs().runSync([t([2, 3, 4, 3]), t([2, 2])]), 'INPUT', "input 'x': expected f32[N,3,4,4], got f32[2,3,4,3]");
  });

  it('refuses a symbol that means two sizes', () => {
    expectError(() => twoInputs().runSync([t([2, 3, 4, 4]), t([3, 2])]), 'INPUT', "input 'y': expected f32[N,2], got f32[3,2]", "N is 3 here but 2 in input 'x'");
  });

  it('binds compound dims across inputs (N*2) and refuses sizes that do not fit them', () => {
    const b = new GraphBuilder('compound');
    const x = b.input('x', tensorType('float32', ['N', 3]));
    const y = b.input('y', tensorType('float32', ['N*2']));
    b.output('n', b.op1('dim', [x], { index: 0 }));
    b.output('m', b.op1('dim', [y], { index: 0 }));
    const model = createModel(b.build());
    expect(model.runSync([t([4, 3]), t([8])]).map((o) => o.data[0])).toEqual([4, 8]);
    expectError(() => model.runSync([t([4, 3]), t([7])]), 'INPUT', "input 'y': expected f32[N*2], got f32[7]");
  });

  it('refuses data that does not fit the shape or dtype, and non-tensors', () => {
    const bad = { data: new Float32Array(5), shape: [2, 3, 4, 4], dtype: 'float32' };
    expectError(() => twoInputs().runSync([bad, t([2, 2])]), 'INPUT', "input 'x'", '5 elements', 'needs 96');
    const wrongClass = { data: new Float64Array(96), shape: [2, 3, 4, 4], dtype: 'float32' };
    expectError(() => twoInputs().runSync([wrongClass, t([2, 2])]), 'INPUT', "input 'x'", 'Float32Array', 'Float64Array');
    expectError(() => twoInputs().runSync([3, t([2, 2])]), 'INPUT', "input 'x': expected f32[N,3,4,4], got number 3");
    // A plain number array is converted.
    expect(only(twoInputs().runSync([{ data: new Array(96).fill(1), shape: [2, 3, 4, 4], dtype: 'float32' }, t([2, 2])])).data[0]).toBe(48);
  });

  it('refuses scalars of the wrong kind', () => {
    const b = new GraphBuilder('scalar-in');
    const n = b.input('n', scalarType('int32'));
    b.output('m', b.op1('scalar_op', [n, b.scalar(1)], { fn: 'add' }));
    const model = createModel(b.build());
    expect(model.runSync([41])[0].data[0]).toBe(42);
    expectError(() => model.runSync([1.5]), 'INPUT', "input 'n': expected i32", '1.5');
    expectError(() => model.runSync([true]), 'INPUT', "input 'n': expected i32, got boolean true");
  });

  it('runNamed refuses unknown and missing names', async () => {
    const model = twoInputs();
    await expect(model.runNamed({ x: t([1, 3, 4, 4]), z: t([1, 2]) })).rejects.toThrow(/unknown input 'z'/);
    await expect(model.runNamed({ x: t([1, 3, 4, 4]) })).rejects.toThrow(/missing input 'y': f32\[N,2\]/);
  });
});

// ---- memory ---------------------------------------------------------------------------------

describe('runtime: memory', () => {
  it('frees a chain as it goes: the peak is two buffers, not the sum of all', async () => {
    const b = new GraphBuilder('chain');
    const x = b.input('x', tensorType('float32', ['N', 1000]));
    let v: Value = x;
    for (const op of ['relu', 'neg', 'exp', 'neg', 'abs', 'sqrt']) v = b.op1(op, [v]);
    // A reshape is a view: it shares its input's buffer and adds nothing.
    v = b.op1('neg', [b.op1('reshape', [v], { shape: ['N', 10, 100] })]);
    b.output('y', v);
    const model = createModel(b.build());
    for (const n of [1, 4]) {
      await model.run([f32([n, 1000], n)]);
      const bytes = n * 1000 * 4;
      expect(model.stats).toMatchObject({ peakIntermediateBytes: 2 * bytes, totalIntermediateBytes: 7 * bytes, nodesRun: 8 });
    }
  });

  it('keeps the weights once: the CPU device adopts the tensor table data instead of copying it', async () => {
    const { graph, eager } = smallCnn();
    const cpu = createCpuDevice();
    const adopted: TypedArray[] = [], written: TypedArray[] = [];
    const device: Device<TypedArray> = {
      ...cpu,
      adopt: (dtype, shape, data) => { adopted.push(data); return cpu.adopt!(dtype, shape, data); },
      write: (t, data) => { written.push(data); cpu.write(t, data); },
    };
    const model = createModel(graph, { device });
    for (const name of ['conv.weight', 'conv.bias', 'fc.weight', 'fc.bias']) expect(adopted).toContain(graph.tensors.get(name)!.data);
    expect(written.filter((d) => [...graph.tensors.values()].some((t) => t.data === d))).toEqual([]);
    const x = f32([2, 3, 8, 8], 3);
    expect(Array.from(only(await model.run([x])).data)).toEqual(Array.from(eager(x).data));
  });

  it('keeps a value read inside a loop alive through the loop, and counts carried buffers', async () => {
    const b = new GraphBuilder('loop-mem');
    const x = b.input('x', tensorType('float32', [256]));
    const y = b.op1('neg', [x]); // read by every trip: must live through the loop
    const [acc] = b.loop(b.scalar(3), null, [b.op1('relu', [x])], (_i, [a]) => ({ next: [b.op1('add', [a, y])] }));
    b.output('acc', acc);
    const model = createModel(b.build());
    const input = f32([256], 5);
    const [out] = await model.run([input]);
    const ny = Array.from(input.data, (v) => -v);
    let want = Array.from(input.data, (v) => Math.max(v, 0));
    for (let i = 0; i < 3; i++) want = want.map((v, k) => Math.fround(v + ny[k]));
    expect(Array.from(out.data)).toEqual(want);
    // Alive at once at most: y, the carried value and the next one.
    expect(model.stats!.peakIntermediateBytes).toBe(3 * 256 * 4);
    expect(model.stats!.totalIntermediateBytes).toBe(5 * 256 * 4);
  });
});

// ---- devices, limits, errors ------------------------------------------------------------------

describe('runtime: devices and errors', () => {
  it('runs through any Device: kernel choice is behind the device contract', async () => {
    const cpu = createCpuDevice();
    const seen: string[] = [];
    const counting: Device<TypedArray> = { ...cpu, dispatch: (op, inputs, attrs) => { seen.push(op); return cpu.dispatch(op, inputs, attrs); } };
    const { graph, eager } = smallCnn();
    const x = f32([2, 3, 8, 8], 3);
    const y = only(await createModel(graph, { device: counting }).run([x]));
    expect(Array.from(y.data)).toEqual(Array.from(eager(x).data));
    expect(seen).toEqual(['conv2d', 'relu', 'max_pool2d', 'reshape', 'linear']);
  });

  it('names the node when a kernel returns a shape its rule does not give', () => {
    const cpu = createCpuDevice();
    const lying: Device<TypedArray> = {
      ...cpu,
      dispatch: (op, inputs, attrs) => cpu.dispatch(op, inputs, attrs).map((t) => (op === 'relu' ? { ...t, shape: [...t.shape, 1] } : t)),
    };
    const b = new GraphBuilder('lie');
    b.output('y', b.op1('relu', [b.input('x', tensorType('float32', [2]))]));
    expectError(() => createModel(b.build(), { device: lying }).runSync([f32([2], 1)]), 'NODE', 'relu(%x)', 'kernel returned shape [2,1]');
  });

  it('wraps a kernel error with the node in text form', () => {
    const b = new GraphBuilder('gather');
    const x = b.input('x', tensorType('float32', [3]));
    const idx = b.input('idx', tensorType('int32', [2]));
    b.output('y', b.op1('index_select', [x, idx], { dim: 0 }));
    const model = createModel(b.build());
    const e = expectError(() => model.runSync([f32([3], 1), { data: new Int32Array([0, 7]), shape: [2], dtype: 'int32' }]), 'NODE', 'index_select(%x, %idx)', 'index 7 is out of range');
    expect(e.node).toContain('index_select');
  });

  it('verifies an in-memory graph first; unverified, a use without a definition fails at its node', () => {
    const x = new Value(tensorType('float32', [2]));
    const y = new Value(tensorType('float32', [2]));
    const bad = new Graph('bad', [], new Block([], [new Node('relu', [x], {}, [y])]), [{ name: 'y', value: y }]);
    expectError(() => createModel(bad), 'GRAPH', 'does not verify');
    expectError(() => createModel(bad, { verify: false }).runSync([]), 'NODE', 'relu(', 'has no value');
  });

  it('stops a loop that never ends at maxLoopTrips', () => {
    const b = new GraphBuilder('forever');
    const x = b.input('x', tensorType('float32', [1]));
    const [y] = b.loop(null, b.scalar(true, 'bool'), [x], (_i, [a]) => ({ next: [b.op1('neg', [a])] }));
    b.output('y', y);
    expectError(() => createModel(b.build(), { maxLoopTrips: 50 }).runSync([f32([1], 1)]), 'LOOP_LIMIT', 'loop(', 'after 50 trips of this loop', 'maxLoopTrips');
  });

  it('counts the trips of nested loops together against maxLoopTrips', () => {
    const b = new GraphBuilder('nested-loops');
    const x = b.input('x', tensorType('float32', [1]));
    const [y] = b.loop(b.scalar(10), null, [x], (_i, [a]) => ({
      next: b.loop(b.scalar(10), null, [a], (_j, [c]) => ({ next: [b.op1('add', [c, b.literal(1)])] })),
    }));
    b.output('y', y);
    const g = b.build();
    expect(only(createModel(g, { maxLoopTrips: 110 }).runSync([f32([1], 1)])).data[0]).toBeCloseTo(f32([1], 1).data[0] + 100, 4);
    expectError(() => createModel(g, { maxLoopTrips: 109 }).runSync([f32([1], 1)]), 'LOOP_LIMIT', 'trips of all loops in this run (limit 109)');
  });

  it('refuses a tensor over maxTensorBytes before allocating it', () => {
    const b = new GraphBuilder('big');
    const x = b.input('x', tensorType('float32', ['N', 1]));
    b.output('y', b.op1('expand', [x], { shape: ['N', 100_000] }));
    const model = createModel(b.build(), { maxTensorBytes: 1 << 20 });
    expectError(() => model.runSync([f32([4, 1], 1)]), 'TOO_LARGE', 'expand(%x)', 'f32[4,100000]', '1600000 bytes');
    expect(only(model.runSync([f32([2, 1], 1)])).shape).toEqual([2, 100_000]);
  });

  it("'auto' without WGSL kernels and 'cpu' give the CPU (WebGPU: tests/webgpu-models.test.ts)", async () => {
    expect((await createDevice('auto')).backend).toBe('cpu');
    expect((await createDevice('cpu')).backend).toBe('cpu');
    // @ts-expect-error an unknown backend name is a type error too
    await expect(createDevice('tpu')).rejects.toThrow(/unknown backend "tpu"/);
  });

  it('load refuses what is not bytes or a string, and a missing file', async () => {
    // @ts-expect-error a number is not a source
    await expect(load(42)).rejects.toMatchObject({ code: 'SOURCE' });
    await expect(load('/nonexistent/model.tsgraph')).rejects.toThrow(/cannot read '\/nonexistent\/model.tsgraph': no such file/);
  });
});
