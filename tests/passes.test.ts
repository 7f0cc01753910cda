// Pass tests (STYLE.md §8, §12): for every folder tests/passes/<pass-name>/, each
// `*.input.ir` is run through that pass as the pipeline runs it (`runPass`: the pass, then the
// dead-code sweep) and must print exactly as its `*.expected.ir`, verify,
// and compute the same outputs as the input in the runtime (within 1e-5) on seeded inputs.
// Params and named constants get seeded random tensors (names containing `var` positive; i8
// constants any int8).
//
// The comparison ignores how values are numbered or named (tests/helpers/golden.ts,
// `expectGoldenIR`). To regenerate the expected files after an intended change, run
//   npm run test:update -- tests/passes.test.ts
// and review the diff like code.

import { describe, it, expect } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  decodeTsgraph, encodeTsgraph, MEMORY_PLAN_KEY, parseGraph, printGraph, verifyGraph, walkNodes,
  Block, fusableOps, getOp, Graph, GraphBuilder, inlineGraph, Node, OpError, programToBody, tensorType, Value, valueIds, VerifyError, type TensorData,
} from '@kiln/ir-spec';
import { jit, manualSeed, noGrad, rand, randn, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/seed/models.mjs';
import { createModel, load, type InputValue, type Output } from '@kiln/runtime';
import { countNodes, LEVELS, PASSES, PassError, runPass, runPipeline } from '@kiln/compiler';
import { rng } from './helpers/rng.js';
import { expectGoldenIR } from './helpers/golden.js';

const DIR = fileURLToPath(new URL('./passes/', import.meta.url));


function randomTensor(name: string, shape: readonly number[], next: () => number, dtype = 'float32'): TensorData {
  const n = shape.reduce((a, d) => a * d, 1);
  // int8: quantized weights (quantized_linear), any value −128..127.
  if (dtype === 'int8') return { dtype: 'int8', shape: [...shape], data: Int8Array.from({ length: n }, () => Math.floor(next() * 256) - 128) };
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = name.includes('var') ? 0.5 + next() : name === 'ones' ? 1 : next() * 2 - 1;
  return { dtype: 'float32', shape: [...shape], data };
}

/** Parses `text` with seeded tensors for every param and named constant. */
export function parseWithTensors(text: string, seed = 1): Graph {
  const bare = parseGraph(text);
  const next = rng(seed);
  const tensors = new Map<string, TensorData>();
  for (const i of bare.inputs) {
    if (i.kind === 'param' && i.value.type.kind === 'tensor') tensors.set(i.name, randomTensor(i.name, i.value.type.shape as number[], next));
  }
  for (const n of walkNodes(bare.body)) {
    const t = n.outputs[0]?.type;
    if (n.op === 'constant' && typeof n.attrs.name === 'string' && t?.kind === 'tensor') tensors.set(n.attrs.name, randomTensor(n.attrs.name, t.shape as number[], next, t.dtype));
  }
  return parseGraph(text, { tensors });
}

/** Seeded run-time inputs: symbolic dims are 2, bool scalars true then false per call. */
function sampleInputs(g: Graph, seed = 7, flag = true): InputValue[] {
  const next = rng(seed);
  return g.inputs.filter((i) => i.kind === 'input').map((i): InputValue => {
    const t = i.value.type;
    if (t.kind === 'scalar') return t.dtype === 'bool' ? flag : 3;
    if (t.kind !== 'tensor') throw new Error(`test input ${i.name}: unsupported type`);
    const shape = t.shape.map((d) => (typeof d === 'number' ? d : 2));
    return randomTensor(i.name, shape, next);
  });
}

function expectSameOutputs(got: readonly Output[], want: readonly Output[], what: string): void {
  expect(got.map((o) => o.shape), `${what}: shapes`).toEqual(want.map((o) => o.shape));
  want.forEach((w, k) => {
    for (let i = 0; i < w.data.length; i++) {
      const a = Number(got[k].data[i]), b = Number(w.data[i]);
      if (!(Math.abs(a - b) <= 1e-6 + 1e-5 * Math.abs(b))) {
        expect.fail(`${what}: output '${w.name}' element ${i} is ${a}, expected ${b}`);
      }
    }
  });
}

/** Interprets both graphs on the same inputs (both branches of a bool flag) and compares. */
function expectSameNumbers(before: Graph, after: Graph, what: string): void {
  for (const flag of [true, false]) {
    const inputs = sampleInputs(before, 7, flag);
    expectSameOutputs(createModel(after).runSync(inputs), createModel(before).runSync(inputs), `${what} (flag ${flag})`);
  }
}

const passDirs = readdirSync(DIR).filter((d) => statSync(join(DIR, d)).isDirectory()).sort();

describe('pass golden files', () => {
  it('has a golden folder for every pass, named after it', () => {
    expect(passDirs).toEqual(Object.keys(PASSES).sort());
  });
  for (const pass of passDirs) {
    const cases = readdirSync(join(DIR, pass)).filter((f) => f.endsWith('.input.ir')).sort();
    describe(pass, () => {
      it('has at least one case', () => { expect(cases.length).toBeGreaterThan(0); });
      for (const file of cases) {
        it(file.replace(/\.input\.ir$/, ''), () => {
          const input = parseWithTensors(readFileSync(join(DIR, pass, file), 'utf8'));
          const out = runPass(pass, input);
          verifyGraph(out);
          const text = printGraph(out);
          const expectedPath = join(DIR, pass, file.replace(/\.input\.ir$/, '.expected.ir'));
          expectGoldenIR(expectedPath, `${text}\n`, `${pass} on ${file}`);
          expectSameNumbers(input, out, `${pass}/${file}`);
          // The text round-trips, and running the pass again finds nothing more to do.
          expect(printGraph(parseGraph(text, { tensors: out.tensors }))).toBe(text);
          if (pass !== 'freeze') expect(printGraph(runPass(pass, out))).toBe(text);
        });
      }
    });
  }
});

describe('passes that change nothing return the same graph', () => {
  const text = `graph @idle(%x: f32[N,4]) -> (y: f32[N,4]) {
  %0 = relu(%x) : f32[N,4]
  return y=%0
}`;
  for (const name of Object.keys(PASSES).filter((p) => p !== 'plan-memory')) {
    it(name, () => {
      const g = parseGraph(text);
      expect(PASSES[name](g)).toBe(g);
    });
  }
  it('plan-memory, once planned', () => {
    const g = PASSES['plan-memory'](parseGraph(text));
    expect(PASSES['plan-memory'](g)).toBe(g);
  });
});

describe('control flow survives every pass and level', () => {
  const sources = [
    readFileSync(fileURLToPath(new URL('./ir-text/control-flow.ir', import.meta.url)), 'utf8'),
    ...passDirs.flatMap((p) => readdirSync(join(DIR, p)).filter((f) => f.startsWith('region') && f.endsWith('.input.ir')).map((f) => readFileSync(join(DIR, p, f), 'utf8'))),
  ];
  sources.forEach((src, k) => {
    const g = parseWithTensors(src);
    it(`graph ${k} (${g.name}) through each pass`, () => {
      for (const name of Object.keys(PASSES)) {
        const out = PASSES[name](g);
        verifyGraph(out);
        expectSameNumbers(g, out, `${name} on ${g.name}`);
      }
    });
    it(`graph ${k} (${g.name}) at -O1 and -O2 with verifyEach and checkEach`, () => {
      for (const level of [1, 2] as const) {
        for (const flag of [true, false]) {
          const r = runPipeline(g, { level, verifyEach: true, checkEach: { inputs: sampleInputs(g, 7, flag) } });
          expectSameNumbers(g, r.graph, `-O${level} on ${g.name}`);
        }
      }
    });
  });
});

describe('freeze', () => {
  it('folds training-mode dropout to inference, which then runs', () => {
    const g = parseWithTensors(readFileSync(join(DIR, 'freeze', 'params.input.ir'), 'utf8').replace('p=0, training=true', 'p=0.5, training=true'));
    expect(() => createModel(g).runSync(sampleInputs(g))).toThrow(/training-mode dropout/);
    const frozen = PASSES.freeze(g);
    expect(printGraph(frozen)).toContain('p=0.5, training=false');
    expect(frozen.inputs.map((i) => i.kind)).toEqual(['input']);
    const removed = PASSES['remove-dropout'](frozen);
    expect(printGraph(removed)).not.toContain('dropout');
    expectSameOutputs(createModel(removed).runSync(sampleInputs(g)), createModel(frozen).runSync(sampleInputs(g)), 'frozen');
  });
});

describe('runPipeline', () => {
  const src = readFileSync(join(DIR, 'fuse-epilogue', 'conv-linear.input.ir'), 'utf8');
  it('-O0 runs nothing; -O1 and -O2 run their lists, with timings', () => {
    const g = parseWithTensors(src);
    expect(runPipeline(g, { level: 0 }).graph).toBe(g);
    for (const level of [1, 2] as const) {
      const r = runPipeline(g, { level });
      expect(r.timings.map((t) => t.pass)).toEqual(LEVELS[level]);
      expect(r.timings.every((t) => t.ms >= 0)).toBe(true);
    }
    expect(countNodes(runPipeline(g, { level: 2 }).graph)).toBeLessThan(countNodes(g));
  });
  it('-O1 canonicalizes matmul with a constant weight to linear; -O2 still fuses its bias and activation', () => {
    const g = parseWithTensors(src);
    const ops = (h: Graph) => [...walkNodes(h.body)].filter((n) => n.op !== 'constant').map((n) => n.op);
    expect(ops(runPipeline(g, { level: 1 }).graph)).toEqual(['conv2d', 'relu', 'max_pool2d', 'linear', 'tanh', 'linear', 'add', 'sigmoid']);
    const o2 = runPipeline(g, { level: 2 }).graph;
    const computing = [...walkNodes(o2.body)].filter((n) => n.op !== 'constant');
    expect(computing.map((n) => `${n.op} ${n.attrs.activation} ${n.inputs.length}`)).toEqual(['fused_conv2d relu 3', 'fused_linear tanh 3', 'fused_linear sigmoid 3']);
    // As when fuse-epilogue turned the matmul into fused_linear itself: the bias is mm.bias as is.
    expect(printGraph(o2)).toMatch(/constant\(\) \{name="mm\.bias"\}[^\n]*\n[^\n]*fused_linear\(%v, %\d+, %\d+\) \{activation="sigmoid"\}/);
    expectSameNumbers(g, o2, '-O2 on conv-linear');
  });
  it('sweeps dead code after each pass itself; the passes leave it (none runs its own sweep)', () => {
    const g = parseWithTensors(src);
    const alone = PASSES['fuse-epilogue'](g), run = runPass('fuse-epilogue', g);
    expect(countNodes(alone)).toBeGreaterThan(countNodes(run));
    expect(printGraph(run)).toBe(printGraph(PASSES['eliminate-dead-code'](alone)));
    const own = readdirSync(fileURLToPath(new URL('../compiler/src/passes/', import.meta.url)))
      .filter((f) => !['eliminate-dead-code.ts', 'index.ts'].includes(f))
      .filter((f) => readFileSync(fileURLToPath(new URL(`../compiler/src/passes/${f}`, import.meta.url)), 'utf8').includes('eliminateDeadCode'));
    expect(own).toEqual([]);
  });
  it('printAfter returns and prints the IR after the named passes', () => {
    const seen: string[] = [];
    const r = runPipeline(parseWithTensors(src), { passes: ['fuse-epilogue', 'eliminate-dead-code'], printAfter: ['fuse-epilogue'], print: (t) => seen.push(t) });
    expect(r.printed.map((p) => p.pass)).toEqual(['fuse-epilogue']);
    expect(r.printed[0].text).toContain('fused_conv2d');
    expect(seen[0]).toContain('IR after fuse-epilogue');
  });
  it('checkEach names the first pass whose output diverges', () => {
    const broken = (g: Graph): Graph => {
      // A deliberately wrong pass: drops the relu of the first fused conv (keeps types valid).
      // Run as the pipeline runs it (swept), so that conv is the live one.
      const out = runPass('fuse-epilogue', g);
      const text = printGraph(out).replace('activation="relu"', 'activation="none"');
      return parseGraph(text, { tensors: out.tensors });
    };
    const passes = PASSES as Record<string, (g: Graph) => Graph>;
    passes['broken-for-test'] = broken;
    try {
      const g = parseWithTensors(src);
      expect(() => runPipeline(g, { passes: ['canonicalize', 'broken-for-test'], checkEach: { inputs: sampleInputs(g) } }))
        .toThrow(/pass 'broken-for-test' is the first whose output diverges/);
    } finally {
      delete passes['broken-for-test'];
    }
  });
  it('verifyEach names the pass whose graph does not verify', () => {
    const passes = PASSES as Record<string, (g: Graph) => Graph>;
    // A deliberately broken pass: the output names a value nothing defines.
    passes['unverifiable-for-test'] = (g) => new Graph(g.name, g.inputs, g.body, [{ name: 'y', value: new Value(g.outputs[0].value.type) }], g.tensors);
    try {
      expect(() => runPipeline(parseWithTensors(src), { passes: ['unverifiable-for-test'], verifyEach: true })).toThrow(PassError);
    } finally {
      delete passes['unverifiable-for-test'];
    }
  });
  it('refuses an unknown pass, listing the known ones', () => {
    expect(() => runPipeline(parseWithTensors(src), { passes: ['fold-everything'] })).toThrow(/unknown pass 'fold-everything'; the passes are freeze/);
  });
});

describe('memory plan', () => {
  it('is stored in the .tsgraph header, read back, and lowers the peak the runtime reports', () => {
    const g = parseWithTensors(readFileSync(join(DIR, 'plan-memory', 'chain.input.ir'), 'utf8'));
    const planned = PASSES['plan-memory'](g);
    const bytes = encodeTsgraph(planned);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(24, 24 + Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(16, true)))));
    expect(header.plan).toEqual(JSON.parse(planned.metadata[MEMORY_PLAN_KEY]));
    expect(header.metadata[MEMORY_PLAN_KEY]).toBeUndefined();
    const decoded = decodeTsgraph(bytes).graph;
    expect(decoded.metadata[MEMORY_PLAN_KEY]).toBe(planned.metadata[MEMORY_PLAN_KEY]);
    const inputs = sampleInputs(g);
    const plain = createModel(g), withPlan = createModel(decoded);
    expectSameOutputs(withPlan.runSync(inputs), plain.runSync(inputs), 'planned');
    // exp → relu runs in place, so the planned peak is below the unplanned one.
    expect(withPlan.stats!.peakIntermediateBytes).toBeLessThan(plain.stats!.peakIntermediateBytes);
  });
  it('writes in place only over an input of the same dims and element width, never a broadcast one', () => {
    const g = parseWithTensors(`graph @b(%x: f32[N,4], %w: f32[1,4]) -> (y: f32[N,4], z: f32[N,4]) {
  %0 = exp(%w) : f32[1,4]
  %1 = add(%x, %0) : f32[N,4]
  %2 = exp(%1) : f32[N,4]
  %3 = neg(%2) : f32[N,4]
  return y=%3, z=%1
}`);
    const planned = PASSES['plan-memory'](g);
    const plan = JSON.parse(planned.metadata[MEMORY_PLAN_KEY]) as { in_place: number[] };
    const ids = valueIds(planned);
    const [v0, v1, v2, v3] = planned.body.nodes.map((n) => ids.get(n.outputs[0])!);
    // %1 over the broadcast %0: refused (it has the same element count when N = 1, which the old
    // size check mistook for a match); %2 reads %1, an output, alive to the end; %3 over %2: fine.
    expect(plan.in_place).not.toContain(v1);
    expect(plan.in_place).not.toContain(v2);
    expect(plan.in_place).toContain(v3);
    expect(v0).toBeLessThan(v1);
    expectPlanSound(planned);
  });
  it('never lets two values that are alive together share a slot (an independent liveness check)', () => {
    for (const [dir, file] of [['fuse-elementwise', 'chain'], ['plan-memory', 'chain'], ['fuse-epilogue', 'conv-linear'], ['eliminate-dead-code', 'unused']]) {
      const src = readFileSync(join(DIR, dir, `${file}.input.ir`), 'utf8');
      const g = PASSES['plan-memory'](PASSES['eliminate-dead-code'](parseWithTensors(src)));
      expectPlanSound(g);
      expectSameNumbers(parseWithTensors(src), g, `planned ${dir}/${file}`);
    }
  });
});

/** Checks g's memory plan against liveness computed here: values sharing a slot never overlap,
 * except a result written in place over an input that dies at its node, or a view and its source. */
function expectPlanSound(g: Graph): void {
  const plan = JSON.parse(g.metadata[MEMORY_PLAN_KEY]) as { version: number; slots: Record<string, number>; in_place: number[] };
  expect(plan.version).toBe(2);
  // Version 2 names values by SSA id (valueIds, the file's numbering).
  const ids = valueIds(g);
  const names = new Map([...ids].map(([v, id]) => [v, String(id)]));
  const inPlace = new Set(plan.in_place.map(String));
  const defAt = new Map<Value, number>(), lastAt = new Map<Value, number>(), viewOf = new Map<Value, Value>();
  g.body.nodes.forEach((n, i) => {
    n.outputs.forEach((o) => defAt.set(o, i));
    if (n.op === 'reshape' || n.op === 'dropout') viewOf.set(n.outputs[0], n.inputs[0]!);
    const touch = (b: Block) => { for (const m of b.nodes) { m.inputs.forEach((v) => v && lastAt.set(v, i)); m.regions.forEach(touch); } b.yields.forEach((v) => lastAt.set(v, i)); };
    n.inputs.forEach((v) => v && lastAt.set(v, i));
    n.regions.forEach(touch);
  });
  g.outputs.forEach((o) => lastAt.set(o.value, Infinity));
  const planned = [...defAt.keys()].filter((v) => plan.slots[names.get(v)!] !== undefined);
  const root = (v: Value): Value => (viewOf.has(v) ? root(viewOf.get(v)!) : v);
  const end = (v: Value) => Math.max(lastAt.get(v) ?? defAt.get(v)!, ...planned.filter((w) => root(w) === v && w !== v).map((w) => lastAt.get(w) ?? defAt.get(w)!));
  for (const a of planned) {
    for (const b of planned) {
      if (a === b || root(a) === root(b) || plan.slots[names.get(a)!] !== plan.slots[names.get(b)!]) continue;
      const [first, second] = defAt.get(a)! < defAt.get(b)! ? [root(a), root(b)] : [root(b), root(a)];
      const reusedAfterDeath = end(first) < defAt.get(second)!;
      const writtenInPlace = end(first) === defAt.get(second) && inPlace.has(names.get(second)!);
      expect(reusedAfterDeath || writtenInPlace, `values ${names.get(a)} and ${names.get(b)} share slot ${plan.slots[names.get(a)!]} while both alive`).toBe(true);
    }
  }
}

describe('optimizeForInference on the seed ResearchModel', () => {
  it('leaves no batch_norm or dropout, matches eager, saves and runs in the runtime alone', async () => {
    manualSeed(3);
    const model = new ResearchModel();
    model.eval();
    // Non-trivial BN statistics, as after training.
    for (const [name, p] of Object.entries(model.stateDict())) {
      if (name.endsWith('running_var')) p.copy_(rand(p.shape).add(0.5));
      if (name.endsWith('running_mean')) p.copy_(randn(p.shape).mul(0.1));
    }
    const x = randn([3, 3, 32, 32]);
    const traced = jit.trace(model, [x], { dynamicAxes: { 0: { 0: 'N' } } });
    const fast = jit.optimizeForInference(traced, { verifyEach: true, checkEach: { inputs: [x] } });
    const ops = [...walkNodes(fast.graph.body)].map((n) => n.op);
    expect(ops).not.toContain('batch_norm');
    expect(ops).not.toContain('dropout');
    expect(ops).toContain('fused_conv2d');
    expect(fast.graph.inputs.every((i) => i.kind === 'input')).toBe(true);
    for (const batch of [1, 5]) {
      const xb = randn([batch, 3, 32, 32]);
      const want = noGrad(() => model.forward(xb));
      expectSameOutputs([toOutput(fast.forward(xb))], [toOutput(want)], `optimized vs eager at batch ${batch}`);
    }
    const loaded = await load(fast.toBytes());
    const [y] = await loaded.run([x]);
    expectSameOutputs([y], [toOutput(noGrad(() => model.forward(x)))], 'loaded .tsgraph vs eager');
    expect(loaded.graph.metadata[MEMORY_PLAN_KEY]).toBeDefined();
    const frozen = jit.freeze(traced);
    expect(frozen.graph.inputs.every((i) => i.kind === 'input')).toBe(true);
    expectSameOutputs([toOutput(frozen.forward(x))], [toOutput(noGrad(() => model.forward(x)))], 'frozen vs eager');
  });
});

function toOutput(t: Tensor): Output {
  return { name: 'output', data: t.data as Float32Array, shape: [...t.shape], dtype: 'float32' };
}

describe('fused kernels compute what the ops they replace compute', () => {
  const next = rng(11);
  const t = (shape: number[], positive = false): TensorData => {
    const n = shape.reduce((a, d) => a * d, 1);
    return { dtype: 'float32', shape, data: Float32Array.from({ length: n }, () => (positive ? 0.1 + next() : next() * 4 - 2)) };
  };
  const close = (got: ArrayLike<number>, want: ArrayLike<number>, what: string) => {
    expect(got.length, what).toBe(want.length);
    for (let i = 0; i < want.length; i++) {
      if (!(Math.abs(got[i] - want[i]) <= 1e-6 + 1e-5 * Math.abs(want[i])) && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) expect.fail(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
    }
  };
  const fusable = fusableOps();
  expect(fusable).toEqual(expect.arrayContaining(['erf', 'sigmoid', 'tanh', 'relu', 'add', 'pow', 'maximum']));
  for (const op of fusable.filter((o) => getOp(o).inputs.length === 1)) {
    it(`fused_elementwise ${op}`, () => {
      const x = t([2, 3], ['log', 'sqrt', 'rsqrt'].includes(op));
      close(getOp('fused_elementwise').cpu([x], {}, { regions: [programToBody([[op, 'x0']], 1)] })[0].data, getOp(op).cpu([x], {})[0].data, op);
    });
  }
  for (const op of fusable.filter((o) => getOp(o).inputs.length === 2)) {
    it(`fused_elementwise ${op} with broadcasting`, () => {
      const a = t([2, 1, 3], op === 'pow'), b = t([4, 1]);
      close(getOp('fused_elementwise').cpu([a, b], {}, { regions: [programToBody([[op, 'x0', 'x1']], 2)] })[0].data, getOp(op).cpu([a, b], {})[0].data, op);
    });
  }
  it('fused_conv2d with activation and pool over several channel blocks and odd sizes', () => {
    // Several images per tile; one image in channel blocks (130² planes); odd sizes; no pool.
    for (const [C, H, Cout, act, pool] of [[3, 32, 80, 'relu', [2, 2]], [1, 130, 20, 'relu', [2, 2]], [2, 9, 5, 'tanh', [3, 2]], [4, 7, 6, 'sigmoid', null]] as const) {
      const x = t([2, C, H, H]), w = t([Cout, C, 3, 3]), b = t([Cout]);
      const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
      let want = getOp('conv2d').cpu([x, w, b], conv)[0];
      want = getOp(act).cpu([want], {})[0];
      if (pool) want = getOp('max_pool2d').cpu([want], { kernel_size: [pool[0], pool[0]], stride: [pool[1], pool[1]], padding: [0, 0], dilation: [1, 1], ceil_mode: false })[0];
      const attrs = { ...conv, activation: act, pool: pool ? { kernel_size: [pool[0], pool[0]], stride: [pool[1], pool[1]] } : null };
      const got = getOp('fused_conv2d').cpu([x, w, b], attrs)[0];
      expect(got.shape).toEqual(want.shape);
      close(got.data, want.data, `fused_conv2d ${act} pool ${String(pool)}`);
    }
  });
  it('fused_linear applies its activation', () => {
    const x = t([3, 5]), w = t([4, 5]), b = t([4]);
    for (const act of ['none', 'relu', 'sigmoid', 'tanh']) {
      const lin = getOp('linear').cpu([x, w, b], {})[0];
      const want = act === 'none' ? lin : getOp(act).cpu([lin], {})[0];
      close(getOp('fused_linear').cpu([x, w, b], { activation: act })[0].data, want.data, `fused_linear ${act}`);
    }
  });
  it('a legacy program attribute that is malformed is refused, naming the instruction', () => {
    expect(() => programToBody([['erfc', 'x0']], 1)).toThrow(/instruction 0 .*not a fusable elementwise op/);
    expect(() => programToBody([['add', 'x0', 't3']], 1)).toThrow(/t3 refers to a later instruction/);
    expect(() => programToBody([['neg', 'x1']], 1)).toThrow(/x1 refers to input 1 of 1/);
    expect(() => programToBody([['neg', 'x0', 'x0']], 1)).toThrow(/'neg' takes 1 argument/);
    expect(() => programToBody([], 1)).toThrow(/non-empty list/);
  });
  it('inlining a graph copies a fused_elementwise with its element body', () => {
    const sub = new GraphBuilder('sub');
    const sx = sub.input('x', tensorType('float32', ['N', 3]));
    sub.output('y', sub.fusedElementwise([sx], ([e]) => sub.op1('tanh', [sub.op1('mul', [e, sub.literal(1.5)])])));
    const g = sub.build();
    const b = new GraphBuilder('outer');
    const x = b.input('x', tensorType('float32', ['N', 3]));
    const [y] = inlineGraph(b, g, { inputs: [b.op1('neg', [x])], param: () => { throw new Error('no params'); }, constant: () => { throw new Error('no constants'); } });
    b.output('y', y);
    const outer = b.build();
    verifyGraph(outer);
    expect(outer.body.nodes.map((n) => n.op)).toEqual(['neg', 'fused_elementwise']);
    expect(outer.body.nodes[1].regions[0].nodes.map((n) => n.op)).toEqual(['constant', 'mul', 'tanh']);
    const xs = { dtype: 'float32' as const, shape: [2, 3], data: Float32Array.from([0.1, -0.5, 1, 2, -3, 0]) };
    const got = createModel(outer).runSync([xs])[0].data;
    xs.data.forEach((v, i) => expect(got[i]).toBeCloseTo(Math.tanh(-v * 1.5), 6));
  });
  it('fused_elementwise checks its element body, naming the body node', () => {
    const x = t([2]);
    const e = () => new Value(tensorType('float32', []));
    const body = (args: Value[], nodes: Node[], y: Value) => new Block(args, nodes, [y]);
    const infer = (b: Block, n = 1) => getOp('fused_elementwise').infer(Array.from({ length: n }, () => x), {}, [b]);
    // A body node that is not a fusable elementwise op (erfc is not registered; clamp has attributes).
    let a = e(), o = e();
    expect(() => infer(body([a], [new Node('clamp', [a], { min: 0, max: 1 }, [o])], o))).toThrow(/body node 0 \(clamp\): 'clamp' is not a fusable elementwise op/);
    // A body node reading a value from outside the body.
    a = e(); o = e();
    const outer = e();
    expect(() => infer(body([a], [new Node('add', [a, outer], {}, [o])], o))).toThrow(/body node 0 \(add\): input 1 is not a body argument/);
    // Argument count and types, and the single yield.
    a = e();
    expect(() => infer(body([a], [], a), 2)).toThrow(/its body takes 1 argument\(s\) but the node has 2 input\(s\)/);
    const wide = new Value(tensorType('float32', [2]));
    expect(() => infer(body([wide], [], wide))).toThrow(/body argument 0 is f32\[2\]/);
    a = e();
    expect(() => infer(new Block([a], [], [a, a]))).toThrow(/yield one value/);
    // A non-float literal.
    a = e(); o = e();
    const c = new Value(tensorType('int32', []));
    expect(() => infer(body([a], [new Node('constant', [], { value: 2, dtype: 'int32' }, [c]), new Node('add', [a, c], {}, [o])], o))).toThrow(/body constant must be a float32 literal/);
    // The verifier types each body node with its own entry and reports the region.
    const gb = new GraphBuilder('g');
    const xv = gb.input('x', tensorType('float32', [2]));
    gb.output('y', gb.fusedElementwise([xv], ([v]) => gb.op1('relu', [v])));
    const g = gb.build();
    verifyGraph(g);
    const node = g.body.nodes[0], arg = node.regions[0].args[0], bad = new Value(tensorType('float32', [3]));
    const broken = new Graph('g', g.inputs, new Block([], [new Node(node.op, node.inputs, {}, node.outputs, [new Block([arg], [new Node('relu', [arg], {}, [bad])], [bad])])]), g.outputs);
    expect(() => verifyGraph(broken)).toThrow(VerifyError);
    expect(() => verifyGraph(broken)).toThrow(/result 0 is typed f32\[3\] but relu gives f32\[\][\s\S]*region 0 \(body\) of %0 = fused_elementwise/);
    expect(OpError).toBeDefined();
  });
});
