// Rewrites never pull a producer from outside a `loop` body into it (where it would be
// recomputed every trip): regression tests for matching across region boundaries, through the
// passes as the pipeline runs them, with the interpreter as the numeric oracle.

import { describe, expect, it } from 'vitest';
import { hasElementBody, parseGraph, printGraph, verifyGraph, walkNodes, type Graph, type Node, type TensorData } from '@kiln/ir-spec';
import { createModel } from '@kiln/runtime';
import { runPass, runPipeline } from '@kiln/compiler';

const x: TensorData = { dtype: 'float32', shape: [2, 4], data: Float32Array.from([0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8]) };
const w: TensorData = { dtype: 'float32', shape: [4, 4], data: Float32Array.from({ length: 16 }, (_, i) => ((i * 7) % 5) / 5 - 0.4) };

/** Whether `n` is, or (as a fused node: its attributes or its element body) computes, op `name`. */
const computes = (n: Node, name: string) => n.op === name || (n.op.startsWith('fused_') && JSON.stringify(n.attrs).includes(`"${name}"`)) || (n.op === `fused_${name}`)
  || (hasElementBody(n) && n.regions[0].nodes.some((m) => m.op === name));
const loopOf = (g: Graph) => g.body.nodes.find((n) => n.op === 'loop')!;
const inLoop = (g: Graph, name: string) => [...walkNodes(loopOf(g).regions[0])].some((n) => computes(n, name));
const atTop = (g: Graph, name: string) => g.body.nodes.some((n) => computes(n, name));

function expectSameNumbers(before: Graph, after: Graph): void {
  const want = createModel(before).runSync([x])[0].data, got = createModel(after).runSync([x])[0].data;
  for (let i = 0; i < want.length; i++) expect(Math.abs(Number(got[i]) - Number(want[i]))).toBeLessThanOrEqual(1e-6 + 1e-5 * Math.abs(Number(want[i])));
}

describe('a single-use producer outside a loop stays outside', () => {
  it('fuse-elementwise does not absorb exp(%x) into the loop body', () => {
    const g = parseGraph(`graph @ew_loop(%x: f32[N,4]) -> (y: f32[N,4]) {
  %0 = scalar() {dtype="int32", value=3} : i32
  %1 = exp(%x) : f32[N,4]
  %2 = loop(%0, none, %x) ({
  ^(%i: i32, %3: f32[N,4]):
    %4 = add(%3, %1) : f32[N,4]
    %5 = tanh(%4) : f32[N,4]
    %6 = scalar() {dtype="bool", value=true} : bool
    yield %6, %5
  }) : f32[N,4]
  return y=%2
}`);
    const out = runPass('fuse-elementwise', g);
    verifyGraph(out);
    expect(inLoop(out, 'tanh'), printGraph(out)).toBe(true); // the body itself still fuses
    expect(inLoop(out, 'exp'), printGraph(out)).toBe(false);
    expect(atTop(out, 'exp'), printGraph(out)).toBe(true);
    expectSameNumbers(g, out);
  });

  it('fuse-epilogue does not absorb a linear outside the loop into a relu inside it', () => {
    const g = parseGraph(`graph @epi_loop(%x: f32[N,4]) -> (y: f32[N,4]) {
  %0 = constant() {name="w"} : f32[4,4]
  %1 = linear(%x, %0, none) : f32[N,4]
  %2 = scalar() {dtype="int32", value=2} : i32
  %3 = loop(%2, none, %x) ({
  ^(%i: i32, %4: f32[N,4]):
    %5 = relu(%1) : f32[N,4]
    %6 = add(%4, %5) : f32[N,4]
    %7 = scalar() {dtype="bool", value=true} : bool
    yield %7, %6
  }) : f32[N,4]
  return y=%3
}`, { tensors: new Map([['w', w]]) });
    for (const out of [runPass('fuse-epilogue', g), runPipeline(g, { level: 2 }).graph]) {
      verifyGraph(out);
      expect(inLoop(out, 'linear'), printGraph(out)).toBe(false);
      expect(atTop(out, 'linear'), printGraph(out)).toBe(true);
      expectSameNumbers(g, out);
    }
  });
});

describe('an element body is its node\'s own: no pass rewrites inside it or matches across it', () => {
  it('every -O2 pass, run again over a fused graph, leaves the element body as it is', () => {
    // mul(e, 1) and add(·, 0) are what canonicalize and fold-constants simplify elsewhere; the
    // body's ops are fusable, so a second fuse-elementwise must not nest a fused node inside it.
    const g = parseGraph(`graph @body(%x: f32[N,4]) -> (y: f32[N,4]) {
  %0 = fused_elementwise(%x) ({
  ^(%e: f32[]):
    %1 = constant() {dtype="float32", value=1} : f32[]
    %2 = mul(%e, %1) : f32[]
    %3 = constant() {dtype="float32", value=0} : f32[]
    %4 = add(%2, %3) : f32[]
    %5 = exp(%4) : f32[]
    %6 = tanh(%5) : f32[]
    yield %6
  }) : f32[N,4]
  %7 = relu(%0) : f32[N,4]
  return y=%7
}`);
    verifyGraph(g);
    const body = g.body.nodes[0].regions[0];
    for (const name of ['canonicalize', 'fold-constants', 'eliminate-common-subexpressions', 'fuse-epilogue', 'fuse-elementwise']) {
      const out = runPass(name, g);
      verifyGraph(out);
      const fused = out.body.nodes.filter((n) => n.op === 'fused_elementwise');
      expect(fused.length, `${name}\n${printGraph(out)}`).toBeGreaterThan(0);
      // fuse-elementwise absorbs the fused node into the relu's node, copying the body's nodes in order.
      const bodyOps = fused[fused.length - 1].regions[0].nodes.map((n) => n.op);
      expect(bodyOps.slice(0, body.nodes.length), name).toEqual(body.nodes.map((n) => n.op));
      if (name !== 'fuse-elementwise') expect(fused[0].regions[0], name).toBe(body);
      for (const n of fused) expect(n.regions[0].nodes.every((m) => m.regions.length === 0 && m.op !== 'fused_elementwise'), name).toBe(true);
      expectSameNumbers(g, out);
    }
    const o2 = runPipeline(g, { level: 2 }).graph;
    verifyGraph(o2);
    expect([...walkNodes(o2.body)].map((n) => n.op)).toEqual(['fused_elementwise']);
    expect(o2.body.nodes[0].regions[0].nodes.map((n) => n.op)).toEqual(['constant', 'mul', 'constant', 'add', 'exp', 'tanh', 'relu']);
    expectSameNumbers(g, o2);
  });
});
