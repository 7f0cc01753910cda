// Saved files carry their WGSL, and the runtime picks a backend that can run them to the end:
// jit's save/toBytes store the kernels of every node codegen covers; `nodesWithoutKernels`
// names the rest; backend 'webgpu' refuses a file it cannot finish (naming the ops) and 'auto'
// falls back to the CPU for it and for a fallback adapter (SwiftShader here). Scripted models
// with `if`/`loop` run from such a file on WebGPU equal to eager on every branch and trip count.

import { describe, expect, it } from 'vitest';
import { GraphBuilder, decodeTsgraph, encodeTsgraph, tensorType } from '@kiln/ir-spec';
import { load, nodesWithoutKernels, requestAdapter, type Output } from '@kiln/runtime';
import { jit, manualSeed, nn, noGrad, ones, randn, type Tensor } from 'kiln';
import { AdaptiveResNet, Halver, Repeat } from './script-models/control-flow.js';


/** relu → exp → reshape: exp has no kernel in `reluOnly`, reshape is a view. */
function reluExpGraph() {
  const b = new GraphBuilder('relu_exp');
  const x = b.input('x', tensorType('float32', [2, 3]));
  const y = b.op1('exp', [b.op1('relu', [x])]);
  b.output('y', b.op1('reshape', [y], { shape: [6] }));
  return b.build();
}

function expectClose(got: Output, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const w = want.toArray();
  for (let i = 0; i < w.length; i++) expect(Math.abs(got.data[i] - w[i])).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(w[i])));
}

const asInput = (t: Tensor) => ({ data: Float32Array.from(t.toArray()), shape: [...t.shape], dtype: 'float32' as const });

describe('which nodes a file can run on WebGPU', () => {
  it('nodesWithoutKernels lists registry nodes without a kernel key, skipping builtins and views', () => {
    const g = reluExpGraph();
    const all = jit.generateWgsl(g).kernels;
    expect(nodesWithoutKernels(g, all)).toEqual([]);
    const reluOnly = all.filter((k) => k.key.startsWith('relu('));
    expect(nodesWithoutKernels(g, reluOnly).map((n) => n.op)).toEqual(['exp']);
    expect(nodesWithoutKernels(g, []).map((n) => n.op)).toEqual(['relu', 'exp']);
  });

  it("backend 'webgpu' refuses a file whose kernels do not cover it, naming the ops; 'auto' runs it on the CPU", async () => {
    const g = reluExpGraph();
    const partial = encodeTsgraph(g, { kernels: jit.generateWgsl(g).kernels.filter((k) => k.key.startsWith('relu(')) });
    const err = await load(partial, { backend: 'webgpu' }).catch((e: unknown) => e);
    expect(String(err)).toMatch(/BACKEND: this file stores no WGSL kernel for 1 node \(exp\), so it cannot run on WebGPU; use backend 'cpu'/);
    expect((await load(partial)).backend).toBe('cpu');
    expect((await load(encodeTsgraph(g))).backend).toBe('cpu');
  });

  it("'auto' uses WebGPU for a fully covered file only on a hardware adapter (SwiftShader is a fallback adapter: the CPU)", async () => {
    const g = reluExpGraph();
    const bytes = encodeTsgraph(g, { kernels: jit.generateWgsl(g).kernels });
    const fallback = (await requestAdapter()).info.isFallbackAdapter;
    expect((await load(bytes)).backend).toBe(fallback ? 'cpu' : 'webgpu');
    expect((await load(bytes, { backend: 'webgpu' })).backend).toBe('webgpu');
  });
});

describe('jit saves WGSL with the graph', () => {
  it('a traced model saves its kernels; the file runs on WebGPU equal to eager; kernels: [] saves a CPU-only file', async () => {
    manualSeed(3);
    const model = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 3), new nn.Softmax(1)).eval();
    const x = randn([5, 4]);
    const traced = jit.trace(model, [x], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
    const bytes = traced.toBytes();
    const { header, graph } = decodeTsgraph(bytes);
    expect(header.kernels.length).toBeGreaterThan(0);
    expect(nodesWithoutKernels(graph, header.kernels)).toEqual([]);
    expect(traced.toBytes()).toEqual(bytes); // deterministic, WGSL included
    const gpu = await load(bytes, { backend: 'webgpu' });
    const want = noGrad(() => model.forward(x)) as Tensor;
    expectClose((await gpu.run([asInput(x)]))[0], want);
    expect(decodeTsgraph(traced.toBytes({ kernels: [] })).header.kernels).toEqual([]);
  });

  it('scripted if/loop models run from their .tsgraph on WebGPU equal to eager on every branch and trip count', async () => {
    manualSeed(2);
    const adaptive = new AdaptiveResNet().eval();
    const a = await load(jit.script(adaptive, { inputs: [randn([3, 6])] }).toBytes(), { backend: 'webgpu' });
    const taken = new Set<boolean>();
    for (const shift of [0, 20, -20]) {
      const x = randn([3, 6]).add(shift);
      taken.add(noGrad(() => adaptive.stem.forward(x).relu().mean().item()) > adaptive.threshold);
      expectClose((await a.run([asInput(x)]))[0], noGrad(() => adaptive.forward(x)) as Tensor);
    }
    expect([...taken].sort()).toEqual([false, true]); // both branches ran

    const repeat = new Repeat().eval();
    const r = await load(jit.script(repeat, { inputs: [randn([2, 3]), 1] }).toBytes(), { backend: 'webgpu' });
    const x = randn([2, 3]);
    for (const n of [0, 1, 5]) expectClose((await r.run([asInput(x), n]))[0], noGrad(() => repeat.forward(x, n)) as Tensor);

    const halver = new Halver();
    const h = await load(jit.script(halver, { inputs: [ones([3, 2])] }).toBytes(), { backend: 'webgpu' });
    for (const scale of [0.01, 10, 1000]) {
      const y = ones([3, 2]).mul(scale);
      expectClose((await h.run([asInput(y)]))[0], noGrad(() => halver.forward(y)) as Tensor);
    }
  }, 120_000);
});
