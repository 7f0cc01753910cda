// One op, one entry: what passes, code generators and devices know about an op is derived from
// its ir-spec entry. This test joins the entries to the WGSL templates (every elementwise entry
// has exactly one way to be generated: a primitive scalar with a template in
// compiler/src/codegen/ops, or a formula compiled from the entry), checks each entry's scalar
// against its own CPU kernel (hot loops included), and checks that every derived table (views,
// data-dependent dims, epilogue activations, fusable ops, kernels) equals what the entries say.

import { describe, expect, it } from 'vitest';
import {
  allOps, elementwiseOps, epilogueActivations, fusableOps, getOp, isFusable, isNonDecreasing, isViewNode, isViewOp,
  allocate, dataDimsOf, GraphBuilder, hasElementBody, parseOpAttrs, programToBody, scalarOf, tensorType, verifyGraph, walkNodes, type CpuTensor, type DType, type TypedArray,
} from '@kiln/ir-spec';
import { castArray } from '../ir-spec/src/kernels/broadcast.js';
import { KERNELS, kernelFor } from '../compiler/src/codegen/index.js';
import { TEMPLATES } from '../compiler/src/codegen/ops/index.js';
import { activation, activationHelpers } from '../compiler/src/codegen/epilogue.js';

const SPECIAL = [-Infinity, -1e30, -7.5, -3, -2.5, -1, -0.5, -1e-40, -0, 0, 1e-40, 0.25, 0.5, 1, 2, 3, 3.5, 6, 9, 1e30, Infinity, NaN];
const INTS = [-2147483648, -7, -3, -1, 0, 1, 2, 3, 6, 100];

const tensorOf = (dtype: DType, values: readonly number[]): CpuTensor => ({ dtype, shape: [values.length], data: castArray(Float64Array.from(values) as unknown as TypedArray, dtype) });

/** Attributes each elementwise op with attrs is checked with. */
const ATTRS: Record<string, Record<string, unknown>[]> = {
  clamp: [{ min: -0.5, max: 0.25 }, { min: null, max: 1 }, { min: 2, max: 1 }, { min: 0, max: null }],
  cast: [{ dtype: 'int32' }, { dtype: 'bool' }, { dtype: 'float32' }],
};

/** Inputs each elementwise op is checked on (all pairs of values for two inputs). */
function inputSets(op: string, arity: number): CpuTensor[][] {
  if (op === 'where') return [[tensorOf('bool', [1, 0, 1, 0]), tensorOf('float32', [1, 2, NaN, -0]), tensorOf('float32', [5, -0, 7, NaN])]];
  const sets: CpuTensor[][] = [];
  for (const [dtype, vals] of [['float32', SPECIAL], ['int32', INTS], ['bool', [0, 1]]] as const) {
    if (arity === 1) sets.push([tensorOf(dtype, vals)]);
    else sets.push([tensorOf(dtype, vals.flatMap((a) => vals.map(() => a))), tensorOf(dtype, vals.flatMap(() => vals))]);
  }
  return sets;
}

const same = (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b));

describe('elementwise entries', () => {
  it('every elementwise entry has exactly one way to be generated: a primitive with a WGSL template, or a formula', () => {
    const ew = elementwiseOps();
    expect(ew.length).toBeGreaterThan(25);
    for (const d of ew) {
      expect(d.scalar, `${d.name} has a scalar`).toBeDefined();
      const primitive = 'primitive' in d.scalar!;
      expect(TEMPLATES.has(d.name), `${d.name}: ${primitive ? 'a primitive needs a template' : 'a formula must not have a template'}`).toBe(primitive);
    }
    for (const op of TEMPLATES.keys()) expect(ew.map((d) => d.name), `template '${op}' belongs to an elementwise entry`).toContain(op);
    // Non-elementwise ops carry no scalar (it would be ignored).
    for (const d of allOps()) if (!d.elementwise) expect(d.scalar, d.name).toBeUndefined();
  });

  for (const d of elementwiseOps()) {
    it(`${d.name}: its CPU kernel stores what its scalar computes, on special values and every dtype`, () => {
      for (const attrs of ATTRS[d.name] ?? [{}]) {
        const parsed = parseOpAttrs(d.name, attrs);
        const f = scalarOf(d.name, parsed);
        for (const ins of inputSets(d.name, d.inputs.length)) {
          if (d.name === 'pow' && ins[0].dtype !== 'float32') continue; // int ** negative int is an error, not a value
          const [y] = d.cpu(ins, parsed);
          const values = Float64Array.from({ length: y.data.length }, (_, i) => f(...ins.map((t) => t.data[i]))) as unknown as TypedArray;
          // Kernels store by typed-array assignment; cast's store is the conversion itself.
          const want = d.name === 'cast' ? castArray(values, y.dtype) : (() => { const o = allocate(y.dtype, values.length); o.set(values); return o; })();
          for (let i = 0; i < want.length; i++) {
            if (!same(y.data[i], want[i])) expect.fail(`${d.name} ${JSON.stringify(attrs)} on ${ins.map((t) => `${t.dtype} ${t.data[i]}`).join(', ')}: kernel ${y.data[i]}, scalar ${want[i]}`);
          }
        }
      }
    });
  }

  it('compiles each scalar primitive with its meaning (independently of the kernels above)', () => {
    const cases: [string, number[], number][] = [
      ['add', [-2, -3], -5], ['sub', [-2, -3], 1], ['mul', [-2, -3], 6], ['div', [-3, 2], -1.5], ['neg', [2], -2],
      ['maximum', [-2, -3], -2], ['minimum', [-2, -3], -3], ['maximum', [-1, NaN], NaN], ['minimum', [NaN, -1], NaN],
      ['eq', [-1, -1], 1], ['ne', [-1, -1], 0], ['lt', [-2, -1], 1], ['le', [-1, -1], 1], ['gt', [-2, -1], 0], ['ge', [-2, -1], 0],
      ['logical_not', [-0], 1], ['clone', [-7], -7],
    ];
    for (const [op, xs, want] of cases) expect(scalarOf(op)(...xs), `${op}(${xs})`).toBe(want);
  });

  it('the default kernel of a composite entry (block-wise formula loops) equals its scalar over several blocks', () => {
    const n = 2500; // two full blocks of 1024 and a partial one
    const x = tensorOf('float32', Array.from({ length: n }, (_, i) => (i - n / 2) / 97));
    const composites = elementwiseOps().filter((e) => e.inputs.length === 1 && 'formula' in e.scalar! && !ATTRS[e.name]);
    expect(composites.map((d) => d.name)).toEqual(expect.arrayContaining(['rsqrt', 'logical_not']));
    for (const d of composites) {
      const f = scalarOf(d.name), [y] = d.cpu([x], {});
      const want = allocate(y.dtype, n);
      for (let i = 0; i < n; i++) want[i] = f(x.data[i]);
      for (let i = 0; i < n; i++) if (!same(y.data[i], want[i])) expect.fail(`${d.name}(${x.data[i]}) = ${y.data[i]}, scalar ${want[i]}`);
    }
  });

  it('composite scalars compile from the formula (rsqrt = 1/sqrt, clamp from select)', () => {
    expect(scalarOf('rsqrt')(4)).toBe(0.5);
    expect(scalarOf('clamp', { min: 0, max: 6 })(7)).toBe(6);
    expect(Number.isNaN(scalarOf('clamp', { min: 0, max: 6 })(NaN))).toBe(true);
  });
});

describe('tables derived from the entries', () => {
  it('KERNELS gives every elementwise entry the elementwise shell', () => {
    for (const d of elementwiseOps()) expect(KERNELS[d.name], d.name).toBe(KERNELS.add);
  });

  it('views are the entries with a `view` field, and have no kernel', () => {
    const views = allOps().filter((d) => d.view).map((d) => d.name).sort();
    expect(views).toEqual(['dropout', 'reshape']);
    for (const d of allOps()) expect(isViewOp(d.name), d.name).toBe(!!d.view);
    for (const op of views) expect(KERNELS[op], op).toBeUndefined();
    expect(isViewNode('dropout', { p: 0.5, training: false })).toBe(true);
    expect(isViewNode('dropout', { p: 0.5, training: true })).toBe(false);
    expect(isViewNode('relu', {})).toBe(false);
  });

  it('data-dependent dims come from the entry (masked_select)', () => {
    expect(allOps().filter((d) => d.dataDims).map((d) => d.name)).toEqual(['masked_select']);
    const rule = dataDimsOf('masked_select')!;
    expect(rule.reads).toEqual([1]);
    // x [2, 3] with mask [3] = [1, 0, 1]: 4 elements selected.
    expect(rule.dims([{ shape: [2, 3] }, { shape: [3] }], [Uint8Array.from([1, 0, 1])])).toEqual({ nnz: 4 });
    expect(dataDimsOf('relu')).toBeUndefined();
  });

  it('epilogue activations are the entries with `epilogue`: one float input, no attrs, accepted by fused_conv2d/fused_linear', () => {
    const acts = epilogueActivations();
    expect(acts).toEqual(expect.arrayContaining(['relu', 'sigmoid', 'tanh']));
    expect(acts).toEqual(allOps().filter((d) => d.epilogue).map((d) => d.name).sort());
    for (const act of acts) {
      expect(isFusable(act), `${act} is a float map without attrs`).toBe(true);
      expect(getOp(act).inputs.length, act).toBe(1);
      expect(parseOpAttrs('fused_linear', { activation: act })).toEqual({ activation: act });
      expect(activation(act, 'x + b'), act).toMatch(/\(x \+ b\)/);
      if (!('primitive' in getOp(act).scalar!)) expect(activationHelpers(act), act).toContain(`fn k_${act}(`);
    }
    expect(() => parseOpAttrs('fused_linear', { activation: 'exp' })).toThrow(/epilogue/);
  });

  it('activations marked non-decreasing are non-decreasing, so fused_conv2d may pool first', () => {
    const grid = Array.from({ length: 2001 }, (_, i) => (i - 1000) / 50);
    for (const act of epilogueActivations()) {
      const f = scalarOf(act);
      const monotone = grid.every((x, i) => i === 0 || f(x) >= f(grid[i - 1]));
      if (isNonDecreasing(act)) expect(monotone, act).toBe(true);
      if (!monotone) expect(isNonDecreasing(act), act).toBe(false);
    }
  });

  it('element bodies: only fused_elementwise owns one; every fusable op runs in a body through its entry on both backends, and walkers skip the body', () => {
    expect(allOps().filter((d) => d.elementBody).map((d) => d.name)).toEqual(['fused_elementwise']);
    for (const op of fusableOps()) {
      const n = getOp(op).inputs.length;
      const body = programToBody([[op, ...Array.from({ length: n }, (_, i) => `x${i}`)]], n);
      const f = { dtype: 'float32' as const, rank: 2 };
      const r = kernelFor('fused_elementwise', Array.from({ length: n }, () => f), [f], {}, 'k', {}, [body]);
      if (!('key' in r)) expect.fail(`${op} in an element body has no WGSL: ${r.reason}`);
      expect(r.key, op).toContain(`"${op}"`);
    }
    const b = new GraphBuilder('g');
    const x = b.input('x', tensorType('float32', ['N', 4]));
    b.output('y', b.fusedElementwise([x], ([e]) => b.op1('sigmoid', [b.op1('erf', [e])])));
    const g = b.build();
    verifyGraph(g);
    expect([...walkNodes(g.body)].map((m) => m.op)).toEqual(['fused_elementwise']);
    expect(hasElementBody(g.body.nodes[0])).toBe(true);
    expect(g.body.nodes[0].regions[0].nodes.map((m) => m.op)).toEqual(['erf', 'sigmoid']);
  });

  it('fusable ops are the attribute-free float elementwise entries, and fused_elementwise runs each through its scalar', () => {
    const fusable = fusableOps();
    expect(fusable).toEqual(expect.arrayContaining(['erf', 'sign', 'rsqrt', 'maximum', 'pow']));
    for (const op of ['eq', 'logical_not', 'clamp', 'where', 'cast']) expect(fusable, op).not.toContain(op);
    const x = tensorOf('float32', SPECIAL.filter((v) => Number.isFinite(v)));
    for (const op of fusable) {
      const ins = getOp(op).inputs.map(() => x);
      const body = programToBody([[op, ...ins.map((_, i) => `x${i}`)]], ins.length);
      const [got] = getOp('fused_elementwise').cpu(ins, {}, { regions: [body] });
      const [want] = getOp(op).cpu(ins, {});
      for (let i = 0; i < want.data.length; i++) if (!same(got.data[i], want.data[i])) expect.fail(`${op}(${x.data[i]}): fused ${got.data[i]}, op ${want.data[i]}`);
    }
  });
});
