// Fusion respects WebGPU's storage-buffer limit: fuse-elementwise never makes a kernel that binds
// more than `maxStorageBuffers` (default 8: inputs + the output), splitting wider trees, so a
// model combining 10 inputs still runs on WebGPU after -O2 and matches the CPU; and when a file
// does hold a node or kernel wider than the adapter allows, the runtime's error and the backend
// choice say so (number of bindings, the limit, what to do).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { encodeTsgraph, GraphBuilder, tensorType, walkNodes, type Graph, type Value } from '@kiln/ir-spec';
import { createModel, createWebGpuDevice, load, nodeStorageBuffers, type InputValue, type WebGpuDevice } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';
import { fuseElementwise } from '../compiler/src/passes/fuse-elementwise.js';
import { runPass, runPipeline } from '../compiler/src/pipeline.js';
import { jit, manualSeed, nn, noGrad, randn, type Tensor } from 'kiln';

/** The pass as the pipeline runs it: fusion, then the sweep of the producers it absorbed. */
const fuse = (g: Graph, opts: { maxStorageBuffers?: number } = {}) => runPass('fuse-elementwise', g, opts);

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });

const OPS = ['add', 'mul', 'sub', 'maximum'] as const;

/** y = ((((x0 ∘ x1) ∘ x2) ∘ x3) …) over `n` distinct [2, 5] inputs, with a sigmoid/tanh mixed in. */
function chainGraph(n: number): Graph {
  const b = new GraphBuilder(`chain${n}`);
  const xs = Array.from({ length: n }, (_, i) => b.input(`x${i}`, tensorType('float32', ['N', 5])));
  let acc: Value = xs[0];
  for (let i = 1; i < n; i++) {
    acc = b.op1(OPS[i % OPS.length], [acc, i % 3 === 0 ? b.op1('sigmoid', [xs[i]]) : xs[i]]);
    if (i === 4) acc = b.op1('tanh', [acc]);
  }
  b.output('y', acc);
  return b.build();
}

/** A balanced tree: sum of pairwise products of `n` inputs (x0·x1 + x2·x3 + …). */
function treeGraph(n: number): Graph {
  const b = new GraphBuilder(`tree${n}`);
  const xs = Array.from({ length: n }, (_, i) => b.input(`x${i}`, tensorType('float32', ['N', 5])));
  let level: Value[] = [];
  for (let i = 0; i < n; i += 2) level.push(b.op1('mul', [xs[i], xs[i + 1]]));
  while (level.length > 1) {
    const next: Value[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? b.op1('add', [level[i], level[i + 1]]) : level[i]);
    level = next;
  }
  b.output('y', b.op1('relu', [level[0]]));
  return b.build();
}

function inputsFor(g: Graph, batch = 2): InputValue[] {
  return g.inputs.filter((i) => i.kind === 'input').map((_, k) => ({
    data: Float32Array.from({ length: batch * 5 }, (_, i) => Math.sin(i * 0.7 + k) * 1.5), shape: [batch, 5], dtype: 'float32' as const,
  }));
}

const fusedNodes = (g: Graph) => [...walkNodes(g.body)].filter((n) => n.op === 'fused_elementwise');

function expectSameOutputs(a: Graph, b: Graph): void {
  const ins = inputsFor(a);
  const [want] = createModel(a).runSync(ins), [got] = createModel(b).runSync(ins);
  expect(got.shape).toEqual(want.shape);
  want.data.forEach((w, i) => expect(Math.abs(Number(got.data[i]) - Number(w))).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(Number(w)))));
}

describe('fuse-elementwise keeps every kernel within the storage-buffer limit', () => {
  for (const [name, build] of [['a chain', chainGraph], ['a balanced tree', treeGraph]] as const) {
    it(`${name} over 10 inputs splits into kernels of at most 7 inputs + 1 output, same numbers`, () => {
      const g = build(10);
      const out = fuse(g);
      const fused = fusedNodes(out);
      expect(fused.length).toBeGreaterThanOrEqual(2);
      for (const n of walkNodes(out.body)) expect(nodeStorageBuffers(n), n.op).toBeLessThanOrEqual(8);
      expectSameOutputs(g, out);
      // Nothing is left unfused that could have been: every input feeds exactly one kernel, and
      // the graph has few nodes (2 or 3 kernels, not one per op).
      expect([...walkNodes(out.body)].length).toBeLessThanOrEqual(4);
      expect(generateWgsl(out).unsupported).toEqual([]);
    });
  }

  it('a higher limit (an adapter known to allow more) gives one kernel; a lower one more kernels', () => {
    const g = chainGraph(10);
    const wide = fuse(g, { maxStorageBuffers: 11 });
    expect(fusedNodes(wide).length).toBe(1);
    expect(fusedNodes(wide)[0].inputs.length).toBe(10);
    expectSameOutputs(g, wide);
    const narrow = fuse(g, { maxStorageBuffers: 4 });
    for (const n of walkNodes(narrow.body)) expect(nodeStorageBuffers(n)).toBeLessThanOrEqual(4);
    expectSameOutputs(g, narrow);
    expect(() => fuseElementwise(g, { maxStorageBuffers: 1 })).toThrow(/^fuseElementwise: maxStorageBuffers must be an integer >= 2 \(one input and the output\), got 1$/);
  });

  it('the -O2 pipeline takes the limit as an option (default 8)', () => {
    const g = chainGraph(10);
    const dflt = runPipeline(g, { level: 2 }).graph;
    for (const n of walkNodes(dflt.body)) expect(nodeStorageBuffers(n)).toBeLessThanOrEqual(8);
    const wide = runPipeline(g, { level: 2, maxStorageBuffers: 16 }).graph;
    expect(fusedNodes(wide).length).toBe(1);
  });

  it('a shared intermediate is still never absorbed, and a small tree is one kernel as before', () => {
    const b = new GraphBuilder('small');
    const x = b.input('x', tensorType('float32', ['N', 5])), y = b.input('y', tensorType('float32', ['N', 5]));
    const t = b.op1('mul', [x, y]);
    b.output('a', b.op1('relu', [b.op1('add', [t, x])]));
    b.output('b', b.op1('sigmoid', [t]));
    const out = fuse(b.build());
    expect(fusedNodes(out).map((n) => n.inputs.length)).toEqual([2]);
    expect([...walkNodes(out.body)].some((n) => n.op === 'mul')).toBe(true);
  });
});

class Wide extends nn.Module {
  fc = new nn.Linear(5, 5);
  forward(a: Tensor, b: Tensor, c: Tensor, d: Tensor, e: Tensor, f: Tensor, g: Tensor, h: Tensor, i: Tensor, j: Tensor): Tensor {
    const s = a.add(b).mul(c).sub(d.sigmoid()).add(e.mul(f)).maximum(g).mul(h.tanh()).add(i).sub(j.relu());
    return this.fc.forward(s).relu();
  }
}

describe('a model combining 10 inputs, optimized at -O2, runs on WebGPU (SwiftShader) and matches the CPU', () => {
  let device: WebGpuDevice;
  beforeAll(async () => { device = await createWebGpuDevice(); });
  afterAll(() => device?.destroy());

  it('jit.trace → optimizeForInference → bytes → load(webgpu) equals eager and the CPU backend', async () => {
    manualSeed(5);
    const model = new Wide().eval();
    const xs = Array.from({ length: 10 }, () => randn([3, 5]));
    const fast = jit.optimizeForInference(jit.trace(model, xs));
    expect(Math.max(...fusedNodes(fast.graph).map((n) => n.inputs.length))).toBeLessThanOrEqual(7);
    const bytes = fast.toBytes();
    const want = noGrad(() => model.forward(...(xs as [Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor])));
    const inputs = xs.map((t) => ({ data: t.toArray(), shape: [...t.shape], dtype: 'float32' as const }));
    const [cpu] = await (await load(bytes, { backend: 'cpu' })).run(inputs);
    const gpuModel = await load(bytes, { backend: 'webgpu' });
    const [gpu] = await gpuModel.run(inputs);
    const w = want.toArray();
    w.forEach((v, k) => {
      expect(Math.abs(Number(cpu.data[k]) - v)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(v)));
      expect(Math.abs(Number(gpu.data[k]) - v)).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(v)));
    });
  });

  it('a file whose fused node is wider than 8 bindings (an older fusion) is refused for WebGPU, saying why', async () => {
    const g = runPipeline(chainGraph(10), { passes: ['fuse-elementwise'], maxStorageBuffers: 16 }).graph;
    const bytes = encodeTsgraph(g, { kernels: generateWgsl(g).kernels }); // codegen at the default 8 stores no kernel for it
    await expect(load(bytes, { backend: 'webgpu' })).rejects.toThrow(
      /^BACKEND: this file cannot run on WebGPU: 1 node has no kernel because fused_elementwise reads 10 tensors and writes 1, so its kernel would bind 11 storage buffers, over WebGPU's limit of 8 per shader stage \(maxStorageBuffersPerShaderStage\)\. The file was optimized without respecting that limit/);
    const [y] = await (await load(bytes, { backend: 'auto' })).run(inputsFor(g)); // auto falls back to the CPU
    expect(y.shape).toEqual([2, 5]);
  });

  it('a stored kernel binding more storage buffers than the adapter allows is named before any pipeline is made', async () => {
    const limit = device.gpu.limits.maxStorageBuffersPerShaderStage;
    const n = limit + 2; // inputs: the kernel binds n + 1 > limit
    const g = fuse(chainGraph(n), { maxStorageBuffers: n + 1 });
    expect(fusedNodes(g)[0].inputs.length).toBe(n);
    const { kernels, unsupported } = generateWgsl(g, { maxStorageBuffers: n + 1 });
    expect(unsupported).toEqual([]);
    const bytes = encodeTsgraph(g, { kernels });
    await expect(load(bytes, { backend: "webgpu" })).rejects.toThrow(new RegExp(
      `^GRAPH: WGSL kernel 'fused_elementwise_0' \\(key fused_elementwise\\(.*\\) binds ${n + 1} storage buffers, but this WebGPU adapter allows ${limit} per shader stage \\(maxStorageBuffersPerShaderStage\\); ` +
      `compile the model again for this limit \\(jit\\.optimizeForInference\\(m, \\{ maxStorageBuffers: ${limit} \\}\\), whose fusion splits wider kernels\\) or use backend 'cpu'$`));
  });
});
