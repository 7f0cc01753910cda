// The CPU arena: planned intermediates (compiler pass plan-memory) live in slots a model keeps
// run after run. Checked here: slots are reused within a run and across runs (a second run at the
// same size allocates nothing), the reported peak is the bytes the arena and the unplanned buffers
// really hold, views and in-place results stay correct, outputs of one run survive the next, a
// wrong or stale plan cannot corrupt results, concurrent runs do not share slots, and the plan
// names values by their SSA id in the file.

import { describe, expect, it } from 'vitest';
import {
  decodeTsgraph, encodeTsgraph, Graph, GraphBuilder, MEMORY_PLAN_KEY, nameValues, tensorType, valueIds,
  type TypedArray, type Value,
} from '@kiln/ir-spec';
import { createCpuDevice, createModel, type Device, type Output } from '@kiln/runtime';
import { values } from './helpers/rng.js';
import { PASSES } from '@kiln/compiler';
import { fusedFrom } from './helpers/fused.js';

const planMemory = PASSES['plan-memory'];

const input = (n: number, w: number, seed: number) => ({ data: values(n * w, seed), shape: [n, w], dtype: 'float32' as const });

/** A CPU device that records what it allocates: arena growth, and kernel results in offered
 * slots or in fresh buffers (a view of an input is neither). */
function spyDevice() {
  const cpu = createCpuDevice();
  const arenas: { bytes: number }[] = [];
  const seen = { offered: 0, landed: 0, fresh: 0 };
  const device: Device<TypedArray> = {
    ...cpu,
    dispatch(op, inputs, attrs, dims, kernel, out) {
      const outs = cpu.dispatch(op, inputs, attrs, dims, kernel, out);
      outs.forEach((o, i) => {
        if (out?.[i]) { seen.offered++; if (o === out[i]) seen.landed++; } else if (!inputs.some((t) => t?.buffer === o.buffer)) seen.fresh++;
      });
      return outs;
    },
    createArena() {
      const a = cpu.createArena!();
      arenas.push(a);
      return a;
    },
  };
  return { device, arenas, seen };
}

/** x → exp → relu (in place) → reshape (a view) → sum → neg → tanh (in place), and a second output. */
function chain(): Graph {
  const b = new GraphBuilder('chain');
  const x = b.input('x', tensorType('float32', ['N', 16]));
  const e = b.op1('exp', [x]);
  const r = b.op1('relu', [e]);
  const v = b.op1('reshape', [r], { shape: ['N', 4, 4] });
  const s = b.op1('sum', [v], { dim: [2], keepdim: false });
  b.output('y', b.op1('tanh', [b.op1('neg', [s])]));
  b.output('z', b.op1('mul', [v, b.literal(2)])); // keeps the view (and so relu's slot) alive to the end
  return b.build();
}

function sameOutputs(got: readonly Output[], want: readonly Output[]): void {
  expect(got.map((o) => o.shape)).toEqual(want.map((o) => o.shape));
  got.forEach((o, i) => expect(Array.from(o.data)).toEqual(Array.from(want[i].data)));
}

describe('runtime: the CPU arena', () => {
  it('serves planned results from slots: the peak is the arena, and a second run allocates nothing', () => {
    const g = planMemory(chain());
    const { device, arenas, seen } = spyDevice();
    const model = createModel(g, { device });
    const plain = createModel(chain());
    const x = input(8, 16, 1);
    sameOutputs(model.runSync([x]), plain.runSync([x]));
    expect(arenas).toHaveLength(1);
    const arena = arenas[0];
    // Every tensor op's result is planned (the reshape is a view of relu's slot).
    expect(seen.fresh).toBe(0);
    expect(seen.landed).toBe(seen.offered);
    // Measured: the arena's ArrayBuffers are all the intermediate memory the run held.
    expect(model.stats!.peakIntermediateBytes).toBe(arena.bytes);
    expect(model.stats!.peakIntermediateBytes).toBeLessThan(plain.stats!.peakIntermediateBytes + 1);
    // Slots are reused: fewer bytes than one buffer per value.
    expect(arena.bytes).toBeLessThan(model.stats!.totalIntermediateBytes);
    const before = arena.bytes;
    const y = input(8, 16, 2);
    sameOutputs(model.runSync([y]), plain.runSync([y]));
    expect(arena.bytes).toBe(before);
    expect(model.stats!.peakIntermediateBytes).toBe(before);
    // A smaller batch fits in the same slots; a larger one grows them.
    sameOutputs(model.runSync([input(2, 16, 3)]), plain.runSync([input(2, 16, 3)]));
    expect(arena.bytes).toBe(before);
    sameOutputs(model.runSync([input(32, 16, 4)]), plain.runSync([input(32, 16, 4)]));
    expect(arena.bytes).toBeGreaterThan(before);
    expect(model.stats!.peakIntermediateBytes).toBe(arena.bytes);
  });

  it('keeps the outputs of one run when the next run reuses their slots', () => {
    const model = createModel(planMemory(chain()));
    const first = model.runSync([input(4, 16, 5)]);
    const kept = first.map((o) => Array.from(o.data));
    model.runSync([input(4, 16, 6)]);
    first.forEach((o, i) => expect(Array.from(o.data)).toEqual(kept[i]));
  });

  it('writes a fused elementwise result in place over its dying input, through the kernel', () => {
    const b = new GraphBuilder('fused');
    const x = b.input('x', tensorType('float32', ['N', 64]));
    const e = b.op1('exp', [x]);
    const f = fusedFrom(b, [e, x], [['mul', 'x0', 2], ['add', 't0', 'x1'], ['relu', 't1']]);
    b.output('y', b.op1('neg', [f]));
    const g = planMemory(b.build());
    const plan = JSON.parse(g.metadata[MEMORY_PLAN_KEY]) as { slots: Record<string, number>; in_place: number[] };
    const ids = valueIds(g);
    expect(plan.in_place).toContain(ids.get(f));
    expect(plan.slots[String(ids.get(f))]).toBe(plan.slots[String(ids.get(e))]);
    const { device, seen } = spyDevice();
    const model = createModel(g, { device });
    const xs = input(3, 64, 7);
    sameOutputs(model.runSync([xs]), createModel(b.build()).runSync([xs]));
    expect(seen.landed).toBe(3);
  });

  it('never hands out a slot a live value still holds, so a wrong plan cannot change results', () => {
    // Put every value in slot 0 and claim every result is in place: only the runtime's check stands
    // between this plan and overwritten inputs (exp's result is still read by mul and add).
    // A constant in the plan too: constants are pinned, never a slot's occupant nor written.
    const b = new GraphBuilder('wrong');
    const x = b.input('x', tensorType('float32', ['N', 8]));
    const c = b.literal(3);
    const e = b.op1('exp', [x]);
    const m = b.op1('mul', [e, e]);
    const a = b.op1('add', [m, e]);
    const k = b.op1('mul', [a, c]);
    b.output('y', b.op1('sub', [k, e]));
    const g = b.build();
    const ids = valueIds(g);
    const planned = [c, e, m, a, k];
    const plan = { version: 2, slots: Object.fromEntries(planned.map((v) => [String(ids.get(v)), 0])), in_place: planned.map((v) => ids.get(v)) };
    const wrong = new Graph(g.name, g.inputs, g.body, g.outputs, g.tensors, { [MEMORY_PLAN_KEY]: JSON.stringify(plan) });
    const xs = input(2, 8, 9);
    const model = createModel(wrong);
    for (let r = 0; r < 3; r++) sameOutputs(model.runSync([xs]), createModel(g).runSync([xs]));
  });

  it('does not write a result in place over a broadcast input, whatever the plan says', () => {
    // y = relu(x·2 + s) with s = exp(w), w: [1, 16] broadcast over x: [N, 16]. A forged plan puts
    // s and y in one slot, y in place. From the second run on, the slot is large enough for y, so
    // only the runtime's check keeps fused_elementwise from overwriting s while it still reads it.
    const b = new GraphBuilder('broadcast');
    const x = b.input('x', tensorType('float32', ['N', 16]));
    const w = b.input('w', tensorType('float32', [1, 16]));
    const s = b.op1('exp', [w]);
    const y = fusedFrom(b, [x, s], [['mul', 'x0', 2], ['add', 't0', 'x1'], ['relu', 't1']]);
    b.output('y', b.op1('neg', [y]));
    const g = b.build();
    const ids = valueIds(g);
    const plan = { version: 2, slots: { [String(ids.get(s))]: 0, [String(ids.get(y))]: 0 }, in_place: [ids.get(y)] };
    const forged = createModel(new Graph(g.name, g.inputs, g.body, g.outputs, g.tensors, { [MEMORY_PLAN_KEY]: JSON.stringify(plan) }));
    const ins = [input(4, 16, 1), input(1, 16, 2)];
    for (let k = 0; k < 3; k++) sameOutputs(forged.runSync(ins), createModel(g).runSync(ins));
  });

  it('gives concurrent runs of one model separate memory', async () => {
    const model = createModel(planMemory(chain()));
    const plain = createModel(chain());
    const xs = [1, 2, 3].map((s) => input(4, 16, 10 + s));
    const got = await Promise.all(xs.map((x) => model.run([x])));
    got.forEach((outs, k) => sameOutputs(outs, plain.runSync([xs[k]])));
  });

  it('still reads a version 1 plan (older files), which names values as the text form prints them', () => {
    const g = chain();
    const v2 = JSON.parse(planMemory(g).metadata[MEMORY_PLAN_KEY]) as { slots: Record<string, number>; in_place: number[] };
    const ids = valueIds(g), names = nameValues(g);
    const nameOf = new Map([...ids].map(([v, id]) => [String(id), names.get(v)!]));
    const v1 = { version: 1, slots: Object.fromEntries(Object.entries(v2.slots).map(([id, s]) => [nameOf.get(id), s])), in_place: v2.in_place.map((id) => nameOf.get(String(id))) };
    const old = new Graph(g.name, g.inputs, g.body, g.outputs, g.tensors, { [MEMORY_PLAN_KEY]: JSON.stringify(v1) });
    const { device, seen } = spyDevice();
    const model = createModel(old, { device });
    const x = input(4, 16, 3);
    sameOutputs(model.runSync([x]), createModel(g).runSync([x]));
    expect(seen.fresh).toBe(0);
    expect(seen.landed).toBeGreaterThan(0);
  });

  it('names values by the SSA id the .tsgraph file gives them', () => {
    const g = planMemory(chain());
    const bytes = encodeTsgraph(g);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(24, 24 + Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(16, true)))));
    const fileIds = (header.graph.nodes as { outputs: { id: number }[] }[]).flatMap((n) => n.outputs.map((o) => o.id));
    const ids = valueIds(g);
    expect(g.body.nodes.flatMap((n) => n.outputs.map((o: Value) => ids.get(o)))).toEqual(fileIds);
    expect(header.plan.version).toBe(2);
    // The decoded graph (fresh Value objects, same ids) is planned the same way.
    const decoded = decodeTsgraph(bytes).graph;
    const { device, seen } = spyDevice();
    createModel(decoded, { device }).runSync([input(2, 16, 1)]);
    expect(seen.fresh).toBe(0);
  });
});

describe('shape inference reused across runs', () => {
  // The executor reuses a node's last shape inference while its inputs keep their dtypes and
  // shapes; a run at another batch size (or with a shape that makes the rule fail) must not see
  // the cached result.
  it('follows the batch size from run to run, and still refuses a bad shape after good runs', () => {
    const b = new GraphBuilder('batches');
    const x = b.input('x', tensorType('float32', ['N', 6]));
    const r = b.op1('reshape', [b.op1('relu', [x])], { shape: ['N', 2, 3] });
    b.output('y', b.op1('sum', [r], { dim: [2], keepdim: false }));
    const model = createModel(b.build());
    for (const n of [1, 4, 1, 7, 4]) {
      const xs = input(n, 6, n);
      const [y] = model.runSync([xs]);
      expect(y.shape).toEqual([n, 2]);
      const want = Array.from({ length: n * 2 }, (_, i) => [0, 1, 2].reduce((s, k) => s + Math.max(0, xs.data[i * 3 + k]), 0));
      want.forEach((v, i) => expect(y.data[i]).toBeCloseTo(v, 5));
    }
    expect(() => model.runSync([input(2, 5, 9)])).toThrow(/x|shape|6/);
    expect(model.runSync([input(2, 6, 9)])[0].shape).toEqual([2, 2]);
  });
});
