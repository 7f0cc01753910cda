// What jit.trace records and what it reports: eval-mode dropout kept as an op, parameters as
// named inputs with state-dict names, module scopes on nodes and in the printed graph, the
// `.code` listing, and — the tracer's honesty — warnings with this file's file:line:col when a
// value or a dynamic size reaches JavaScript, TraceError in strict mode, and checkTrace failing
// with TraceCheckError (first differing output, largest absolute difference) when the trace is
// wrong for other inputs.

import { describe, it, expect, vi, beforeEach, afterEach } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { arange, jit, manualSeed, nn, randn, zeros, type Tensor } from 'kiln';
import { printGraph, walkNodes } from '@kiln/ir-spec';
import { ResearchModel } from '../examples/seed/models.mjs';
import { digitsModel } from '../examples/digits/train.mjs';

const THIS_FILE = fileURLToPath(import.meta.url);
const SOURCE = readFileSync(THIS_FILE, 'utf8').split('\n');

/** `file:line:col` of `needle` on the (unique) line of this file that ends in `// marker`. */
function locationOf(marker: string, needle: string): string {
  const lines = SOURCE.flatMap((l, i) => (l.trimEnd().endsWith(`// ${marker}`) ? [i] : []));
  expect(lines, `exactly one line of this file ends in the comment ${marker}`).toHaveLength(1);
  return `${THIS_FILE}:${lines[0] + 1}:${SOURCE[lines[0]].indexOf(needle) + 1}`;
}

/** Takes the positive branch when the mean of its linear layer's output is positive. */
class Branchy extends nn.Module {
  lin = new nn.Linear(4, 4);
  forward(x: Tensor): Tensor {
    const y = this.lin.forward(x);
    if (y.mean().item() > 0) return y.relu(); // BRANCH-ON-ITEM
    return y.neg();
  }
}

/** Uses the batch size read from the shape as a number and as a shape: both follow N. */
class ScaleByBatch extends nn.Module {
  forward(x: Tensor): Tensor {
    return x.mul(x.shape[0]).add(zeros([x.shape[0], 4]).add(1)).sub(x.mean());
  }
}

/** Divides by the batch size through its reciprocal: not a multiple of N, so baked in. */
class InverseBatch extends nn.Module {
  forward(x: Tensor): Tensor {
    return x.mul(1 / x.shape[0]); // INVERSE-BATCH
  }
}

/** Adds the row index as a tensor made in forward: batch-shaped data, baked in as a constant. */
class RowIndex extends nn.Module {
  forward(x: Tensor): Tensor {
    return x.add(arange(x.shape[0], undefined, 1, { dtype: 'float32' }).reshape([-1, 1])); // ROW-INDEX
  }
}

/** Branches on a tensor's sum compared in JavaScript (Symbol.toPrimitive). */
class CompareInJs extends nn.Module {
  forward(x: Tensor): Tensor {
    return Number(x.sum()) > 0 ? x.add(1) : x.sub(1); // COMPARE-IN-JS
  }
}

beforeEach(() => manualSeed(0));

describe('jit.trace: what the graph records', () => {
  const research = () => {
    const m = new ResearchModel();
    m.eval();
    return jit.trace(m, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } }, checkTrace: false });
  };

  it('keeps eval-mode dropout as `dropout {training=false}` in its module scope', () => {
    const g = research().graph;
    const drops = [...walkNodes(g.body)].filter((n) => n.op === 'dropout');
    expect(drops).toHaveLength(1);
    expect(drops[0].attrs).toEqual({ p: 0.5, training: false });
    expect(drops[0].meta.scope).toBe('classifier.0');
    expect(printGraph(g)).toMatch(/= dropout\(%\w+\) \{p=0\.5, training=false\} : f32\[N,8192\]\s+\/\/ classifier\.0/);
  });

  it('makes parameters and buffers named graph inputs with PyTorch state-dict names and shapes', () => {
    const m = digitsModel();
    m.eval();
    const g = jit.trace(m, [randn([2, 1, 8, 8])], { warn: false }).graph;
    const params = g.inputs.filter((i) => i.kind === 'param');
    const sd = m.stateDict();
    const names = params.map((p) => p.name);
    expect([...names].sort()).toEqual(Object.keys(sd).filter((k) => !k.endsWith('num_batches_tracked')).sort());
    for (const p of params) expect(p.value.type).toMatchObject({ shape: sd[p.name].shape });
    expect(g.inputs[0]).toMatchObject({ kind: 'input', name: 'input' });
    expect(printGraph(g)).toContain('param %0.weight: f32[16,1,3,3]');
    expect(printGraph(g)).toContain('param %1.running_mean: f32[16]');
  });

  it('puts each node in its module scope (`features.0`), shown in the printed graph', () => {
    const g = research().graph;
    const nodes = [...walkNodes(g.body)];
    const scopes = nodes.map((n) => `${n.op}:${n.meta.scope}`);
    expect(scopes.slice(0, 4)).toEqual(['conv2d:features.0', 'batch_norm:features.1', 'relu:features.2', 'max_pool2d:features.3']);
    expect(scopes).toContain('linear:classifier.3');
    // flatten(1) runs in ResearchModel.forward itself: no scope.
    expect(nodes.find((n) => n.op === 'reshape')?.meta.scope).toBeUndefined();
    expect(printGraph(g)).toMatch(/= conv2d\(%x, %features\.0\.weight, %features\.0\.bias\) .* \/\/ features\.0 @ /);
  });

  it('TracedModule.code: a function signature, one line per node with its scope comment, a return', () => {
    const traced = research();
    const lines = traced.code.split('\n');
    const nodes = [...walkNodes(traced.graph.body)];
    expect(lines[0]).toBe('function forward(x: f32[N,3,32,32]) {');
    expect(lines).toHaveLength(nodes.length + 3);
    expect(lines[1]).toBe('  const v0 = conv2d(x, this["features.0.weight"], this["features.0.bias"], {dilation=[1,1], groups=1, padding=[1,1,1,1], stride=[1,1]});  // features.0');
    lines.slice(1, -2).forEach((l, k) => {
      // One output (`const v3 = …`) or several (`const [v3, v4] = max_pool2d(…)`).
      expect(l).toMatch(new RegExp(`^  const (v\\d+|\\[v\\d+(, v\\d+)*\\]) = ${nodes[k].op}\\(`));
      if (nodes[k].meta.scope) expect(l.endsWith(`  // ${nodes[k].meta.scope}`)).toBe(true);
    });
    expect(lines.at(-2)).toMatch(/^ {2}return \{ "output": v\d+ \};$/);
    expect(lines.at(-1)).toBe('}');
  });
});

describe('jit.trace: values that reach JavaScript', () => {
  let warn: ReturnType<typeof vi.spyOn>;
  beforeEach(() => { warn = vi.spyOn(console, 'warn').mockImplementation(() => {}); });
  afterEach(() => warn.mockRestore());

  it('warns with this file\'s file:line:col when item() decides a branch, and suggests jit.script', () => {
    const m = new Branchy();
    const x = randn([3, 4]);
    const traced = jit.trace(m, [x]);
    const loc = locationOf('BRANCH-ON-ITEM', 'item()');
    const reads = traced.warnings.filter((w) => w.kind === 'value-read');
    expect(reads).toHaveLength(1);
    expect(reads[0].loc).toBe(loc);
    expect(reads[0].message).toContain(`item() read a traced tensor's value (shape []) into JavaScript at ${loc}`);
    expect(reads[0].message).toContain('jit.script');
    // Printed by default, and the graph holds only the branch the example took.
    expect(warn).toHaveBeenCalledWith(expect.stringContaining(`TraceWarning: item() read a traced tensor's value`));
    const taken = (m.lin.forward(x).mean().item() > 0) ? 'relu' : 'neg';
    // mean() is sum / count (the count a constant); its value only fed the JavaScript branch.
    expect([...walkNodes(traced.graph.body)].map((n) => n.op).filter((op) => op !== 'constant')).toEqual(['linear', 'sum', 'div', taken]);
  });

  it('strict: the same read is a TraceError carrying the location', () => {
    let err: unknown;
    try {
      jit.trace(new Branchy(), [randn([3, 4])], { strict: true });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(jit.TraceError);
    const loc = locationOf('BRANCH-ON-ITEM', 'item()');
    expect(err).toMatchObject({ name: 'TraceError', loc });
    expect((err as Error).message).toContain(`at ${loc}`);
    expect((err as Error).message).toContain('jit.script');
  });

  it('checkTrace: inputs that take the other branch fail with TraceCheckError naming the output and the largest difference', () => {
    const m = new Branchy();
    // Find one input per branch.
    const inputs = Array.from({ length: 20 }, () => randn([3, 4]));
    const sign = (x: Tensor) => m.lin.forward(x).mean().item() > 0;
    const pos = inputs.find(sign)!, neg = inputs.find((x) => !sign(x))!;
    expect(pos, 'an input taking the positive branch').toBeDefined();
    expect(neg, 'an input taking the negative branch').toBeDefined();
    let err: unknown;
    try {
      jit.trace(m, [pos], { checkInputs: [[pos], [neg]] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(jit.TraceCheckError);
    const e = err as jit.TraceCheckError;
    // relu(y) in the graph vs -y eagerly: the largest difference is the largest |relu(y) + y|.
    const y = m.lin.forward(neg).toArray();
    const expected = Math.max(...y.map((v) => Math.abs(Math.max(v, 0) + v)));
    expect(e.output).toBe('output');
    expect(e.maxAbsDiff).toBeCloseTo(expected, 5);
    expect(e.message).toMatch(/^checkTrace: on checkInputs\[1\], output 'output' differs from eager: largest absolute difference /);
    expect(e.message).toContain(locationOf('BRANCH-ON-ITEM', 'item()'));
  });

  it('a comparison of a tensor in JavaScript (Number(t) > 0) warns the same way', () => {
    const traced = jit.trace(new CompareInJs(), [randn([2, 4])], { warn: false });
    const loc = locationOf('COMPARE-IN-JS', 'Number(');
    expect(traced.warnings.map((w) => [w.kind, w.loc])).toEqual([['value-read', loc]]);
    expect(traced.warnings[0].message).toContain('a comparison or arithmetic on a tensor in JavaScript');
  });
});

describe('jit.trace: dynamic sizes baked in', () => {
  beforeEach(() => { vi.spyOn(console, 'warn').mockImplementation(() => {}); });
  afterEach(() => vi.restoreAllMocks());

  it('x.shape[0] as a number (x.mul(N)), in a shape (zeros([N, 4])) and in mean()\'s count: computed from N, right at every size', () => {
    const m = new ScaleByBatch();
    const traced = jit.trace(m, [randn([2, 4])], { dynamicAxes: { 0: { 0: 'N' } }, checkInputs: [[randn([1, 4])], [randn([7, 4])], [randn([32, 4])]], warn: false });
    expect(traced.warnings).toEqual([]);
    // Each size is the element count of ones expanded to [N] (mean's count N·4 times 4), not a number.
    const text = printGraph(traced.graph);
    expect(text).toMatch(/= expand\(%\d+\) \{shape=\["N"\]\} : f32\[N\]/);
    expect(text).toMatch(/= expand\(%\d+\) \{shape=\["N",4\]\} : f32\[N,4\]/);
    const x = randn([5, 4]);
    const want = x.mul(5).add(1).sub(x.mean()).toArray();
    const got = (traced.forward(x) as Tensor).toArray();
    got.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThanOrEqual(1e-5 * Math.abs(want[i]) + 1e-6));
  });

  it('two dynamic axes N and T: mean()\'s count N·T·4 and x.shape[0] * x.shape[1] are computed from both', () => {
    class TwoAxes extends nn.Module {
      forward(x: Tensor): Tensor { return x.sub(x.mean()).mul(x.shape[0] * x.shape[1]); }
    }
    const m = new TwoAxes();
    const sets = [[1, 1], [3, 5], [7, 2]].map(([n, t]) => [randn([n, t, 4])]);
    const traced = jit.trace(m, [randn([2, 3, 4])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, checkInputs: sets, warn: false });
    expect(traced.warnings).toEqual([]);
    expect(traced.graph.inputs[0].value.type).toMatchObject({ shape: ['N', 'T', 4] });
    expect(printGraph(traced.graph)).toMatch(/= expand\(%\d+\) \{shape=\["N\*T"\]\} : f32\[N\*T\]/);
    const x = randn([4, 6, 4]);
    const want = x.sub(x.mean()).mul(24).toArray();
    const got = (traced.forward(x) as Tensor).toArray();
    got.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThanOrEqual(1e-5 * Math.abs(want[i]) + 1e-6));
  });

  it('x.mul(1 / x.shape[0]) with dynamic N: a baked-literal warning, then TraceCheckError on another batch size', () => {
    const loc = locationOf('INVERSE-BATCH', 'mul');
    const traced = jit.trace(new InverseBatch(), [randn([2, 4])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    expect(traced.warnings.map((w) => [w.kind, w.loc])).toEqual([['baked-literal', loc]]);
    expect(traced.warnings[0].message).toContain(`the number 0.5 used by mul at ${loc} was computed from a dynamic size`);
    expect(traced.warnings[0].message).toContain('jit.script');

    const x7 = randn([7, 4]);
    let err: unknown;
    try {
      jit.trace(new InverseBatch(), [randn([2, 4])], { dynamicAxes: { 0: { 0: 'N' } }, checkInputs: [[x7]], warn: false });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(jit.TraceCheckError);
    const e = err as jit.TraceCheckError;
    // The graph computes x/2, eager x/7.
    const diffs = x7.toArray().map((v) => Math.abs(Math.fround(v * 0.5) - Math.fround(v * Math.fround(1 / 7))));
    const expected = Math.max(...diffs);
    expect(e.output).toBe('output');
    expect(e.maxAbsDiff).toBeCloseTo(expected, 6);
    expect(e.message).toContain(`checkTrace: on checkInputs[0], output 'output' differs from eager: largest absolute difference ${expected.toExponential(3)}`);
    expect(e.message).toContain(`The trace warned: the number 0.5 used by mul at ${loc}`);
  });

  it('arange(x.shape[0]) in forward with dynamic N: a constant warning, and a TraceError naming the op it breaks', () => {
    const loc = locationOf('ROW-INDEX', 'add');
    let err: unknown;
    try {
      jit.trace(new RowIndex(), [randn([2, 4])], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(jit.TraceError);
    const msg = (err as Error).message;
    expect(msg).toContain(`jit.trace: the traced graph cannot be built: add at ${loc}: add: shapes [N,4] and [2,1] cannot be broadcast`);
    expect(msg).toMatch(/a tensor of shape \[2\] created inside forward at \S+trace-diagnostics\.test\.ts:\d+:\d+ depends on a dynamic size and is baked in as a constant/);
    // Without dynamic axes the same model traces fine (and checks fine at its one size).
    const fixed = jit.trace(new RowIndex(), [randn([2, 4])], { warn: false });
    expect(fixed.warnings).toEqual([]);
  });

  it('a trace with fixed shapes checked on another batch size: TraceCheckError that says to declare dynamicAxes', () => {
    const m = digitsModel();
    m.eval();
    expect(() => jit.trace(m, [randn([2, 1, 8, 8])], { checkInputs: [[randn([7, 1, 8, 8])]] }))
      .toThrowError(/checkTrace: on checkInputs\[0\], the traced graph fails: .*expected f32\[2,1,8,8\], got f32\[7,1,8,8\].*declare the dims that vary with dynamicAxes/);
  });
});

describe('jit.trace: shape-dependent control flow', () => {
  it('a loop over a dynamic sequence length written in forward: the ops change with T, so the trace warns, fixes T and suggests jit.script', async () => {
    const { DecayOverSteps } = await import('./script-models/sequence.js');
    const m = new DecayOverSteps();
    m.eval();
    const traced = jit.trace(m, [randn([2, 5, 6])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, warn: false, checkInputs: [[randn([7, 5, 6])]] });
    const flow = traced.warnings.filter((w) => w.kind === 'control-flow');
    expect(flow).toHaveLength(1);
    expect(flow[0].message).toMatch(/the traced ops change with the size of 'T' .* so the trace only holds for T=5\. Use jit\.script for this module/);
    // T keeps its example size in the graph; N stays dynamic (checked above at N = 7).
    expect(traced.graph.inputs[0].value.type).toMatchObject({ shape: ['N', 5, 6] });
    // The graph records the training flag it was traced with.
    expect(traced.graph.metadata).toEqual({ training: 'false' });
    expect(() => jit.trace(m, [randn([2, 5, 6])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, strict: true }))
      .toThrowError(jit.TraceError);
  });

  it('an LSTM with a dynamic sequence length is no such case: it is recorded as a loop over T (tests/dynamic-axes.test.ts), without a warning', async () => {
    const { LstmModel } = await import('./models/trace-models.js');
    const m = new LstmModel();
    m.eval();
    const traced = jit.trace(m, [randn([2, 5, 6])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } }, strict: true, checkInputs: [[randn([7, 3, 6])]] });
    expect(traced.warnings).toEqual([]);
    expect(traced.graph.inputs[0].value.type).toMatchObject({ shape: ['N', 'T', 6] });
  });
});
