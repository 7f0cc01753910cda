// The structural ops jit.script added to the IR — to_tensor, host_call, raise — on hand-built
// graphs: their typing and verifier rules, the text round trip, what the CPU executor does with
// them (values, host functions, errors naming the node), the .tsgraph refusal of host_call, and
// the passes keeping the effect ops.
import { describe, expect, it } from 'vitest';
import {
  Block, decodeTsgraph, encodeTsgraph, Graph, GraphBuilder, Node, parseGraph, printGraph, scalarType, tensorType, Value, verifyGraph,
} from '@kiln/ir-spec';
import { createModel, RuntimeError, type HostValue } from '@kiln/runtime';
import { eliminateCommonSubexpressions, eliminateDeadCode } from '@kiln/compiler';
import { buildUnchecked } from './setup/ir-roundtrip.js';

const x23 = { data: Float32Array.from([1, -2, 3, -4, 5, -6]), shape: [2, 3], dtype: 'float32' as const };

/** y = x * n + hook(x, n), with `hook` a host function. */
function hooked(): Graph {
  const b = new GraphBuilder('hooked');
  const x = b.input('x', tensorType('float32', ['N', 3]));
  const n = b.op1('item', [b.input('n', tensorType('int32', []))]);
  const scaled = b.op1('mul', [x, b.op1('to_tensor', [n], { dtype: 'int32' })]);
  const [h] = b.op('host_call', [x, n], { name: 'Net.hook', types: ['f32[N,3]'] });
  b.op('host_call', [n], { name: 'Net.log', types: [] });
  b.output('y', b.op1('add', [scaled, h]));
  return b.build();
}

describe('to_tensor, host_call and raise in the IR', () => {
  it('print and parse back; the types attribute types the results, symbols included', () => {
    const g = hooked();
    const text = printGraph(g);
    expect(text).toContain('to_tensor(%0) {dtype="int32"} : i32[]');
    expect(text).toMatch(/= host_call\(%x, %0\) \{name="Net\.hook", types=\["f32\[N,3\]"\]\} : f32\[N,3\]/);
    expect(text).toMatch(/\n  host_call\(%0\) \{name="Net\.log", types=\[\]\}\n/);
    expect(printGraph(parseGraph(text))).toBe(text);
    expect(() => parseGraph(text.replace('types=["f32[N,3]"]} : f32[N,3]', 'types=["f32[N,3]"]} : f32[N,4]'))).toThrow(/written as f32\[N,4\] but host_call infers f32\[N,3\]/);
  });

  it('the verifier refuses malformed attributes and inputs', () => {
    const bad = (build: (b: GraphBuilder, x: Value) => void, message: RegExp) => {
      const g = buildUnchecked(() => {
        const b = new GraphBuilder('bad');
        const x = b.input('x', tensorType('float32', [2]));
        build(b, x);
        b.output('y', x);
        return b.build();
      });
      expect(() => verifyGraph(g)).toThrow(message);
    };
    const raw = (b: GraphBuilder, op: string, inputs: Value[], attrs: Record<string, unknown>, out: Value[]) => {
      (b as unknown as { stack: Block[] }).stack[0].nodes.push(new Node(op, inputs, attrs as never, out, []));
    };
    bad((b, x) => raw(b, 'host_call', [x], { name: 'f', types: ['f32[3'] }, [new Value(tensorType('float32', [3]))]), /types\[0\] 'f32\[3' is not a type/);
    bad((b, x) => raw(b, 'host_call', [x], { name: '', types: [] }, []), /invalid attribute 'name' of host_call/);
    bad((b, x) => raw(b, 'raise', [x], { message: 'no', types: [] }, []), /raise: expects 0 input\(s\), got 1/);
    bad((b, x) => raw(b, 'to_tensor', [x], { dtype: 'float32' }, [new Value(tensorType('float32', []))]), /to_tensor: input must be a scalar, got f32\[2\]/);
    bad((b) => raw(b, 'raise', [], { message: 'm', types: ['i32'] }, [new Value(scalarType('float32'))]), /result 0 is typed f32 but raise gives i32/);
  });
});

describe('the executor', () => {
  it('calls host functions with host copies of the inputs and uploads what they return', () => {
    const calls: HostValue[][] = [];
    const model = createModel(hooked(), {
      hostFunctions: {
        'Net.hook': (t, n) => {
          calls.push([t, n]);
          const { data, shape } = t as Exclude<HostValue, number | boolean>;
          return { data: data.map((v) => v + 100), shape, dtype: 'float32' };
        },
        'Net.log': (n) => { calls.push([n]); },
      },
    });
    const [y] = model.runSync([x23, { data: Int32Array.of(3), shape: [], dtype: 'int32' }]);
    expect(Array.from(y.data)).toEqual([104, 92, 112, 84, 120, 76]);
    expect(calls.map((c) => c.length)).toEqual([2, 1]);
    expect(calls[1][0]).toBe(3);
  });

  it('a missing host function, a wrong result and a throwing one are RuntimeErrors naming the node', () => {
    const run = (fns: Record<string, (...a: HostValue[]) => unknown>) => () => createModel(hooked(), { hostFunctions: fns }).runSync([x23, 1]);
    const log = () => {};
    expect(run({ 'Net.log': log })).toThrow(/host_call[\s\S]*host function 'Net\.hook', which this model was not given; pass it as createModel\(graph, \{ hostFunctions/);
    expect(run({ 'Net.log': log, 'Net.hook': () => 7 })).toThrow(/result 0 of the host function 'Net\.hook' is not a tensor[\s\S]*expected f32\[N,3\]/);
    expect(run({ 'Net.log': log, 'Net.hook': () => ({ data: new Float32Array(3), shape: [1, 3], dtype: 'float32' }) })).toThrow(/result 0: expected f32\[N,3\], got f32\[1,3\]/);
    expect(run({ 'Net.log': log, 'Net.hook': () => { throw new Error('boom'); } })).toThrow(/the host function 'Net\.hook' threw: boom/);
    try { run({})(); } catch (e) { expect(e).toBeInstanceOf(RuntimeError); expect((e as RuntimeError).code).toBe('NODE'); }
  });

  it('raise fails the run with its message only on the path that reaches it', () => {
    const b = new GraphBuilder('guarded');
    const x = b.input('x', tensorType('float32', ['N']));
    const big = b.op1('scalar_op', [b.op1('item', [b.op1('sum', [x])]), b.scalar(10, 'float32')], { fn: 'gt' });
    const [y] = b.if(big, () => b.op('raise', [], { message: 'Net.legacy is marked @jit.unused and was reached at run time', types: ['f32[N]'] }), () => [b.op1('relu', [x])]);
    b.output('y', y);
    const g = b.build();
    const model = createModel(g);
    expect(Array.from(model.runSync([{ data: Float32Array.of(-1, 2), shape: [2], dtype: 'float32' }])[0].data)).toEqual([0, 2]);
    expect(() => model.runSync([{ data: Float32Array.of(20, 2), shape: [2], dtype: 'float32' }])).toThrow(/raise\(\)[\s\S]*Net\.legacy is marked @jit\.unused and was reached at run time/);
    // A graph with raise saves and reads back.
    expect(printGraph(decodeTsgraph(encodeTsgraph(g)).graph)).toBe(printGraph(g));
  });

  it('to_tensor rounds to its dtype like a literal', () => {
    const b = new GraphBuilder('cast');
    const s = b.op1('item', [b.input('s', tensorType('float32', []))]);
    b.output('i', b.op1('to_tensor', [s], { dtype: 'int32' }));
    b.output('f', b.op1('to_tensor', [s], { dtype: 'float32' }));
    const [i, f] = createModel(b.build()).runSync([2.75]);
    expect([i.dtype, Array.from(i.data), i.shape]).toEqual(['int32', [2], []]);
    expect(Array.from(f.data)).toEqual([2.75]);
  });
});

describe('saving and passes', () => {
  it('encodeTsgraph refuses host_call, naming the method and what to do', () => {
    expect(() => encodeTsgraph(hooked())).toThrow(/host_call 'Net\.hook', a method marked @jit\.ignore[\s\S]*Remove @jit\.ignore from Net\.hook[\s\S]*@jit\.unused[\s\S]*keep the model in this process/);
  });

  it('dead-code elimination and CSE keep effect ops, also inside regions whose results are unused', () => {
    const b = new GraphBuilder('effects');
    const x = b.input('x', tensorType('float32', [2]));
    const c = b.op1('scalar_op', [b.op1('item', [b.op1('sum', [x])]), b.scalar(0, 'float32')], { fn: 'gt' });
    b.if(c, () => { b.op('host_call', [x], { name: 'f', types: [] }); return []; }, () => []);
    b.op('host_call', [x], { name: 'f', types: ['f32[2]'] });
    b.op('host_call', [x], { name: 'f', types: ['f32[2]'] });
    b.op('relu', [x]); // truly dead
    b.output('y', x);
    const out = printGraph(eliminateCommonSubexpressions(eliminateDeadCode(b.build())));
    expect(out.match(/host_call\(/g)?.length).toBe(3);
    expect(out).toMatch(/\n  if\(%\d+\) \(\{\n    host_call\(%x\)/);
    expect(out).not.toContain('relu');
  });
});
