// Symbolic shape inference through every op (issue 3): a batch `N` stays `N` through every op of
// the registry. The table must name every registered op — a new op without an entry fails the
// coverage test — with input types, attributes and the expected result types in text form
// (attribute-free one-input elementwise ops get the plain unary case from their entry).
// Then the symbolic dim algebra (ir/dims.ts), the rules that need it (reshape's -1, cat along a
// symbolic dim, slices, window arithmetic) and bindSymbols.

import { describe, it, expect } from 'vitest';
import {
  allOps, bindSymbols, BindError, canonicalDim, DTYPE_FROM_SHORT, dimAdd, dimDivExact, dimFloorDiv, dimEquals, dimMul, dimSub, evalDim,
  GraphBuilder, inferTypes, isCanonicalDim, OpError, parseDim, DimError, sliceDim, tensorType, typeToString, walkNodes,
  programToBody, type Attrs, type Block, type Dim, type IRType,
} from '@kiln/ir-spec';

/** `f32[N,3,8,8]` → a tensor type (dims read with parseDim, so they come out canonical). */
function ty(text: string): IRType {
  const m = /^(f32|f16|bf16|i32|i8|bool)\[(.*)\]$/.exec(text);
  if (!m) throw new Error(`bad type text ${text}`);
  const dims: Dim[] = m[2] === '' ? [] : m[2].split(',').map((d) => (/^\d+$/.test(d) ? Number(d) : parseDim(d)));
  return tensorType(DTYPE_FROM_SHORT[m[1]], dims);
}

const infer = (op: string, inputs: (string | null)[], attrs: Attrs = {}, regions: readonly Block[] = []): string =>
  inferTypes(op, inputs.map((t) => (t === null ? null : ty(t))), attrs, { tensors: new Map() }, regions).types.map(typeToString).join(', ');

/** `regions`: an element body (fused_elementwise). */
interface Case { inputs: (string | null)[]; attrs?: Attrs; regions?: () => Block[]; out: string }

const X = 'f32[N,4]', B4 = 'f32[4]';
const binary: Case = { inputs: [X, B4], out: 'f32[N,4]' };
const compare: Case = { inputs: [X, 'f32[1,4]'], out: 'bool[N,4]' };
const unary: Case = { inputs: [X], out: 'f32[N,4]' };
const A3 = 'f32[N,4,5]';

/** One example per op: every input batched by the symbol N. */
const LISTED: Record<string, Case> = {
  add: binary, sub: binary, mul: binary, maximum: binary, minimum: binary, pow: binary,
  div: { inputs: ['i32[N,4]', 'i32[4]'], out: 'f32[N,4]' },
  eq: compare, ne: compare, lt: compare, le: compare, gt: compare, ge: compare,
  abs: unary, clone: unary, cos: unary, erf: unary, exp: unary, log: unary, neg: unary, relu: unary, rsqrt: unary,
  sigmoid: unary, sign: unary, sin: unary, sqrt: unary, tanh: unary, dropout: { inputs: [X], attrs: { p: 0.5 }, out: 'f32[N,4]' },
  logical_not: { inputs: [X], out: 'bool[N,4]' },
  clamp: { inputs: ['i32[N,4]'], attrs: { min: 0.5 }, out: 'f32[N,4]' },
  cast: { inputs: [X], attrs: { dtype: 'int32' }, out: 'i32[N,4]' },
  where: { inputs: ['bool[N,1]', X, B4], out: 'f32[N,4]' },

  sum: { inputs: [A3], attrs: { dim: [1] }, out: 'f32[N,5]' },
  prod: { inputs: ['bool[N,4,5]'], attrs: { dim: [1, 2] }, out: 'i32[N]' },
  amax: { inputs: [A3], attrs: { dim: 1, keepdim: true }, out: 'f32[N,1,5]' },
  amin: { inputs: [A3], attrs: { dim: -1 }, out: 'f32[N,4]' },
  argmax: { inputs: [A3], attrs: { dim: 1 }, out: 'i32[N,5]' },
  argmin: { inputs: [A3], attrs: { dim: 2, keepdim: true }, out: 'i32[N,4,1]' },
  cumsum: { inputs: [A3], attrs: { dim: 0 }, out: 'f32[N,4,5]' },

  reshape: { inputs: ['f32[N,128,8,8]'], attrs: { shape: [-1, 8192] }, out: 'f32[N,8192]' },
  expand: { inputs: ['f32[N,1,4]'], attrs: { shape: [-1, 3, 4] }, out: 'f32[N,3,4]' },
  permute: { inputs: [A3], attrs: { dims: [2, 0, 1] }, out: 'f32[5,N,4]' },
  slice: { inputs: ['f32[N,10]'], attrs: { dim: 1, start: 2, end: 5 }, out: 'f32[N,3]' },
  slice_backward: { inputs: ['f32[N,3]'], attrs: { shape: ['N', 10], dim: 1, start: 2, end: 5 }, out: 'f32[N,10]' },
  cat: { inputs: ['f32[N,3]', 'i32[N,5]'], attrs: { dim: 1 }, out: 'f32[N,8]' },
  flip: { inputs: [A3], attrs: { dims: [0, 2] }, out: 'f32[N,4,5]' },

  index_select: { inputs: ['f32[N,10]', 'i32[3]'], attrs: { dim: 1 }, out: 'f32[N,3]' },
  index_add: { inputs: ['f32[N,10]', 'i32[3]', 'f32[N,3]'], attrs: { dim: 1 }, out: 'f32[N,10]' },
  gather: { inputs: ['f32[N,10]', 'i32[N,2]'], attrs: { dim: 1 }, out: 'f32[N,2]' },
  scatter_add: { inputs: ['f32[N,10]', 'i32[N,2]', 'f32[N,2]'], attrs: { dim: 1 }, out: 'f32[N,10]' },
  // The selected count is data dependent: the symbol nnz, known only when the kernel runs.
  masked_select: { inputs: [X, 'bool[N,4]'], out: 'f32[nnz]' },
  masked_scatter: { inputs: [X, 'bool[4]', 'f32[nnz]'], out: 'f32[N,4]' },
  tril: { inputs: ['f32[N,4,4]'], out: 'f32[N,4,4]' },
  triu: { inputs: ['f32[N,4,4]'], attrs: { diagonal: 1 }, out: 'f32[N,4,4]' },

  matmul: { inputs: ['f32[N,3,4]', 'f32[4,5]'], out: 'f32[N,3,5]' },
  linear: { inputs: ['f32[N,4]', 'f32[5,4]', 'f32[5]'], out: 'f32[N,5]' },

  conv2d: { inputs: ['f32[N,3,32,32]', 'f32[8,3,3,3]', 'f32[8]'], attrs: { padding: [1, 1, 1, 1] }, out: 'f32[N,8,32,32]' },
  fused_conv2d: { inputs: ['f32[N,3,32,32]', 'f32[8,3,3,3]', 'f32[8]'], attrs: { padding: [1, 1, 1, 1], activation: 'relu' }, out: 'f32[N,8,32,32]' },
  fused_linear: { inputs: ['f32[N,4]', 'f32[5,4]', 'f32[5]'], attrs: { activation: 'relu' }, out: 'f32[N,5]' },
  fused_elementwise: { inputs: ['f32[N,4]', 'f32[4]'], regions: () => [programToBody([['mul', 'x0', 2], ['add', 't0', 'x1'], ['relu', 't1']], 2)], out: 'f32[N,4]' },
  conv_transpose2d: { inputs: ['f32[N,8,16,16]', 'f32[8,4,2,2]', null], attrs: { stride: [2, 2] }, out: 'f32[N,4,32,32]' },
  conv2d_weight_grad: { inputs: ['f32[N,3,8,8]', 'f32[N,8,6,6]'], attrs: { kernel_size: [3, 3] }, out: 'f32[8,3,3,3]' },
  max_pool2d: { inputs: ['f32[N,8,32,32]'], attrs: { kernel_size: [2, 2], stride: [2, 2] }, out: 'f32[N,8,16,16], i32[N,8,16,16]' },
  adaptive_max_pool2d: { inputs: ['f32[N,8,7,7]'], attrs: { output_size: [1, 1] }, out: 'f32[N,8,1,1], i32[N,8,1,1]' },
  avg_pool2d: { inputs: ['f32[N,8,32,32]'], attrs: { kernel_size: [3, 3], stride: [2, 2], padding: [1, 1] }, out: 'f32[N,8,16,16]' },
  avg_pool2d_backward: { inputs: ['f32[N,8,16,16]'], attrs: { kernel_size: [2, 2], stride: [2, 2], input_size: [32, 32] }, out: 'f32[N,8,32,32]' },
  adaptive_avg_pool2d: { inputs: ['f32[N,8,7,7]'], attrs: { output_size: [1, 1] }, out: 'f32[N,8,1,1]' },
  adaptive_avg_pool2d_backward: { inputs: ['f32[N,8,1,1]'], attrs: { input_size: [7, 7] }, out: 'f32[N,8,7,7]' },
  batch_norm: { inputs: ['f32[N,8,4,4]', 'f32[8]', 'f32[8]', 'f32[8]', null], out: 'f32[N,8,4,4]' },
  batch_norm_stats: { inputs: ['f32[N,8,4,4]'], out: 'f32[8], f32[8]' },
  batch_norm_backward: { inputs: ['f32[N,8,4,4]', 'f32[N,8,4,4]', 'f32[8]', 'f32[8]', 'f32[8]'], out: 'f32[N,8,4,4], f32[8], f32[8]' },
  quantized_linear: { inputs: ['f32[N,16]', 'i8[8,16]', 'f32[8]', 'f32[8]'], attrs: { reduceRange: true }, out: 'f32[N,8]' },
  uniform: { inputs: ['i32[N,4]'], out: 'f32[N,4]' },
  normal: { inputs: [null], attrs: { shape: ['N', 3] }, out: 'f32[N,3]' },
  isnan: { inputs: [X], out: 'bool[N,4]' },
  isfinite: { inputs: [X], out: 'bool[N,4]' },
  sort: { inputs: [A3], attrs: { dim: 1, descending: true }, out: 'f32[N,4,5], i32[N,4,5]' },
};

/** Attribute-free one-input elementwise entries need no row: `f32[N,4]` → `f32[N,4]` (derived from the entries). */
const CASES: Record<string, Case> = {
  ...Object.fromEntries(allOps()
    .filter((o) => o.elementwise && o.inputs.length === 1 && o.attrs.safeParse({}).success)
    .map((o) => [o.name, unary])),
  ...LISTED,
};

describe('symbolic shapes through every op', () => {
  it('has an example for every registered op', () => {
    const missing = allOps().map((o) => o.name).filter((n) => !(n in CASES));
    expect(missing, 'add a CASES entry for each new op').toEqual([]);
    const stale = Object.keys(CASES).filter((n) => !allOps().some((o) => o.name === n));
    expect(stale).toEqual([]);
  });
  for (const [op, c] of Object.entries(CASES)) {
    it(`${op}: ${c.inputs.map((t) => t ?? 'none').join(', ')} → ${c.out}`, () => {
      const out = infer(op, c.inputs, c.attrs, c.regions?.());
      expect(out).toBe(c.out);
      // Results are canonical (the verifier relies on it), and N survives.
      for (const t of inferTypes(op, c.inputs.map((s) => (s === null ? null : ty(s))), c.attrs ?? {}, { tensors: new Map() }, c.regions?.()).types) {
        if (t.kind === 'tensor') expect(t.shape.every(isCanonicalDim)).toBe(true);
      }
    });
  }
});

describe('the issue examples', () => {
  it('flatten(1) of f32[N,128,8,8] is f32[N,8192], however the shape is written', () => {
    for (const shape of [['N', 8192], [-1, 8192], ['N', -1], ['N*1', '8192']]) {
      expect(infer('reshape', ['f32[N,128,8,8]'], { shape })).toBe('f32[N,8192]');
    }
    expect(infer('reshape', ['f32[N,128,8,8]'], { shape: ['N*128', 64] })).toBe('f32[N*128,64]');
    expect(infer('reshape', ['f32[N,128,8,8]'], { shape: ['128*N', -1] })).toBe('f32[N*128,64]');
    expect(infer('reshape', ['f32[N,128,8,8]'], { shape: [-1] })).toBe('f32[N*8192]');
    expect(infer('reshape', ['f32[N*8192]'], { shape: [-1, 128, 8, 8] })).toBe('f32[N,128,8,8]');
    expect(infer('reshape', ['f32[B,T,64]'], { shape: [-1, 64] })).toBe('f32[B*T,64]');
    expect(infer('reshape', ['f32[B*T,64]'], { shape: ['B', -1, 64] })).toBe('f32[B,T,64]');
  });

  it('reshape errors name both shapes when -1 does not divide or the counts differ', () => {
    expect(() => infer('reshape', ['f32[N,128,8,8]'], { shape: [-1, 3] })).toThrow(/cannot infer the -1 in shape \[-1,3\] for input of shape \[N,128,8,8\]: its N\*8192 elements/);
    expect(() => infer('reshape', ['f32[N,128,8,8]'], { shape: ['N', 100] })).toThrow(/shape \[N,100\] is invalid for input of shape \[N,128,8,8\]: N\*100 elements vs N\*8192/);
    expect(() => infer('reshape', ['f32[4,8]'], { shape: ['N', -1] })).toThrow(OpError);
    expect(() => infer('reshape', ['f32[N,4]'], { shape: [-2, 4] })).toThrow(/invalid shape dimension/);
    expect(() => infer('reshape', ['f32[N,4]'], { shape: ['N**2', -1] })).toThrow(/reshape: invalid dim in shape \[N\*\*2,-1\]: dim 'N\*\*2' at character 2/);
    expect(() => infer('expand', ['f32[N,1]'], { shape: ['N', '2-3'] })).toThrow(/expand: invalid shape dimension '2-3'/);
  });

  it('a conv net keeps N: conv, relu, pool, flatten, linear built with GraphBuilder', () => {
    const b = new GraphBuilder('cnn');
    const x = b.input('x', tensorType('float32', ['N', 3, 32, 32]));
    const w = b.param('w', { dtype: 'float32', shape: [16, 3, 3, 3], data: new Float32Array(432) });
    const fc = b.param('fc', { dtype: 'float32', shape: [10, 4096], data: new Float32Array(40960) });
    const y = b.op1('relu', [b.op1('conv2d', [x, w, null], { padding: [1, 1, 1, 1] })]);
    const [p] = b.op('max_pool2d', [y], { kernel_size: [2, 2], stride: [2, 2] });
    const f = b.op1('reshape', [p], { shape: ['N', -1] });
    b.output('logits', b.op1('linear', [f, fc, null]));
    const g = b.build();
    expect([...walkNodes(g.body)].map((n) => typeToString(n.outputs[0].type))).toEqual([
      'f32[N,16,32,32]', 'f32[N,16,32,32]', 'f32[N,16,16,16]', 'f32[N,4096]', 'f32[N,10]',
    ]);
  });

  it('matmul keeps N and symbolic batch dims, and checks the inner dim symbolically', () => {
    expect(infer('matmul', ['f32[N,64]', 'f32[64,10]'])).toBe('f32[N,10]');
    expect(infer('matmul', ['f32[B,T,64]', 'f32[B,64,T]'])).toBe('f32[B,T,T]');
    expect(infer('matmul', ['f32[B,1,T,K]', 'f32[H,K,T]'])).toBe('f32[B,H,T,T]');
    expect(infer('matmul', ['f32[N,K]', 'f32[K]'])).toBe('f32[N]');
    expect(() => infer('matmul', ['f32[N,K]', 'f32[M,3]'])).toThrow(/inner dimensions K and M differ/);
    expect(infer('linear', ['f32[B,T,64]', 'f32[32,64]', null])).toBe('f32[B,T,32]');
  });
});

describe('rules that need the algebra', () => {
  it('broadcasts a symbol against 1 or itself, and refuses to guess otherwise', () => {
    expect(infer('add', ['f32[N,1]', 'f32[1,M]'])).toBe('f32[N,M]');
    expect(infer('add', ['f32[N*64]', 'f32[N*64]'])).toBe('f32[N*64]');
    expect(() => infer('add', ['f32[N,4]', 'f32[M,4]'])).toThrow(/dimension 0 is N vs M \(a symbolic dim broadcasts only against 1/);
    expect(() => infer('mul', ['f32[N]', 'f32[3]'])).toThrow(/N vs 3/);
  });

  it('cat along a symbolic dim gives the sum', () => {
    expect(infer('cat', ['f32[N,3]', 'f32[N,3]'], { dim: 0 })).toBe('f32[N*2,3]');
    expect(infer('cat', ['f32[N,3]', 'f32[M,3]', 'f32[2,3]'], { dim: 0 })).toBe('f32[M+N+2,3]');
    expect(() => infer('cat', ['f32[N,3]', 'f32[M,3]'], { dim: 1 })).toThrow(/same shape except in dim 1/);
  });

  it('a full slice keeps a symbol; any other slice of it is a derived symbol', () => {
    expect(infer('slice', ['f32[N,4]'], { dim: 0 })).toBe('f32[N,4]');
    expect(infer('slice', ['f32[N,4]'], { dim: 0, start: 0, end: null, step: 1 })).toBe('f32[N,4]');
    expect(infer('slice', ['f32[N,T]'], { dim: 1, start: 1 })).toBe('f32[N,T[1::1]]');
    expect(infer('slice', ['f32[N*2,4]'], { dim: 0, end: -1, step: 2 })).toBe('f32[(N*2)[:-1:2],4]');
    // slice_backward accepts the gradient of exactly that slice.
    expect(infer('slice_backward', ['f32[N,T[1::1]]'], { shape: ['N', 'T'], dim: 1, start: 1 })).toBe('f32[N,T]');
  });

  it('window arithmetic works for symbolic sizes when exact, and names the dim otherwise', () => {
    const w = 'f32[8,3,3,3]';
    expect(infer('conv2d', ['f32[N,3,H,W]', w, null], { padding: [1, 1, 1, 1] })).toBe('f32[N,8,H,W]');
    expect(infer('conv2d', ['f32[N,3,H,W]', w, null])).toBe('f32[N,8,H-2,W-2]');
    expect(infer('conv2d', ['f32[N,3,H*2,W*2]', w, null], { padding: [1, 1, 1, 1], stride: [2, 2] })).toBe('f32[N,8,H,W]');
    expect(() => infer('conv2d', ['f32[N,3,H,W]', w, null], { stride: [2, 2] })).toThrow(/input \[N,3,H,W\] dim 2 is H but must be concrete: with stride 2/);
    expect(() => infer('conv2d', ['f32[N,C,8,8]', w, null])).toThrow(/dim 1 is C but must be concrete/);
    expect(() => infer('conv2d', ['f32[N,3,8,8]', 'f32[K,3,3,3]', null])).toThrow(/weight \[K,3,3,3\] dim 0 is K but must be concrete/);
    expect(infer('conv_transpose2d', ['f32[N,8,H,W]', 'f32[8,4,2,2]', null], { stride: [2, 2] })).toBe('f32[N,4,H*2,W*2]');
    expect(infer('max_pool2d', ['f32[N,8,H*2,8]'], { kernel_size: [2, 2], stride: [2, 2] })).toBe('f32[N,8,H,4], i32[N,8,H,4]');
    expect(() => infer('avg_pool2d', ['f32[N,8,H,8]'], { kernel_size: [2, 2], stride: [2, 2] })).toThrow(/dim 2 is H but must be concrete/);
    expect(infer('avg_pool2d', ['f32[N,8,H*2,8]'], { kernel_size: [3, 3], stride: [2, 2], padding: [1, 1] })).toBe('f32[N,8,H,4]');
    expect(() => infer('avg_pool2d', ['f32[N,8,H*2,8]'], { kernel_size: [3, 3], stride: [2, 2], padding: [1, 1], ceil_mode: true }))
      .toThrow(/dim 2 is H\*2 but must be concrete: with stride 2 and ceil_mode/);
    expect(infer('adaptive_avg_pool2d', ['f32[N,8,H,W]'], { output_size: [1, 1] })).toBe('f32[N,8,1,1]');
  });
});

describe('dims.ts: the symbolic dim algebra', () => {
  it('prints canonically: atoms sorted, coefficient last, constant last', () => {
    expect(parseDim('64*N')).toBe('N*64');
    expect(parseDim('T*B')).toBe('B*T');
    expect(parseDim('2*T*3*B')).toBe('B*T*6');
    expect(parseDim('3 + N + M*N + 2')).toBe('M*N+N+5');
    expect(parseDim('N-N')).toBe(0);
    expect(parseDim('(N+1)*(N-1)')).toBe('N*N-1');
    expect(parseDim('N[0::1]')).toBe('N');
    expect(parseDim('10[2::3]')).toBe(3);
    expect(canonicalDim('N')).toBe('N');
    expect(isCanonicalDim('N*64')).toBe(true);
    expect(isCanonicalDim('64*N')).toBe(false);
    expect(isCanonicalDim(-1)).toBe(false);
    expect(isCanonicalDim('N +')).toBe(false);
  });

  it('multiplies, adds, subtracts and divides exactly', () => {
    expect(dimMul('N', 64)).toBe('N*64');
    expect(dimMul('N*2', 'T')).toBe('N*T*2');
    expect(dimAdd('N', 'N')).toBe('N*2');
    expect(dimSub('H', 2)).toBe('H-2');
    expect(dimDivExact('N*8192', 8192)).toBe('N');
    expect(dimDivExact('N*8192', 'N')).toBe(8192);
    expect(dimDivExact('B*T*64', 'B*64')).toBe('T');
    expect(dimDivExact('N*N+N*2', 'N+2')).toBe('N');
    expect(dimDivExact('N', 2)).toBeUndefined();
    expect(dimDivExact('N*4+2', 4)).toBeUndefined();
    expect(dimDivExact('N', 0)).toBeUndefined();
    expect(dimDivExact(12, 4)).toBe(3);
    expect(dimFloorDiv('H*2-1', 2)).toBe('H-1');
    expect(dimFloorDiv('H*2-1', 2, true)).toBe('H');
    expect(dimFloorDiv('H-1', 2)).toBeUndefined();
  });

  it('compares by value, whatever the spelling', () => {
    expect(dimEquals('N*64', '64*N')).toBe(true);
    expect(dimEquals('B*T', 'T*B')).toBe(true);
    expect(dimEquals('N', 'M')).toBe(false);
    expect(dimEquals(4, '2*2')).toBe(true);
    expect(dimEquals(4, 5)).toBe(false);
  });

  it('evaluates under bindings, slices included', () => {
    const env = new Map([['N', 3], ['T', 5]]);
    expect(evalDim('N*64', env)).toBe(192);
    expect(evalDim('N+T-1', env)).toBe(7);
    expect(evalDim('T[1::1]', env)).toBe(4);
    expect(evalDim('(N*2)[:-1:2]', env)).toBe(3);
    expect(evalDim('M', env)).toBeUndefined();
    expect(evalDim('N-4', env)).toBeUndefined();
    expect(sliceDim('T', -2, null, 1)).toBe('T[-2::1]');
  });

  it('refuses malformed dims with the offset', () => {
    expect(() => parseDim('N**2')).toThrow(DimError);
    expect(() => parseDim('N[1:2]')).toThrow(/character 5: expected ':' before the slice step/);
    expect(() => parseDim('N)')).toThrow(/unexpected '\)'/);
    // Hostile dims stay cheap: products of sums would double their terms per factor.
    const blowup = Array.from({ length: 40 }, (_, i) => `(a${i}+b${i})`).join('*');
    expect(() => parseDim(blowup)).toThrow(/more than 256 terms/);
    expect(() => parseDim(Array(100).fill('N').join('*'))).toThrow(/degree 65/);
    expect(() => dimMul('N*9007199254740991', 2)).toThrow(/overflowed/);
  });
});

describe('bindSymbols', () => {
  const t = (s: string) => ty(s);
  it('binds each symbol once, consistently across inputs', () => {
    const env = bindSymbols([t('f32[N,3,32,32]'), t('i32[N]'), t('f32[T,N*2]')], [[8, 3, 32, 32], [8], [5, 16]]);
    expect([...env]).toEqual([['N', 8], ['T', 5]]);
  });

  it('solves a compound dim with one unknown', () => {
    expect([...bindSymbols([t('f32[N*2+1]')], [[9]])]).toEqual([['N', 4]]);
    expect([...bindSymbols([t('f32[B*T]'), t('f32[B]')], [[12], [3]])]).toEqual([['B', 3], ['T', 4]]);
  });

  it('names the input and dim when N would mean two sizes', () => {
    const run = () => bindSymbols([t('f32[N,3]'), t('f32[N,5]')], [[8, 3], [4, 5]], ['x', 'y']);
    expect(run).toThrow(BindError);
    expect(run).toThrow(/input 'y' dim 0: N is 4 here but 8 in input 'x' dim 0/);
    try {
      run();
    } catch (e) {
      expect(e).toMatchObject({ input: 'y', dim: 0 });
    }
  });

  it('checks ranks, concrete dims and compound dims', () => {
    expect(() => bindSymbols([t('f32[N,3]')], [[8]], ['x'])).toThrow(/input 'x': expected rank 2 \[N,3\], got shape \[8\]/);
    expect(() => bindSymbols([t('f32[N,3]')], [[8, 4]], ['x'])).toThrow(/input 'x' dim 1: expected size 3/);
    expect(() => bindSymbols([t('f32[N]'), t('f32[N*2]')], [[4], [9]])).toThrow(/input 1 dim 0: expected N\*2 = 8 \(N=4\), got 9/);
    expect(() => bindSymbols([t('f32[N*2]')], [[9]])).toThrow(/no size of N makes N\*2 equal 9/);
    expect(() => bindSymbols([t('f32[N*M]')], [[9]])).toThrow(/cannot bind the symbols of M\*N/);
    expect(() => bindSymbols([t('f32[N]')], [[8], [2]])).toThrow(/expected 1 input shape/);
  });
});
