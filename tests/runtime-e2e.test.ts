// The "done when": a small CNN and a loop graph, built by hand with parameters taken
// from eager kiln modules, are saved as `.tsgraph` files, loaded by the runtime alone from a
// path and run; the outputs equal the eager forward within 1e-5 at batch sizes 1, 3 and 8.
// The eager library is imported by this test only — the runtime never sees it.

import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  GraphBuilder, TsgraphError, dimAtoms, encodeTsgraph, evalDim, tensorType, typeToString,
  type Graph, type IRType, type TensorData, type Value,
} from '@kiln/ir-spec';
import { load, RuntimeError, type InputValue, type Model, type Output } from '@kiln/runtime';
import { manualSeed, nn, noGrad, randn, type Tensor } from '@kiln/core';

const dir = mkdtempSync(join(tmpdir(), 'kiln-runtime-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BATCHES = [1, 3, 8];

/** A module's parameters and buffers as tensor-table entries (copies, so the graph owns them). */
function stateOf(m: nn.Module): Map<string, TensorData> {
  const out = new Map<string, TensorData>();
  for (const [name, t] of Object.entries(m.stateDict())) {
    if (t.dtype !== 'float32') continue; // e.g. BatchNorm's int num_batches_tracked: not a graph input
    out.set(name, { dtype: t.dtype, shape: [...t.shape], data: Float32Array.from(t.data) });
  }
  return out;
}

function save(name: string, g: Graph): string {
  const path = join(dir, `${name}.tsgraph`);
  writeFileSync(path, encodeTsgraph(g));
  return path;
}

function expectClose(out: Output, want: Tensor): void {
  expect(out.shape).toEqual([...want.shape]);
  expect(out.dtype).toBe('float32');
  let worst = 0;
  for (let i = 0; i < want.data.length; i++) worst = Math.max(worst, Math.abs(out.data[i] - want.data[i]));
  expect(worst).toBeLessThanOrEqual(1e-5);
}

// ---- the CNN ----------------------------------------------------------------------------------

/** conv(3→8) → BN → ReLU → maxpool → conv(8→4) → ReLU → flatten → linear(64→10), on [N,3,8,8]. */
function eagerCnn(): nn.Sequential {
  manualSeed(1);
  const model = new nn.Sequential(
    new nn.Conv2d(3, 8, 3, { padding: 1 }),
    new nn.BatchNorm2d(8),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Conv2d(8, 4, 3, { padding: 1 }),
    new nn.ReLU(),
    new nn.Flatten(),
    new nn.Linear(4 * 4 * 4, 10),
  );
  // A few training-mode batches give BatchNorm running statistics that are not the defaults.
  model.train();
  noGrad(() => { for (let i = 0; i < 3; i++) model.forward(randn([4, 3, 8, 8]).mul(2).add(0.5)); });
  model.eval();
  return model;
}

function cnnGraph(state: Map<string, TensorData>): Graph {
  const b = new GraphBuilder('cnn', { source: 'tests/runtime-e2e.test.ts' });
  const x = b.input('x', tensorType('float32', ['N', 3, 8, 8]));
  const p = (name: string): Value => b.param(name, state.get(name)!);
  const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
  b.meta = { scope: '0' };
  let h = b.op1('conv2d', [x, p('0.weight'), p('0.bias')], conv);
  b.meta = { scope: '1' };
  h = b.op1('batch_norm', [h, p('1.running_mean'), p('1.running_var'), p('1.weight'), p('1.bias')], { eps: 1e-5 });
  h = b.op1('relu', [h]);
  [h] = b.op('max_pool2d', [h], { kernel_size: [2, 2], stride: [2, 2] });
  b.meta = { scope: '4' };
  h = b.op1('relu', [b.op1('conv2d', [h, p('4.weight'), p('4.bias')], conv)]);
  h = b.op1('reshape', [h], { shape: ['N', 64] });
  b.meta = { scope: '7' };
  b.output('logits', b.op1('linear', [h, p('7.weight'), p('7.bias')]));
  return b.build();
}

// ---- the loop -----------------------------------------------------------------------------------

const STEPS = 4;

/** h ← h + tanh(cell(h)) for STEPS steps, then head(h): a residual recurrence. */
function eagerLoop() {
  manualSeed(2);
  const cell = new nn.Linear(16, 16), head = new nn.Linear(16, 3);
  const forward = (x: Tensor) => noGrad(() => {
    let h = x;
    for (let i = 0; i < STEPS; i++) h = h.add(cell.forward(h).tanh());
    return head.forward(h);
  });
  return { cell, head, forward };
}

function loopGraph(cell: Map<string, TensorData>, head: Map<string, TensorData>): Graph {
  const b = new GraphBuilder('residual-loop');
  const x = b.input('x', tensorType('float32', ['N', 16]));
  const cw = b.param('cell.weight', cell.get('weight')!), cb = b.param('cell.bias', cell.get('bias')!);
  const hw = b.param('head.weight', head.get('weight')!), hb = b.param('head.bias', head.get('bias')!);
  const [h] = b.loop(b.scalar(STEPS), null, [x], (_i, [hc]) => ({
    next: [b.op1('add', [hc, b.op1('tanh', [b.op1('linear', [hc, cw, cb])])])],
  }));
  b.output('y', b.op1('linear', [h, hw, hb]));
  return b.build();
}

// ---- inputs for any graph ---------------------------------------------------------------------

const FIXTURES = join(fileURLToPath(new URL('.', import.meta.url)), 'fixtures');

/** Inputs fitting a model's declared inputs: every symbol 2, scalars true / 3, small integers. */
function inputsFor(model: Model): InputValue[] {
  const env = new Map<string, number>();
  const decl = model.graph.inputs.filter((i) => i.kind === 'input');
  for (const i of decl) if (i.value.type.kind === 'tensor') for (const d of i.value.type.shape) for (const a of dimAtoms(d)) env.set(a, 2);
  return decl.map((i) => {
    const t: IRType = i.value.type;
    if (t.kind === 'scalar') return t.dtype === 'bool' ? true : 3;
    if (t.kind !== 'tensor') throw new Error(`input ${i.name} is ${typeToString(t)}`);
    const shape = t.shape.map((d) => evalDim(d, env) ?? 1);
    const n = shape.reduce((a, d) => a * d, 1);
    if (n > 1 << 20) return { data: [], shape, dtype: t.dtype }; // refused by validation, cheaply
    const data = Array.from({ length: n }, (_, k) => (t.dtype === 'bool' ? k % 2 : (k % 7) - 3));
    return { data, shape, dtype: t.dtype };
  });
}

// ---- the tests ------------------------------------------------------------------------------------

describe('runtime end to end: hand-built graphs saved, loaded from a file, run', () => {
  it('a small CNN matches the eager forward at batch 1, 3 and 8', async () => {
    const eager = eagerCnn();
    const path = save('cnn', cnnGraph(stateOf(eager)));
    const model = await load(path, { backend: 'cpu' });
    expect(model.inputs).toEqual([{ name: 'x', type: 'f32[N,3,8,8]' }]);
    expect(model.outputs).toEqual([{ name: 'logits', type: 'f32[N,10]' }]);
    for (const n of BATCHES) {
      const x = randn([n, 3, 8, 8]);
      const want = noGrad(() => eager.forward(x));
      const [y] = await model.run([x]); // a kiln Tensor is a valid input as it is
      expect(y.name).toBe('logits');
      expectClose(y, want);
      expect(model.stats!.peakIntermediateBytes).toBeGreaterThan(0);
      expect(model.stats!.peakIntermediateBytes).toBeLessThan(model.stats!.totalIntermediateBytes);
    }
  });

  it('a loop graph matches the eager recurrence at batch 1, 3 and 8', async () => {
    const { cell, head, forward } = eagerLoop();
    const path = save('loop', loopGraph(stateOf(cell), stateOf(head)));
    const model = await load(path, { backend: 'auto' });
    for (const n of BATCHES) {
      const x = randn([n, 16]);
      const [y] = await model.runNamed({ x: { data: x.data, shape: x.shape, dtype: x.dtype } });
      expectClose(y, forward(x));
    }
  });

  it('loads the same file from bytes, an ArrayBuffer and a file: URL, with the same results', async () => {
    const eager = eagerCnn();
    const path = save('cnn-sources', cnnGraph(stateOf(eager)));
    const bytes = new Uint8Array(readFileSync(path));
    const x = randn([2, 3, 8, 8]);
    const runs = await Promise.all([
      load(path), load(bytes), load(bytes.slice().buffer), load(pathToFileURL(path).href),
    ].map(async (m) => Array.from((await (await m).run([x]))[0].data)));
    for (const r of runs.slice(1)) expect(r).toEqual(runs[0]);
  });

  it('passes a refused file through as the reader’s typed error', async () => {
    const path = join(dir, 'corrupt.tsgraph');
    const bytes = encodeTsgraph(cnnGraph(stateOf(eagerCnn())));
    bytes[0] ^= 0xff;
    writeFileSync(path, bytes);
    const err = await load(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TsgraphError);
    expect((err as TsgraphError).code).toBe('BAD_MAGIC');
  });

  it('runs every committed .tsgraph fixture, with outputs of the declared types', async () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.tsgraph'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const model = await load(join(FIXTURES, f));
      const inputs = inputsFor(model);
      const first = await model.run(inputs), again = await model.run(inputs);
      expect(first.map((o) => o.name), f).toEqual(model.outputs.map((o) => o.name));
      expect(again, `${f}: the same inputs give the same outputs`).toEqual(first);
    }
  });

  it('mutated fixture files are refused (TsgraphError), or run, or fail with a RuntimeError', async () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.tsgraph')).map((f) => new Uint8Array(readFileSync(join(FIXTURES, f))));
    let s = 12345;
    const rand = (n: number) => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return Math.floor((s / 2 ** 32) * n); };
    const seen = new Map<string, number>();
    for (let k = 0; k < 600; k++) {
      const bytes = files[k % files.length].slice();
      const headerEnd = 24 + Number(new DataView(bytes.buffer).getBigUint64(16, true));
      // Mostly digit swaps inside the JSON header (trip counts, attrs, shapes), else bit flips.
      for (let j = 0, n = 1 + rand(3); j < n; j++) {
        if (k % 4) {
          const at = 24 + rand(headerEnd - 24);
          if (bytes[at] >= 0x30 && bytes[at] <= 0x39) bytes[at] = 0x30 + rand(10);
        } else {
          bytes[rand(bytes.length)] ^= 1 << rand(8);
        }
      }
      let outcome = 'ran';
      try {
        const model = await load(bytes, { maxLoopTrips: 10_000, maxTensorBytes: 1 << 24 });
        await model.run(inputsFor(model));
      } catch (e) {
        if (e instanceof TsgraphError) outcome = `refused ${e.code}`;
        else if (e instanceof RuntimeError) outcome = `run failed ${e.code}`;
        else throw new Error(`mutation ${k}: an untyped error escaped: ${e instanceof Error ? e.stack : String(e)}`);
      }
      seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
    }
    expect(seen.get('ran')).toBeGreaterThan(0);
    expect([...seen.keys()].some((o) => o.startsWith('refused'))).toBe(true);
  });
});
