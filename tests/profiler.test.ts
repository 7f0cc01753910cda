// The profiler (issue 20): the seed ResearchModel profiled eagerly and compiled, on the CPU and
// on WebGPU (Dawn on SwiftShader, real: per node from GPU timestamp queries, and CPU-side without
// them), with the table's totals checked against wall time; the Chrome trace's format and nesting;
// schedules; module scopes; source → IR → kernel provenance; measured memory (eager and runtime).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, type WebGpuDevice } from '@kiln/runtime';
import { jit, manualSeed, memory, noGrad, profiler, randn, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/cli/research-model.js';

const model = new ResearchModel();
let fastBytes: Uint8Array;
let x: Tensor;

beforeAll(() => {
  manualSeed(0);
  model.eval();
  x = randn([4, 3, 32, 32]);
  // Traced, so every node carries the source line of the op that made it (research-model.ts).
  const traced = jit.trace(model, [x], { dynamicAxes: { 0: { 0: 'N' } }, warn: false });
  fastBytes = jit.optimizeForInference(traced).toBytes();
});

const input = (t: Tensor = x) => [{ data: t.data as Float32Array, shape: [...t.shape], dtype: 'float32' as const }];
const within = (a: number, b: number, frac: number) => Math.abs(a - b) <= frac * b;
/** The least disturbed of three profiles (smallest wall time): the machine running the tests may be busy. */
function quietest<P extends { wallMs: number }>(make: () => P): P {
  return [make(), make(), make()].sort((a, b) => a.wallMs - b.wallMs)[0];
}

describe('eager profile of the ResearchModel', () => {
  it('records every op with shapes, bytes and module scope; the totals are the wall time within 20%', () => {
    noGrad(() => model.forward(x)); // warm
    const prof = quietest(() => profiler.profile({ recordShapes: true, profileMemory: true }, () => noGrad(() => model.forward(x))));
    const ops = prof.events.filter((e) => e.kind === 'op');
    expect(ops.map((e) => e.name)).toEqual(['conv2d', 'batch_norm', 'relu', 'max_pool2d', 'conv2d', 'batch_norm', 'relu', 'max_pool2d', 'reshape', 'dropout', 'linear', 'relu', 'linear']);
    expect(ops.map((e) => e.scope)).toEqual(['features.0', 'features.1', 'features.2', 'features.3', 'features.4', 'features.5', 'features.6', 'features.7', undefined, 'classifier.0', 'classifier.1', 'classifier.2', 'classifier.3']);
    expect(ops[0].inputShapes).toEqual([[4, 3, 32, 32], [64, 3, 3, 3], [64]]);
    expect(ops[0].allocBytes).toBe(4 * 64 * 32 * 32 * 4);
    expect(ops[8].allocBytes).toBe(0); // flatten is a view
    const avg = prof.keyAverages();
    expect(within(avg.totalMs(), avg.wallMs, 0.2)).toBe(true);
    const table = avg.table({ sortBy: 'total', rowLimit: 3 });
    expect(table).toMatch(/Name\s+Device\s+Total %\s+Total\s+Avg\s+# of Calls\s+Mem alloc/);
    expect(table.split('\n').filter((l) => /^\w+\s+cpu/.test(l))).toHaveLength(3);
    expect(table).toMatch(/Self CPU time total: [\d.]+ms \(wall time of the profile: [\d.]+ms\)/);
    const byScope = prof.keyAverages({ groupBy: 'scope' });
    expect(byScope.find((k) => k.key === 'features.4')?.name).toBe('conv2d');
    expect(prof.keyAverages({ groupBy: 'shape' }).filter((k) => k.name === 'conv2d')).toHaveLength(2);
  });

  it('withStack records the user source line of each op', () => {
    const prof = profiler.profile({ withStack: true }, () => noGrad(() => model.forward(x)));
    const lines = prof.keyAverages({ groupBy: 'source' }).map((k) => k.key);
    expect(lines.every((l) => /research-model\.ts:\d+:\d+$/.test(l))).toBe(true);
  });

  it('detaches after an error, and refuses bad options', () => {
    expect(() => profiler.profile({}, () => { throw new Error('boom'); })).toThrow('boom');
    const prof = profiler.profile({}, () => {});
    noGrad(() => model.forward(x));
    expect(prof.events).toEqual([]);
    expect(() => profiler.profile({ activities: ['tpu' as 'cpu'] }, () => {})).toThrow(/activity 'tpu' is not one of cpu, webgpu/);
    expect(() => prof.keyAverages({ groupBy: 'line' as 'source' })).toThrow(/groupBy 'line'/);
    expect(() => profiler.schedule({ active: 0 })).toThrow(/active must be at least 1/);
  });
});

describe('compiled profile: per IR node, with provenance', () => {
  it('on the CPU: each kernel names the IR nodes it covers and their source lines; totals match the run within 20%', async () => {
    const m = await load(fastBytes, { backend: 'cpu' });
    await m.run(input());
    const profs = [];
    for (let k = 0; k < 3; k++) profs.push(await profiler.profile({}, () => m.run(input())));
    const prof = profs.sort((a, b) => a.wallMs - b.wallMs)[0];
    const nodes = prof.events.filter((e) => e.kind === 'node');
    const [run] = prof.events.filter((e) => e.kind === 'run');
    expect(run.device).toBe('cpu');
    expect(nodes.every((e) => e.device === 'cpu' && e.timing === 'kernel')).toBe(true);
    // conv + (folded) BN + ReLU + pool run as one kernel that names them, with their scopes and lines.
    const conv = nodes.find((e) => e.name === 'fused_conv2d')!;
    expect(conv.covers!.map((c) => `${c.op} ${c.scope}`)).toEqual(['fused_conv2d features.0', 'batch_norm features.1', 'relu features.2', 'max_pool2d features.3']);
    expect(conv.covers!.every((c) => /research-model\.ts:\d+:\d+$/.test(c.loc ?? ''))).toBe(true);
    const total = nodes.reduce((a, e) => a + e.endMs - e.startMs, 0);
    expect(within(total, run.endMs - run.startMs, 0.2)).toBe(true);
    for (const e of nodes) expect(e.startMs >= run.startMs && e.endMs <= run.endMs).toBe(true);
    const bySource = prof.keyAverages({ groupBy: 'source' });
    expect(bySource.length).toBeGreaterThan(0);
    expect(bySource.every((k) => k.key.includes('research-model.ts:'))).toBe(true);
    expect(m.stats!.measuredPeakBytes).toBeGreaterThan(0);
    expect(run.allocBytes).toBe(m.stats!.measuredPeakBytes);
  });

  it('fused elementwise nodes name every node fused into them', async () => {
    const { nn } = await import('kiln');
    class Chain extends nn.Module {
      forward(a: Tensor): Tensor { return a.mul(2).add(1).relu(); }
    }
    const a = randn([8, 8]);
    const fast = jit.optimizeForInference(jit.trace(new Chain(), [a]));
    const m = await load(fast.toBytes(), { backend: 'cpu' });
    const prof = await profiler.profile({}, () => m.run([{ data: a.data as Float32Array, shape: [8, 8], dtype: 'float32' }]));
    const fused = prof.events.find((e) => e.name === 'fused_elementwise')!;
    expect(fused.covers!.map((c) => c.op)).toEqual(['mul', 'add', 'relu']);
    expect(fused.covers!.every((c) => /profiler\.test\.ts:\d+:\d+$/.test(c.loc ?? ''))).toBe(true);
  });

  describe('on WebGPU (Dawn, SwiftShader) without timestamp queries', () => {
    it('times each dispatch to its completion (labelled), with totals within 20% of the run and measured live buffers', async () => {
      const m = await load(fastBytes, { backend: 'webgpu' }); // no profile: the device has no DispatchTimer
      expect(m.device.dispatchTimer).toBeUndefined();
      const x1 = randn([1, 3, 32, 32]);
      await m.run(input(x1));
      const prof = await profiler.profile({ activities: ['webgpu'] }, () => m.run(input(x1)));
      const nodes = prof.events.filter((e) => e.kind === 'node');
      const [run] = prof.events.filter((e) => e.kind === 'run');
      expect(run.device).toBe('webgpu');
      expect(nodes.length).toBeGreaterThan(3);
      expect(nodes.every((e) => e.device === 'webgpu' && e.timing === 'synchronized')).toBe(true);
      const total = nodes.reduce((a, e) => a + e.endMs - e.startMs, 0);
      expect(within(total, run.endMs - run.startMs, 0.2)).toBe(true);
      expect(m.stats!.measuredPeakBytes).toBeGreaterThan(0);
      const table = prof.keyAverages({ groupBy: 'source' }).table();
      expect(table).toMatch(/webgpu/);
      // 'cpu' only: WebGPU work is left out.
      const cpuOnly = await profiler.profile({ activities: ['cpu'] }, () => m.run(input(x1)));
      expect(cpuOnly.events).toEqual([]);
      (m.device as WebGpuDevice).destroy();
    }, 300_000); // SwiftShader compiles and runs every kernel on the CPU
  });

  describe('on WebGPU with timestamp queries (load(..., { profile: true }))', () => {
    let m: Awaited<ReturnType<typeof load>>;
    beforeAll(async () => { m = await load(fastBytes, { backend: 'webgpu', profile: true }); }, 120_000);
    afterAll(() => (m?.device as WebGpuDevice | undefined)?.destroy());

    it('times each node by its dispatches\' GPU timestamps, without waiting per node; the table and trace use the GPU times', async () => {
      const device = m.device as WebGpuDevice;
      expect(device.dispatchTimer).toBeDefined(); // Dawn's adapter has 'timestamp-query'
      const x1 = randn([1, 3, 32, 32]);
      const [plain] = await m.run(input(x1));
      await device.profile({ reset: true });
      const submits = device.stats.submits, dispatches = device.stats.dispatches;
      const prof = await profiler.profile({ activities: ['webgpu'] }, () => m.run(input(x1)));
      const runSubmits = device.stats.submits - submits, runDispatches = device.stats.dispatches - dispatches;
      const nodes = prof.events.filter((e) => e.kind === 'node');
      const [run] = prof.events.filter((e) => e.kind === 'run');
      expect(nodes.length).toBeGreaterThan(3);
      expect(nodes.every((e) => e.device === 'webgpu' && e.timing === 'gpu')).toBe(true);
      // Every dispatch of the run belongs to exactly one node, and each had its timestamps.
      expect(nodes.reduce((a, e) => a + e.dispatches!, 0)).toBe(runDispatches);
      const kernels = await device.profile({ reset: true });
      expect(kernels.reduce((a, k) => a + k.calls, 0)).toBe(runDispatches);
      for (const e of nodes) {
        expect(e.timedDispatches).toBe(e.dispatches);
        if (e.dispatches! > 0) expect(e.endMs - e.startMs).toBeGreaterThan(0);
      }
      // No per-node wait: the unprofiled run's submits (one per read), not one per node.
      expect(runSubmits).toBeLessThan(nodes.length);
      // Attribution: each conv kernel's node names the conv, the folded BN, the ReLU and the pool; and per op,
      // the nodes' GPU time is the GPU time device.profile() gives that op's kernels (`fused_conv2d_0`).
      const convs = nodes.filter((e) => e.name === 'fused_conv2d');
      expect(convs).toHaveLength(2);
      expect(convs[1].covers!.map((c) => `${c.op} ${c.scope}`)).toEqual(['fused_conv2d features.4', 'batch_norm features.5', 'relu features.6', 'max_pool2d features.7']);
      const gpuMs = (e: { startMs: number; endMs: number }) => e.endMs - e.startMs;
      for (const op of new Set(nodes.filter((e) => e.dispatches! > 0).map((e) => e.name))) {
        const nodeMs = nodes.filter((e) => e.name === op).reduce((a, e) => a + gpuMs(e), 0);
        const kernelMs = kernels.filter((k) => new RegExp(`^${op}_\\d+$`).test(k.name)).reduce((a, k) => a + k.ms, 0);
        expect(kernelMs).toBeGreaterThan(0);
        expect(Math.abs(nodeMs - kernelMs)).toBeLessThan(0.01 + 0.01 * kernelMs);
      }
      // The nodes run one after another on the GPU: disjoint spans, within the run, summing to at most its wall time.
      const sorted = [...nodes].sort((a, b) => a.startMs - b.startMs);
      for (let k = 1; k < sorted.length; k++) expect(sorted[k].startMs).toBeGreaterThanOrEqual(sorted[k - 1].endMs - 1e-6);
      const total = nodes.reduce((a, e) => a + gpuMs(e), 0);
      expect(total).toBeGreaterThan(0);
      expect(total).toBeLessThanOrEqual(run.endMs - run.startMs);
      expect(sorted[0].startMs).toBeGreaterThanOrEqual(run.startMs);
      expect(sorted[sorted.length - 1].endMs).toBeLessThanOrEqual(run.endMs + 1e-6);
      // The table adds up the GPU times and says so.
      const avg = prof.keyAverages();
      expect(avg.gpuTotalMs()).toBeCloseTo(total, 9);
      expect(avg.totalMs()).toBeCloseTo(total, 9);
      const gpuLine = /Self GPU time total: ([\d.]+)(ms|us) \(timestamp queries\)/.exec(avg.table())!;
      expect(Number(gpuLine[1]) / (gpuLine[2] === 'us' ? 1000 : 1)).toBeCloseTo(total, 2);
      // The trace: a GPU track (thread 2 of the WebGPU process) holding the nodes.
      const trace = prof.chromeTrace().traceEvents;
      expect(trace.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.tid === 2)?.args).toEqual({ name: 'GPU (timestamp queries)' });
      const track = trace.filter((e) => e.ph === 'X' && e.pid === 2 && e.tid === 2);
      expect(track).toHaveLength(nodes.length);
      expect(track.every((e) => e.args['Timing'] === 'gpu' && e.cat === 'node')).toBe(true);
      // Same results as the unprofiled run; and nothing is kept once the profile stopped.
      const [again] = await m.run(input(x1));
      expect(again.data).toEqual(plain.data);
      await m.run(input(x1));
    }, 300_000);
  });
});

describe('Chrome trace export', () => {
  it('writes trace event JSON whose events nest: ops in module calls, module calls in their parents', () => {
    const prof = profiler.profile({ recordShapes: true }, () => noGrad(() => model.forward(x)));
    const path = join(mkdtempSync(join(tmpdir(), 'kiln-prof-')), 'trace.json');
    prof.exportChromeTrace(path);
    const json = JSON.parse(readFileSync(path, 'utf8')) as { traceEvents: Record<string, unknown>[] };
    expect(Array.isArray(json.traceEvents)).toBe(true);
    const complete = json.traceEvents.filter((e) => e.ph === 'X');
    for (const e of complete) {
      expect(typeof e.name).toBe('string');
      expect(typeof e.ts).toBe('number');
      expect(e.dur as number).toBeGreaterThanOrEqual(0);
      expect(Number.isInteger(e.pid) && Number.isInteger(e.tid)).toBe(true);
      expect(typeof e.args).toBe('object');
    }
    expect(json.traceEvents.filter((e) => e.ph === 'M').map((e) => e.name)).toContain('process_name');
    const ivs = complete.map((e) => ({ name: e.name as string, scope: (e.args as Record<string, unknown>)['Module Scope'] as string | undefined, a: e.ts as number, b: (e.ts as number) + (e.dur as number) }));
    const root = ivs.find((e) => e.name === 'nn.Module: ResearchModel')!;
    const seq = ivs.find((e) => e.scope === 'features' && e.name === 'nn.Module: Sequential')!;
    const conv = ivs.find((e) => e.scope === 'features.0' && e.name === 'nn.Module: Conv2d')!;
    const op = ivs.find((e) => e.name === 'conv2d')!;
    const inside = (c: typeof root, p: typeof root) => c.a >= p.a && c.b <= p.b;
    expect(inside(seq, root) && inside(conv, seq) && inside(op, conv)).toBe(true);
    // Any two events on one thread either nest or are disjoint (what the viewers need).
    for (const p of ivs) for (const c of ivs) if (p !== c && c.a > p.a && c.a < p.b) expect(c.b <= p.b + 0.002).toBe(true);
    expect((complete.find((e) => e.name === 'conv2d')!.args as Record<string, unknown>)['Input Dims']).toEqual([[4, 3, 32, 32], [64, 3, 3, 3], [64]]);
  });
});

describe('start()/step()/stop() with a schedule', () => {
  it('records only the active steps of each cycle and calls onTraceReady per cycle', () => {
    const ready: number[][] = [];
    const prof = profiler.start({
      schedule: profiler.schedule({ wait: 1, warmup: 1, active: 2, repeat: 2 }),
      onTraceReady: (p) => ready.push([...new Set(p.events.filter((e) => e.kind === 'op').map((e) => e.step!))]),
    });
    for (let s = 0; s < 10; s++) {
      noGrad(() => x.relu());
      prof.step();
    }
    prof.stop();
    expect(ready).toEqual([[2, 3], [6, 7]]);
    expect(prof.events.filter((e) => e.kind === 'range').map((e) => e.name)).toEqual(['ProfilerStep#6', 'ProfilerStep#7']);
    expect(profiler.schedule({ wait: 1, warmup: 1, active: 2, repeat: 1 })(4)).toBe('none');
  });
});

describe('measured eager memory', () => {
  it('counts live and peak bytes of tensor storages; resetPeakStats restarts the peak from what is live', () => {
    memory.resetPeakStats();
    const before = memory.stats();
    expect(before.peakBytes).toBe(before.liveBytes);
    const t = randn([256, 256]);
    const v = t.reshape([65536]); // a view: no new bytes
    const after = memory.stats();
    expect(after.allocatedBytes - before.allocatedBytes).toBe(256 * 256 * 4);
    expect(after.peakBytes).toBeGreaterThanOrEqual(before.liveBytes + 256 * 256 * 4);
    expect(v.shape).toEqual([65536]);
  });
});

describe('makeDot', () => {
  it('draws the autograd graph: backward nodes, named parameters, saved tensors with shapes, the output', async () => {
    const { makeDot, autogradGraph, nn } = await import('kiln');
    manualSeed(1);
    const net = new nn.Sequential(new nn.Linear(4, 3), new nn.ReLU(), new nn.Linear(3, 2));
    const y = net.forward(randn([5, 4])).sum();
    const g = autogradGraph(y, { params: net.namedParameters() });
    expect(g.filter((n) => n.kind === 'backward').map((n) => n.label).sort()).toEqual(['linearBackward', 'linearBackward', 'reluBackward', 'sumBackward']);
    expect(g.filter((n) => n.kind === 'leaf').map((n) => `${n.label} ${n.shape!.join('x')}`).sort()).toEqual(['0.bias 3', '0.weight 3x4', '2.bias 2', '2.weight 2x3']);
    expect(g.filter((n) => n.kind === 'saved').some((n) => n.shape!.join('x') === '5x4')).toBe(true);
    const out = g.find((n) => n.kind === 'output')!;
    expect(g.find((n) => n.id === out.from[0])!.label).toBe('sumBackward');
    const dot = makeDot(y, { params: net.namedParameters() });
    expect(dot.startsWith('digraph autograd {')).toBe(true);
    expect(dot).toContain('label="0.weight\\n(3, 4)", shape=box, style=filled, fillcolor="#add8e6"');
    expect(dot).toMatch(/-> g\d+ \[style=dashed, dir=none\];/);
    expect(makeDot(y, { showSaved: false })).not.toContain('#ffa500');
    expect(() => makeDot([1 as unknown as Tensor])).toThrow(/makeDot: output 0 is not a Tensor/);
  });
});
