// The IR verifier (issue 3): every rule has a graph that breaks it — built by hand from
// Node/Block/Graph, since the builder refuses most of them — and the error names the first bad
// node in text form. A valid CNN with a loop and an if passes.

import { describe, it, expect } from 'vitest';
import {
  allBuiltins, Block, Graph, GraphBuilder, Node, scalarType, tensorType, tupleType, Value, verifyGraph, VerifyError,
  type Attrs, type Dim, type GraphInput, type GraphOutput, type TensorData,
} from '@kiln/ir-spec';

const f32 = (...shape: Dim[]) => tensorType('float32', shape);
const i32 = scalarType('int32');
const bool = scalarType('bool');

/** A graph from parts: inputs as [name, value] (a third element 'param' marks a param). */
function graph(
  inputs: [string, Value, ('input' | 'param')?][], nodes: Node[], outputs: [string, Value][],
  tensors: Record<string, TensorData> = {},
): Graph {
  const ins: GraphInput[] = inputs.map(([name, value, kind]) => ({ name, value, kind: kind ?? 'input' }));
  const outs: GraphOutput[] = outputs.map(([name, value]) => ({ name, value }));
  return new Graph('g', ins, new Block([], nodes), outs, new Map(Object.entries(tensors)));
}

const node = (op: string, inputs: (Value | null)[], attrs: Attrs, outputs: Value[], regions: Block[] = []) =>
  new Node(op, inputs, attrs, outputs, regions);

/** The VerifyError of `g`; fails the test when the graph passes or another error is thrown. */
function failure(g: Graph): VerifyError {
  try {
    verifyGraph(g);
  } catch (e) {
    if (e instanceof VerifyError) {
      expect(e.message).toContain(e.node);
      if (process.env.SHOW_VERIFY) console.log(e.message);
      return e;
    }
    throw e;
  }
  throw new Error('verifyGraph accepted a bad graph');
}

const x = () => new Value(f32('N', 4), 'x');

describe('verifyGraph: ops, arity, attributes, result types', () => {
  it('has a rule for every structural op, in its one entry (attribute schema, region count, typing rule)', () => {
    for (const b of allBuiltins()) {
      expect(typeof b.attrs?.safeParse, `${b.name} attrs schema`).toBe('function');
      expect(Number.isInteger(b.regions), `${b.name} region count`).toBe(true);
      expect(typeof b.infer, `${b.name} typing rule`).toBe('function');
      expect(b.regionNames?.length ?? b.regions, `${b.name} region names`).toBe(b.regions);
    }
    expect(allBuiltins().filter((b) => b.effects).map((b) => b.name).sort()).toEqual(['host_call', 'raise']);
  });


  it('unknown op', () => {
    const a = x(), y = new Value(f32('N', 4));
    const e = failure(graph([['x', a]], [node('relux', [a], {}, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = relux(%x) : f32[N,4]');
    expect(e.problem).toMatch(/unknown op 'relux': not in the op registry and not a structural op/);
    expect(e.where).toBe('graph @g');
  });

  it('arity: too few inputs', () => {
    const a = x(), y = new Value(f32('N', 4));
    const e = failure(graph([['x', a]], [node('add', [a], {}, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = add(%x) : f32[N,4]');
    expect(e.problem).toMatch(/add: expects 2 inputs \(a, b\), got 1/);
  });

  it('an omitted input that is not optional', () => {
    const a = x(), w = new Value(f32(5, 4), 'w'), y = new Value(f32('N', 5));
    const e = failure(graph([['x', a], ['w', w]], [node('linear', [null, w, null], {}, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = linear(none, %w, none) : f32[N,5]');
    expect(e.problem).toMatch(/input 0 \('input'\) is omitted but is not optional/);
  });

  it('attributes that fail the op schema', () => {
    const a = x(), y = new Value(f32('N', 2));
    const e = failure(graph([['x', a]], [node('slice', [a], { dim: 1, start: 0, end: 2, step: 1.5 }, [y])], [['y', y]]));
    expect(e.node).toMatch(/^%0 = slice\(%x\) \{dim=1, end=2, start=0, step=1.5\} : f32\[N,2\]$/);
    expect(e.problem).toMatch(/slice: invalid attribute 'step'/);
  });

  it('attributes not in parsed form (defaults missing)', () => {
    const a = x(), y = new Value(f32('N'));
    const e = failure(graph([['x', a]], [node('sum', [a], { dim: [1] }, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = sum(%x) {dim=[1]} : f32[N]');
    expect(e.problem).toMatch(/attributes \{dim=\[1\]\} are not in parsed form \{dim=\[1\], keepdim=false\}/);
  });

  it('structural attributes: schema, unknown keys, literal values', () => {
    const s = new Value(i32);
    let e = failure(graph([], [node('scalar', [], { value: 1.5, dtype: 'int32' }, [s])], [['s', s]]));
    expect(e.node).toBe('%0 = scalar() {dtype="int32", value=1.5} : i32');
    expect(e.problem).toMatch(/invalid attributes of scalar: an int32 literal needs an integer value/);
    const a = new Value(i32, 'a'), b2 = new Value(i32);
    e = failure(graph([['a', a]], [node('scalar_op', [a, a], { fn: 'plus' }, [b2])], [['b', b2]]));
    expect(e.problem).toMatch(/invalid attribute 'fn' of scalar_op/);
    const t = new Value(f32(1), 't'), v = new Value(scalarType('float32'));
    e = failure(graph([['t', t]], [node('item', [t], { index: 0 }, [v])], [['v', v]]));
    expect(e.node).toBe('%0 = item(%t) {index=0} : f32');
    expect(e.problem).toMatch(/invalid attributes of item/);
  });

  it('result count', () => {
    const a = new Value(f32('N', 8, 4, 4), 'x'), y = new Value(f32('N', 8, 2, 2));
    const e = failure(graph([['x', a]], [node('max_pool2d', [a], { kernel_size: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1], ceil_mode: false }, [y])], [['y', y]]));
    expect(e.node).toMatch(/^%0 = max_pool2d\(%x\) \{.*\} : f32\[N,8,2,2\]$/);
    expect(e.problem).toMatch(/max_pool2d gives 2 result\(s\) but the node has 1/);
  });

  it('result types must equal the op rule', () => {
    const a = x(), y = new Value(f32('N', 5));
    const e = failure(graph([['x', a]], [node('relu', [a], {}, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = relu(%x) : f32[N,5]');
    expect(e.problem).toBe('result 0 is typed f32[N,5] but relu gives f32[N,4] for these inputs');
  });

  it('shape errors of the op rule are reported on the node', () => {
    const a = x(), c = new Value(f32('M', 4), 'c'), y = new Value(f32('N', 4));
    const e = failure(graph([['x', a], ['c', c]], [node('add', [a, c], {}, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = add(%x, %c) : f32[N,4]');
    expect(e.problem).toMatch(/add: shapes \[N,4\] and \[M,4\] cannot be broadcast: dimension 0 is N vs M/);
  });

  it('reports the FIRST bad node', () => {
    const a = x(), y = new Value(f32('N', 5)), z = new Value(f32('N', 6));
    const e = failure(graph([['x', a]], [node('relu', [a], {}, [y]), node('neg', [a], {}, [z])], [['y', y], ['z', z]]));
    expect(e.node).toBe('%0 = relu(%x) : f32[N,5]');
  });
});

describe('verifyGraph: SSA and dominance', () => {
  it('a value defined twice', () => {
    const a = x(), y = new Value(f32('N', 4));
    const e = failure(graph([['x', a]], [node('relu', [a], {}, [y]), node('neg', [a], {}, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = neg(%x) : f32[N,4]');
    expect(e.problem).toMatch(/%0 is defined twice; every value is defined exactly once/);
  });

  it('a use before the definition, and a node using its own result', () => {
    const a = x(), y = new Value(f32('N', 4)), z = new Value(f32('N', 4));
    let e = failure(graph([['x', a]], [node('neg', [y], {}, [z]), node('relu', [a], {}, [y])], [['z', z]]));
    expect(e.node).toBe('%0 = neg(%1) : f32[N,4]');
    expect(e.problem).toMatch(/input 0 \(%1\) is used before its definition/);
    e = failure(graph([['x', a]], [node('add', [a, y], {}, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = add(%x, %0) : f32[N,4]');
    expect(e.problem).toMatch(/input 1 \(%0\) is used before its definition/);
  });

  it('a value defined nowhere', () => {
    const a = x(), ghost = new Value(f32('N', 4)), y = new Value(f32('N', 4));
    const e = failure(graph([['x', a]], [node('add', [a, ghost], {}, [y])], [['y', y]]));
    expect(e.node).toMatch(/^%0 = add\(%x, %.+\) : f32\[N,4\]$/);
    expect(e.problem).toMatch(/input 1 .* is not defined anywhere in the graph/);
  });

  it('a value from a region used outside it, or in the sibling region', () => {
    const c = new Value(bool, 'c'), a = x();
    const t = new Value(f32('N', 4)), r = new Value(f32('N', 4)), after = new Value(f32('N', 4));
    const then = new Block([], [node('relu', [a], {}, [t])], [t]);
    const els = new Block([], [], [t]);
    let e = failure(graph([['c', c], ['x', a]], [node('if', [c], {}, [r], [then, els])], [['r', r]]));
    expect(e.node).toBe('yield %1');
    expect(e.where).toMatch(/^region 1 \(else\) of %0 = if\(%c\) : f32\[N,4\]  \[2 regions\], in graph @g$/);
    expect(e.problem).toMatch(/yielded value 0 \(%1\) is defined inside a region that does not enclose this use/);

    const ok = new Block([], [], [a]);
    const then2 = new Block([], [node('relu', [a], {}, [t])], [t]);
    e = failure(graph([['c', c], ['x', a]], [node('if', [c], {}, [r], [then2, ok]), node('neg', [t], {}, [after])], [['after', after]]));
    expect(e.node).toBe('%2 = neg(%1) : f32[N,4]');
    expect(e.problem).toMatch(/defined inside a region that does not enclose this use/);
  });

  it('graph outputs must be defined at the top level', () => {
    const c = new Value(bool, 'c'), a = x(), t = new Value(f32('N', 4)), r = new Value(f32('N', 4));
    const then = new Block([], [node('relu', [a], {}, [t])], [t]);
    const g = graph([['c', c], ['x', a]], [node('if', [c], {}, [r], [then, new Block([], [], [a])])], [['r', t]]);
    const e = failure(g);
    expect(e.node).toBe('output r = %1');
    expect(e.problem).toMatch(/output 'r' is defined inside a region/);
  });
});

describe('verifyGraph: regions', () => {
  const c = () => new Value(bool, 'c');

  it('region counts', () => {
    const cc = c(), a = x(), r = new Value(f32('N', 4)), y = new Value(f32('N', 4));
    let e = failure(graph([['c', cc], ['x', a]], [node('if', [cc], {}, [r], [new Block([], [], [a])])], [['r', r]]));
    expect(e.problem).toBe('if takes 2 region(s), got 1');
    e = failure(graph([['x', a]], [node('relu', [a], {}, [y], [new Block([], [], [])])], [['y', y]]));
    expect(e.node).toBe('%0 = relu(%x) : f32[N,4]  [1 region]');
    expect(e.problem).toBe('relu takes 0 region(s), got 1');
  });

  it('if: no region arguments, matching yields', () => {
    const cc = c(), a = x(), r = new Value(f32('N', 4)), arg = new Value(f32('N', 4));
    let e = failure(graph([['c', cc], ['x', a]], [node('if', [cc], {}, [r], [new Block([arg], [], [arg]), new Block([], [], [a])])], [['r', r]]));
    expect(e.problem).toMatch(/if: regions take no arguments/);
    const s = new Value(f32('N', 5), 's');
    e = failure(graph([['c', cc], ['x', a], ['s', s]], [node('if', [cc], {}, [r], [new Block([], [], [a]), new Block([], [], [s])])], [['r', r]]));
    expect(e.node).toBe('%0 = if(%c) : f32[N,4]  [2 regions]');
    expect(e.problem).toMatch(/result 0: then yields f32\[N,4\], else yields f32\[N,5\]/);
    const f = new Value(scalarType('float32'), 'f');
    e = failure(graph([['f', f], ['x', a]], [node('if', [f], {}, [r], [new Block([], [], [a]), new Block([], [], [a])])], [['r', r]]));
    expect(e.problem).toMatch(/condition must be a bool scalar/);
  });

  it('loop: body(i: i32, ...carried) yields (bool, ...carried)', () => {
    const n = new Value(i32, 'n'), a = x(), out = new Value(f32('N', 4));
    const body = (args: Value[], nodes: Node[], yields: Value[]) => node('loop', [n, null, a], {}, [out], [new Block(args, nodes, yields)]);
    const yes = new Value(bool);
    const yesNode = node('scalar', [], { value: true, dtype: 'bool' }, [yes]);

    // The trip index must be i32.
    let i = new Value(scalarType('float32'), 'i'), acc = new Value(f32('N', 4), 'acc');
    let e = failure(graph([['n', n], ['x', a]], [body([i, acc], [yesNode], [yes, acc])], [['out', out]]));
    expect(e.node).toBe('%0 = loop(%n, none, %x) : f32[N,4]  [1 region]');
    expect(e.problem).toMatch(/first body argument \(the trip index\) must be i32, got f32/);

    // The first yield must be the bool `continue`.
    i = new Value(i32, 'i'); acc = new Value(f32('N', 4), 'acc');
    e = failure(graph([['n', n], ['x', a]], [body([i, acc], [], [acc, acc])], [['out', out]]));
    expect(e.problem).toMatch(/body's first yield \(continue\) must be a bool scalar, got f32\[N,4\]/);

    // Carried types agree between init, argument and yield.
    i = new Value(i32, 'i'); acc = new Value(f32('N', 4), 'acc');
    const wider = new Value(f32('N', 4, 1));
    const yes2 = new Value(bool);
    e = failure(graph([['n', n], ['x', a]], [body([i, acc], [
      node('scalar', [], { value: true, dtype: 'bool' }, [yes2]),
      node('reshape', [acc], { shape: ['N', 4, 1] }, [wider]),
    ], [yes2, wider])], [['out', out]]));
    expect(e.problem).toMatch(/carried value 0: initial f32\[N,4\], body argument f32\[N,4\], yielded f32\[N,4,1\] must all agree/);

    // Arity of the region's arguments.
    i = new Value(i32, 'i');
    const yes3 = new Value(bool);
    e = failure(graph([['n', n], ['x', a]], [body([i], [node('scalar', [], { value: true, dtype: 'bool' }, [yes3])], [yes3])], [['out', out]]));
    expect(e.problem).toMatch(/body takes \(i, \.\.\.carried\): expected 2 args, got 1/);

    // maxTrips and cond may be omitted (not both), nothing else may.
    const e2 = failure(graph([['x', a]], [node('loop', [null, null, null], {}, [out], [new Block([new Value(i32), new Value(f32('N', 4))], [], [])])], [['out', out]]));
    expect(e2.problem).toMatch(/input 2 is omitted but is not optional/);
  });

  it('region arguments are definitions: reusing a value as an argument is a double definition', () => {
    const n = new Value(i32, 'n'), a = x(), out = new Value(f32('N', 4)), yes = new Value(bool);
    const g = graph([['n', n], ['x', a]], [node('loop', [n, null, a], {}, [out], [new Block([new Value(i32), a], [node('scalar', [], { value: true, dtype: 'bool' }, [yes])], [yes, a])])], [['out', out]]);
    expect(failure(g).problem).toMatch(/%x is defined twice/);
  });
});

describe('verifyGraph: inputs, outputs and the tensor table', () => {
  const w = (shape: number[], n = shape.reduce((p, d) => p * d, 1)): TensorData => ({ dtype: 'float32', shape, data: new Float32Array(n) });

  it('duplicate input and output names', () => {
    const a = x(), b2 = new Value(f32('N', 4), 'x2');
    let e = failure(graph([['x', a], ['x', b2]], [], [['y', a]]));
    expect(e.node).toBe('input %x_1: f32[N,4]');
    expect(e.problem).toBe("duplicate input name 'x' (inputs 0 and 1); rename one");
    e = failure(graph([['x', a]], [], [['y', a], ['y', a]]));
    expect(e.node).toBe('output y = %x');
    expect(e.problem).toBe("duplicate output name 'y'; rename one");
  });

  it('the same value as two inputs', () => {
    const a = x();
    expect(failure(graph([['x', a], ['x2', a]], [], [['y', a]])).problem).toMatch(/is defined twice/);
  });

  it('input types must be canonical', () => {
    const a = new Value(f32('64*N', 4), 'x');
    const e = failure(graph([['x', a]], [], [['y', a]]));
    expect(e.node).toBe('input %x: f32[64*N,4]');
    expect(e.problem).toMatch(/input 'x': dim 0 '64\*N' is not a canonical symbolic dim .*'N\*64'/);
    const neg = new Value(f32(-1), 'z');
    expect(failure(graph([['z', neg]], [], [['y', neg]])).problem).toMatch(/dim 0 is -1; sizes are non-negative integers/);
  });

  it('params are backed by a table tensor of the same type and length', () => {
    const p = new Value(f32(5, 4), 'w');
    let e = failure(graph([['w', p, 'param']], [], [['y', p]]));
    expect(e.node).toBe('param %w: f32[5,4]');
    expect(e.problem).toMatch(/param 'w' has no tensor of that name in the graph's tensor table/);
    e = failure(graph([['w', p, 'param']], [], [['y', p]], { w: w([4, 5]) }));
    expect(e.problem).toBe("param 'w' is declared f32[5,4] but its tensor in the table is f32[4,5]");
    e = failure(graph([['w', p, 'param']], [], [['y', p]], { w: w([5, 4], 19) }));
    expect(e.problem).toBe("tensor 'w' has shape [5,4] (20 elements) but 19 data elements");
    e = failure(graph([['w', p, 'param']], [], [['y', p]], { w: { dtype: 'float32', shape: [5, 4], data: new Int32Array(20) } }));
    expect(e.problem).toBe("tensor 'w' (float32) holds Int32Array data; float32 data must be a Float32Array");
  });

  it('constant {name} needs a table tensor with matching data', () => {
    const y = new Value(f32(2, 2));
    let e = failure(graph([], [node('constant', [], { name: 'k' }, [y])], [['y', y]]));
    expect(e.node).toBe('%0 = constant() {name="k"} : f32[2,2]');
    expect(e.problem).toMatch(/no tensor named 'k' in the graph's tensor table/);
    e = failure(graph([], [node('constant', [], { name: 'k' }, [y])], [['y', y]], { k: w([2, 2], 3) }));
    expect(e.problem).toBe("tensor 'k' has shape [2,2] (4 elements) but 3 data elements");
    e = failure(graph([], [node('constant', [], { name: 'k' }, [y])], [['y', y]], { k: w([2, 3]) }));
    expect(e.problem).toBe('result 0 is typed f32[2,2] but constant gives f32[2,3] for these inputs');
  });

  it('the graph body has no arguments or yields', () => {
    const a = x();
    const g = new Graph('g', [{ name: 'x', kind: 'input', value: a }], new Block([], [], [a]), [{ name: 'y', value: a }]);
    expect(failure(g).problem).toMatch(/graph body must have no block arguments and no yields/);
  });
});

describe('verifyGraph: valid graphs pass', () => {
  it('a CNN with a loop and an if (GraphBuilder)', () => {
    const b = new GraphBuilder('cnn');
    const xin = b.input('x', tensorType('float32', ['N', 3, 8, 8]));
    const w = b.param('conv.weight', { dtype: 'float32', shape: [4, 3, 3, 3], data: new Float32Array(108) });
    const bias = b.param('conv.bias', { dtype: 'float32', shape: [4], data: new Float32Array(4) });
    const mean = b.constant('bn.mean', { dtype: 'float32', shape: [4], data: new Float32Array(4) });
    const v = b.constant('bn.var', { dtype: 'float32', shape: [4], data: new Float32Array(4).fill(1) });
    const y = b.op1('conv2d', [xin, w, bias], { padding: [1, 1, 1, 1] });
    const n = b.op1('batch_norm', [y, mean, v, null, null]);
    const [p] = b.op('max_pool2d', [b.op1('relu', [n])], { kernel_size: [2, 2], stride: [2, 2] });
    const f = b.op1('reshape', [p], { shape: ['N', -1] });
    const trips = b.scalar(3);
    const [acc] = b.loop(trips, null, [f], (_i, [a]) => ({ next: [b.op1('add', [a, b.literal(1)])] }));
    const s = b.op1('sum', [acc], { dim: [1] });
    const c = b.op1('gt', [b.op1('sum', [s]), b.literal(0)]);
    const [out] = b.if(c, () => [s], () => [b.op1('neg', [s])]);
    const masked = b.op1('where', [b.op1('gt', [out, b.literal(0)]), out, b.literal(-Infinity)]);
    const d = b.op('dim', [xin], { index: 0 })[0];
    const pair = b.op('tuple', [masked, d])[0];
    b.output('out', b.op('tuple_get', [pair], { index: 0 })[0]);
    b.output('n', d);
    const g = b.build();
    expect(() => verifyGraph(g)).not.toThrow();
    expect(pair.type).toEqual(tupleType([f32('N'), i32]));
  });

  it('a loop with a condition and no trip count, and a value from outside used in the body', () => {
    const b = new GraphBuilder('count');
    const xin = b.input('x', tensorType('float32', ['N']));
    const lim = b.input('lim', scalarType('int32'));
    const go = b.scalar(true, 'bool');
    const [r] = b.loop(null, go, [xin], (i, [a]) => ({
      next: [b.op1('add', [a, xin])],
      continue: b.op('scalar_op', [i, lim], { fn: 'lt' })[0],
    }));
    b.output('r', r);
    expect(() => verifyGraph(b.build())).not.toThrow();
  });
});
