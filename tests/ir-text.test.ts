// The IR text form: printer and parser round-trip hand-built graphs, golden texts pin the
// format, and malformed text gives located errors. Golden files live in tests/ir-text/; after
// an intended format change, refresh them with
//   npm run test:update -- tests/ir-text.test.ts
// and review the diff. They pin the format, so they are compared byte for byte.
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  GraphBuilder, IRParseError, Graph, listType, nameValues, onGraphBuilt, parseGraph, printGraph, printNode,
  scalarType, tensorType, tupleType, walkNodes, type TensorData,
} from '@kiln/ir-spec';
import { buildUnchecked } from './setup/ir-roundtrip.js';
import { expectGoldenFile } from './helpers/golden.js';

const f32 = (shape: number[], fill = 0): TensorData => ({
  dtype: 'float32', shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(fill),
});

/** A small CNN: conv (with scope/loc meta), batch_norm, relu, a two-result max_pool2d, linear. */
function buildCnn(): Graph {
  const b = new GraphBuilder('cnn', { producer: 'ir-text.test', source: 'model.ts' });
  const x = b.input('x', tensorType('float32', ['N', 3, 8, 8]));
  const w = b.param('features.0.weight', f32([4, 3, 3, 3], 0.5));
  const bias = b.param('features.0.bias', f32([4]));
  const mean = b.param('features.1.running_mean', f32([4]));
  const vr = b.param('features.1.running_var', f32([4], 1));
  const fw = b.param('fc.weight', f32([10, 64]));
  b.meta = { scope: 'features.0', loc: 'model.ts:12:5' };
  const c = b.op1('conv2d', [x, w, bias], { padding: [1, 1, 1, 1] });
  b.meta = { scope: 'features.1' };
  const bn = b.op1('batch_norm', [c, mean, vr, null, null], { eps: 1e-5 });
  b.meta = { loc: 'model.ts:14:7' };
  const r = b.op1('relu', [bn]);
  b.meta = {};
  const [pooled, indices] = b.op('max_pool2d', [r], { kernel_size: [2, 2], stride: [2, 2] });
  const flat = b.op1('reshape', [pooled], { shape: ['N', 64] });
  const logits = b.op1('linear', [flat, fw, null]);
  const scaled = b.op1('mul', [logits, b.literal(0.1)]);
  b.output('logits', scaled);
  b.output('indices', indices);
  return b.build();
}

/**
 * Control flow: a loop with a trip count, a continue condition and two carried values, an `if`
 * nested in its body, scalar_op, dim of a symbolic dim, item, tuples.
 */
function buildControlFlow(): Graph {
  const b = new GraphBuilder('control');
  const x = b.input('x', tensorType('float32', ['N', 4]));
  const limit = b.input('limit', tensorType('float32', [1]));
  const n = b.op1('dim', [x], { index: 0 });
  const trips = b.op1('scalar_op', [n, b.scalar(2)], { fn: 'mul' });
  const go = b.scalar(true, 'bool');
  const [acc, steps] = b.loop(trips, go, [x, b.scalar(0)], (i, [a, k]) => {
    const total = b.op1('sum', [a]);
    const big = b.op1('gt', [total, b.op1('reshape', [limit], { shape: [] })]);
    const [next] = b.if(big, () => [b.op1('mul', [a, b.literal(0.5)])], () => [b.op1('add', [a, b.literal(1e-5)])]);
    const k1 = b.op1('scalar_op', [k, b.scalar(1)], { fn: 'add' });
    const cont = b.op1('scalar_op', [i, b.scalar(10)], { fn: 'lt' });
    return { next: [next, k1], continue: cont };
  });
  const pair = b.op1('tuple', [acc, steps]);
  const first = b.op1('tuple_get', [pair], { index: 0 });
  const s = b.op1('item', [b.op1('sum', [first], { dim: null, keepdim: true })]);
  b.output('y', first);
  b.output('steps', steps);
  b.output('total', s);
  b.output('pair', pair);
  return b.build();
}

/** Asserts the text round trip and returns the parsed graph. */
function roundTrip(g: Graph): Graph {
  const text = printGraph(g);
  const parsed = parseGraph(text, { tensors: g.tensors });
  expect(printGraph(parsed)).toBe(text);
  return parsed;
}

describe('IR text form: round trip', () => {
  it('a small CNN with params, batch_norm, a two-result max_pool2d and meta', () => {
    const g = buildCnn();
    const p = roundTrip(g);
    expect(p.inputs.map((i) => [i.name, i.kind])).toEqual(g.inputs.map((i) => [i.name, i.kind]));
    expect(p.tensors.get('features.0.weight')).toBe(g.tensors.get('features.0.weight'));
    expect(p.metadata).toEqual(g.metadata);
    const ops = (gr: Graph) => [...walkNodes(gr.body)].map((n) => [n.op, n.attrs, n.meta, n.outputs.length]);
    expect(ops(p)).toEqual(ops(g));
    const text = printGraph(g);
    expect(text).toContain('%0 = conv2d(%x, %features.0.weight, %features.0.bias) {dilation=[1,1], groups=1, padding=[1,1,1,1], stride=[1,1]} : f32[N,4,8,8]  // features.0 @ model.ts:12:5');
    expect(text).toContain('batch_norm(%0, %features.1.running_mean, %features.1.running_var, none, none) {eps=0.00001}');
    expect(text).toMatch(/ {2}%3, %4 = max_pool2d\(%2\) \{.*\} : f32\[N,4,4,4\], i32\[N,4,4,4\]\n/);
    expect(text).toContain('// @ model.ts:14:7');
  });

  it('loops with carried values and a continue condition, a nested if, tuples, scalar_op, dim, item', () => {
    const g = buildControlFlow();
    const p = roundTrip(g);
    const loop = p.body.nodes.find((n) => n.op === 'loop')!;
    expect(loop.inputs).toHaveLength(4);
    expect(loop.regions[0].args.map((a) => a.hint)).toEqual(['i', undefined, undefined]);
    expect(loop.regions[0].nodes.some((n) => n.op === 'if' && n.regions.length === 2)).toBe(true);
    expect(p.outputs.map((o) => o.name)).toEqual(['y', 'steps', 'total', 'pair']);
    expect(printGraph(g)).toContain('-> (y: f32[N,4], steps: i32, total: f32, pair: tuple<f32[N,4], i32>)');
  });

  it('prints the same text for the same graph, however often it is built', () => {
    expect(printGraph(buildCnn())).toBe(printGraph(buildCnn()));
    expect(printGraph(buildControlFlow())).toBe(printGraph(buildControlFlow()));
  });

  const literals = (name: string, values: readonly number[]) => {
    const b = new GraphBuilder(name);
    values.forEach((v, i) => b.output(`c${i}`, b.literal(v)));
    return b.build();
  };
  const expectSameNumbers = (g: Graph, values: readonly number[]) => {
    const got = roundTrip(g).body.nodes.map((n) => n.attrs.value);
    got.forEach((v, i) => expect(Object.is(v, values[i]), `value ${values[i]} came back as ${v}`).toBe(true));
  };

  it('floats in attributes read back to the identical float64 and float32 value', () => {
    const values = [0.1, 1e-5, -1e9, Math.fround(0.1), Math.fround(1e-5), 5e-324, 1.7976931348623157e308, 1e21, 1e-7, -0, 1 / 3, 3];
    const g = literals('floats', values);
    expectSameNumbers(g, values);
    const text = printGraph(g);
    for (const s of ['value=0.1}', 'value=0.00001}', 'value=-1000000000}', 'value=0.10000000149011612}', 'value=1e+21}', 'value=1e-7}', 'value=-0}', 'value=3}']) expect(text).toContain(s);
  });

  it('non-finite numbers print as nan, inf, -inf and read back', () => {
    // The verifier refuses non-finite literals, but the text form must still carry any graph
    // (it prints graphs inside error messages), so this one is built without the suite checks.
    const values = [NaN, Infinity, -Infinity];
    const g = buildUnchecked(() => literals('nonfinite', values));
    expectSameNumbers(g, values);
    for (const s of ['value=nan}', 'value=inf}', 'value=-inf}']) expect(printGraph(g)).toContain(s);
  });

  it('every type: symbolic dims and products, 0-d tensors, scalars, tuples, lists', () => {
    const b = new GraphBuilder('types');
    const types = [
      tensorType('float32', ['N*64', 3]), tensorType('float32', []), tensorType('int32', ['B*T+1', 'T[1::1]', '(N*64)[:-1:1]']),
      tensorType('bool', [0]), scalarType('float32'), scalarType('int32'), scalarType('bool'),
      tupleType([tensorType('float32', [2]), scalarType('int32'), tupleType([])]), listType(tensorType('float32', ['N', 4])),
      listType(tupleType([scalarType('bool'), listType(scalarType('int32'))])),
    ];
    types.forEach((t, i) => b.output(`o${i}`, b.input(`v${i}`, t)));
    const g = b.build();
    roundTrip(g);
    expect(printGraph(g)).toContain('%v2: i32[B*T+1,T[1::1],(N*64)[:-1:1]]');
    expect(printGraph(g)).toContain('%v9: list<tuple<bool, list<i32>>>');
  });

  it('dims without a bare form are quoted and read back exactly', () => {
    // Not canonical dims (the verifier refuses them), but the printer is total.
    const t = tensorType('float32', ['a,b', '3', '', 'N]', 'N[1:', 'N', 'N *2', '+N', '%N', '//N', '-1', 1.5]);
    const g = buildUnchecked(() => {
      const b = new GraphBuilder('dims');
      b.output('y', b.input('x', t));
      return b.build();
    });
    expect(printGraph(g)).toContain('%x: f32["a,b","3","","N]","N[1:",N,"N *2",+N,%N,"//N","-1",1.5]');
    // 1.5 is no size: it prints as 1.5 and reads back as the symbol text '1.5' (the verifier refuses both)
    expect(roundTrip(g).inputs[0].value.type).toEqual(tensorType('float32', [...t.shape.slice(0, -1), '1.5']));
  });

  it('odd names, strings and meta are quoted and read back exactly', () => {
    const b = new GraphBuilder('my graph', { 'key with "quotes"': 'line\nbreak', 'a': '' });
    const x = b.input('0', tensorType('float32', ['N', 3]));
    const y = b.input('in put', tensorType('float32', [2]));
    b.constant('w "quoted"\n', f32([2], 3));
    b.meta = { scope: '"odd" scope @ here', loc: ' spaced/file name.ts:1:2 ' };
    const z = b.op1('neg', [y]);
    b.meta = { scope: '' , loc: '' };
    const w = b.op1('add', [z, b.op1('constant', [], { name: 'w "quoted"\n' })]);
    b.output('return', x);
    b.output('none', w);
    const g = b.build();
    const p = roundTrip(g);
    expect(p.name).toBe('my graph');
    expect(p.inputs.map((i) => i.name)).toEqual(['0', 'in put']);
    expect(p.metadata).toEqual(g.metadata);
    expect([...walkNodes(p.body)].map((n) => n.meta)).toEqual([...walkNodes(g.body)].map((n) => n.meta));
    expect(p.outputs.map((o) => o.name)).toEqual(['return', 'none']);
  });

  it('block arguments keep unique readable names; node results are numbered in text order', () => {
    const b = new GraphBuilder('names');
    const x = b.input('x', tensorType('float32', [2]));
    const n = b.scalar(3);
    const [a] = b.loop(n, null, [x], (_i, [v]) => ({ next: [b.op1('neg', [v])] }));
    const [c] = b.loop(n, null, [a], (_i, [v]) => ({ next: [b.op1('relu', [v])] }));
    b.output('y', c);
    const g = b.build();
    const text = printGraph(g);
    expect(text).toContain('^(%i: i32, %2: f32[2]):');
    expect(text).toContain('^(%i_1: i32, %6: f32[2]):');
    expect(roundTrip(g).body.nodes[2].regions[0].args[0].hint).toBe('i_1');
    expect(nameValues(g).get(x)).toBe('x');
  });

  it('printNode shows one node as the graph text does', () => {
    const g = buildCnn();
    const names = nameValues(g);
    const pool = g.body.nodes.find((n) => n.op === 'max_pool2d')!;
    const line = printGraph(g).split('\n').find((l) => l.includes('max_pool2d'))!;
    expect(printNode(pool, names)).toBe(line.trim());
    expect(printNode(pool)).toMatch(/^%1, %2 = max_pool2d\(%0\)/);
  });

  it('hand-written text: comments, spacing, omitted types and defaults parse to the canonical form', () => {
    const text = `
      // a comment line
      graph @f ( %x : f32[ N , 4 ] , param %w: f32[3,4] ) -> ( y : f32[N,3] ) {
        %a = linear(%x, %w, none)
        %b = clamp(%a) {max = 6, min = 0}   // act @ f.ts:3:1
        return y = %b
      }
    `;
    const w = f32([3, 4]);
    const g = parseGraph(text, { tensors: new Map([['w', w]]) });
    expect(printGraph(g)).toBe([
      'graph @f(%x: f32[N,4], param %w: f32[3,4]) -> (y: f32[N,3]) {',
      '  %0 = linear(%x, %w, none) : f32[N,3]',
      '  %1 = clamp(%0) {max=6, min=0} : f32[N,3]  // act @ f.ts:3:1',
      '  return y=%1',
      '}',
      '',
    ].join('\n'));
  });

  it('without a tensor table, params and named constants take their types from the text', () => {
    const b = new GraphBuilder('consts');
    const w = b.param('w', f32([2, 2]));
    const c = b.constant('c', f32([2, 2], 1));
    b.output('y', b.op1('add', [w, c]));
    const g = b.build();
    const p = parseGraph(printGraph(g));
    expect(p.tensors.size).toBe(0);
    expect(printGraph(p)).toBe(printGraph(g));
  });
});

describe('IR text form: SPEC.md', () => {
  it('the complete example of ir-spec/SPEC.md parses and prints back identically', () => {
    const spec = readFileSync(fileURLToPath(new URL('../ir-spec/SPEC.md', import.meta.url)), 'utf8');
    const at = spec.indexOf('A complete example');
    const start = spec.indexOf('```\n', at) + 4;
    const example = spec.slice(start, spec.indexOf('```', start));
    expect(at).toBeGreaterThan(0);
    expect(printGraph(parseGraph(example))).toBe(example);
  });
});

describe('IR text form: golden files', () => {
  const cases: [string, () => Graph][] = [['cnn', buildCnn], ['control-flow', buildControlFlow]];
  for (const [name, build] of cases) {
    it(`${name}.ir`, () => {
      const file = fileURLToPath(new URL(`./ir-text/${name}.ir`, import.meta.url));
      const g = build();
      const text = printGraph(g);
      expectGoldenFile(file, text, { what: 'the printed graph differs from the golden text' });
      const golden = readFileSync(file, 'utf8');
      expect(printGraph(parseGraph(golden, { tensors: g.tensors }))).toBe(golden);
    });
  }
});

/** The IRParseError `parseGraph(text)` throws. */
function parseError(text: string, opts?: Parameters<typeof parseGraph>[1]): IRParseError {
  try {
    parseGraph(text, opts);
  } catch (e) {
    if (e instanceof IRParseError) return e;
    throw e;
  }
  throw new Error('expected an IRParseError, but the text parsed');
}

describe('IR text form: parse errors are located', () => {
  const ok = [
    'graph @f(%x: f32[N,4]) -> (y: f32[N,4]) {',
    '  %0 = relu(%x) : f32[N,4]',
    '  return y=%0',
    '}',
  ];
  const edit = (line: number, from: string, to: string) => ok.map((l, i) => (i === line ? l.replace(from, to) : l)).join('\n');

  it('the base text parses', () => {
    expect(printGraph(parseGraph(ok.join('\n')))).toBe(`${ok.join('\n')}\n`);
  });

  it('unknown op: suggests the closest name', () => {
    const e = parseError(edit(1, 'relu', 'rleu'));
    expect([e.line, e.col]).toEqual([2, 8]);
    expect(e.message).toContain("unknown op 'rleu'");
    expect(e.message).toContain("did you mean 'relu'?");
    expect(e.message).toContain('2 |   %0 = rleu(%x) : f32[N,4]\n  |        ^');
  });

  it('undefined value', () => {
    const e = parseError(edit(1, '(%x)', '(%y)'));
    expect([e.line, e.col]).toEqual([2, 13]);
    expect(e.reason).toMatch(/^undefined value %y/);
  });

  it('a written type that disagrees with the inferred one names the node', () => {
    const e = parseError(edit(1, ': f32[N,4]', ': f32[N,5]'));
    expect([e.line, e.col]).toEqual([2, 19]);
    expect(e.reason).toContain('%0 = relu: result %0 is written as f32[N,5] but relu infers f32[N,4]');
  });

  it('a bad token says what was expected', () => {
    const e = parseError(edit(1, '(%x)', '(%x;)'));
    expect([e.line, e.col]).toEqual([2, 15]);
    expect(e.reason).toBe('unexpected character ";"');
    const e2 = parseError(edit(1, '(%x)', '(%x %x)'));
    expect(e2.reason).toBe("expected ')' after the inputs of %0 = relu (inputs are separated by ','), found '%x'");
    const e3 = parseError(edit(0, 'f32[N,4])', 'f32[N,4]'));
    expect(e3.reason).toMatch(/^expected '\)' after the graph's inputs/);
  });

  it('op errors (bad attributes, arity) are located at the op', () => {
    const e = parseError(edit(1, 'relu(%x)', 'sum(%x) {dim="a"}'));
    expect([e.line, e.col]).toEqual([2, 8]);
    expect(e.reason).toContain("%0 = sum: sum: invalid attribute 'dim'");
    const e2 = parseError(edit(1, 'relu(%x)', 'add(%x)'));
    expect(e2.reason).toContain('%0 = add: add: expects 2 inputs');
  });

  it('a value used outside the region that defines it', () => {
    const e = parseError([
      'graph @f(%x: f32[2], %c: bool) -> (y: f32[2]) {',
      '  %0 = if(%c) ({',
      '    %1 = neg(%x) : f32[2]',
      '    yield %1',
      '  }, {',
      '    yield %x',
      '  }) : f32[2]',
      '  return y=%1',
      '}',
    ].join('\n'));
    expect([e.line, e.col]).toEqual([8, 12]);
    expect(e.reason).toContain('value %1 is not visible here: it is defined at 3:5');
  });

  it('a name defined twice, a result count mismatch, a missing tensor, an unterminated string', () => {
    expect(parseError(edit(1, '%0 = relu(%x)', '%x = relu(%x)')).reason).toContain('%x is already defined at 1:10');
    expect(parseError(edit(1, '%0 = relu(%x) : f32[N,4]', '%0, %1 = relu(%x)')).reason).toContain('relu has 1 result(s) but the text names 2');
    const param = 'graph @f(param %w: f32[2]) -> (y: f32[2]) {\n  return y=%w\n}';
    expect(parseError(param, { tensors: new Map() }).reason).toContain("param %w has no tensor named 'w'");
    expect(parseError(param, { tensors: new Map([['w', f32([3])]]) }).reason).toContain('param %w is written as f32[2] but its tensor is f32[3]');
    const broken = parseError(edit(1, 'relu(%x)', 'reshape(%x) {shape=["N, 4]}'));
    expect([broken.line, broken.col]).toEqual([2, 28]);
    expect(broken.reason).toContain('unterminated string: close it with \'"\' on the same line');
    expect(parseGraph(`${ok.join('\n')} // a comment may hold anything: "`).name).toBe('f');
    const open = parseError('graph @"f');
    expect([open.line, open.col, open.reason]).toEqual([1, 8, 'unterminated string: add the closing \'"\'']);
  });

  it('pathologically deep nesting is refused, not a stack overflow', () => {
    const deepType = `graph @f(%x: ${'tuple<'.repeat(10_000)}i32${'>'.repeat(10_000)}) -> () {\n  return\n}`;
    expect(parseError(deepType).reason).toBe('nested deeper than 200 levels (regions, types or attribute lists)');
    const deepIf = `graph @f(%c: bool) -> () {\n${'%0 = if(%c) ({\n'.repeat(5_000)}`;
    expect(parseError(deepIf).reason).toContain('nested deeper than 200 levels');
  });

  it('graph-level checks: output signature and trailing text', () => {
    expect(parseError(edit(2, 'y=%0', 'z=%0')).reason).toContain("output 0 is 'z' here but 'y' in the signature");
    expect(parseError(edit(0, '(y: f32[N,4])', '(y: f32[N,3])')).reason).toContain("output 'y' is f32[N,4] (%0) but the signature declares f32[N,3]");
    expect(parseError(`${ok.join('\n')}\nextra`).reason).toContain("expected the end of the text after the graph's closing '}', found 'extra'");
    expect(parseError('graph @f() -> () {\n}').reason).toContain("expected a node or 'return', found '}'");
  });
});

describe('IR text form: mutated text', () => {
  it('1,000 random edits of the golden texts either parse to a stable graph or give an IRParseError', () => {
    const texts = ['cnn', 'control-flow'].map((n) => readFileSync(fileURLToPath(new URL(`./ir-text/${n}.ir`, import.meta.url)), 'utf8'));
    let seed = 20240601;
    const rnd = (n: number) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n; };
    const alphabet = '%@(){}[]<>,:=^-"\\/ \n\tabcNi0123456789.e+*_fnonetruelist';
    let parsed = 0, refused = 0;
    for (let k = 0; k < 1000; k++) {
      let t = texts[rnd(2)];
      for (let e = 1 + rnd(3); e > 0; e--) {
        const at = rnd(t.length + 1), c = alphabet[rnd(alphabet.length)];
        const op = rnd(4);
        t = op === 0 ? t.slice(0, at) + t.slice(at + 1 + rnd(5)) : op === 1 ? t.slice(0, at) + c + t.slice(at) : op === 2 ? t.slice(0, at) + c + t.slice(at + 1) : t.slice(0, at);
      }
      let printed: string;
      try {
        printed = printGraph(parseGraph(t));
      } catch (e) {
        if (!(e instanceof IRParseError)) throw new Error(`parseGraph threw ${String(e)} instead of an IRParseError on:\n${t}`);
        refused++;
        continue;
      }
      expect(printGraph(parseGraph(printed))).toBe(printed);
      parsed++;
    }
    expect(parsed).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(500);
  });
});

describe('IR text form: the round-trip hook on GraphBuilder', () => {
  it('calls listeners with every built graph until unregistered', () => {
    const seen: string[] = [];
    const off = onGraphBuilt((g) => seen.push(g.name));
    new GraphBuilder('one').build();
    off();
    new GraphBuilder('two').build();
    expect(seen).toEqual(['one']);
  });

  it('the suite-wide check fails the build of a graph whose text does not parse back', () => {
    const build = () => {
      const b = new GraphBuilder('leaky');
      const x = b.input('x', tensorType('float32', [2]));
      let inner = x;
      const [y] = b.loop(b.scalar(2), null, [x], (_i, [v]) => { inner = b.op1('neg', [v]); return { next: [inner] }; });
      b.output('y', b.op1('add', [y, inner]));   // uses a value defined inside the loop body
      return b.build();
    };
    expect(build).toThrow(/IR round trip: the printed graph @leaky does not parse back[\s\S]*is not visible here/);
    expect(buildUnchecked(build).name).toBe('leaky');
  });
});
