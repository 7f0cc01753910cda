// Mixed float16/bfloat16/float32 operands to the products (matmul and what builds on it, linear,
// conv2d, conv_transpose2d) raise as PyTorch 1.13 does ("expected scalar type Float but found
// Half"), naming both dtypes and the fix; the same call under amp.autocast, with one dtype, or
// for an elementwise op (which promotes) runs. The error is raised by the op's shape rule, so
// jit.trace and the runtime see it too.

import { describe, expect, it } from 'vitest';
import { amp, F, randn, type Tensor } from 'kiln';

const h = (shape: number[]) => randn(shape, { dtype: 'float16' });
const b = (shape: number[]) => randn(shape, { dtype: 'bfloat16' });

describe('mixed floating dtypes in products', () => {
  const cases: [string, () => Tensor, RegExp][] = [
    ['matmul float32 @ float16', () => randn([2, 3]).matmul(h([3, 4])), /matmul: a is float32 but b is float16: expected one dtype \(PyTorch 1\.13: "expected scalar type Float but found Half"\); cast one of them \(\.float\(\), \.half\(\), \.bfloat16\(\)\) or run the op inside amp\.autocast/],
    ['matmul float16 @ float32', () => h([2, 3]).matmul(randn([3, 4])), /matmul: a is float16 but b is float32.*found Float/],
    ['bmm float32 with bfloat16', () => randn([1, 2, 3]).bmm(b([1, 3, 4])), /matmul: a is float32 but b is bfloat16.*found BFloat16/],
    ['matmul float16 @ bfloat16', () => h([2, 3]).matmul(b([3, 4])), /a is float16 but b is bfloat16/],
    ['linear: float16 weight', () => F.linear(randn([2, 3]), h([4, 3])), /linear: input is float32 but weight is float16/],
    ['linear: bfloat16 bias', () => F.linear(randn([2, 3]), randn([4, 3]), b([4])), /linear: input is float32 but bias is bfloat16/],
    ['conv2d: float16 weight', () => F.conv2d(randn([1, 3, 5, 5]), h([2, 3, 3, 3])), /conv2d: input is float32 but weight is float16/],
    ['conv2d: bfloat16 input', () => F.conv2d(b([1, 3, 5, 5]), randn([2, 3, 3, 3])), /conv2d: input is bfloat16 but weight is float32/],
    ['conv_transpose2d: float16 bias', () => F.convTranspose2d(randn([1, 2, 4, 4]), randn([2, 3, 3, 3]), h([3])), /conv_transpose2d: input is float32 but bias is float16/],
  ];
  for (const [name, run, message] of cases) {
    it(`${name} raises an OpError`, () => {
      expect(run).toThrow(message);
      try { run(); } catch (e) { expect((e as Error).name).toBe('OpError'); }
    });
  }

  it('one dtype runs: float16 @ float16 is float16, bfloat16 linear is bfloat16', () => {
    expect(h([2, 3]).matmul(h([3, 4])).dtype).toBe('float16');
    expect(F.linear(b([2, 3]), b([4, 3]), b([4])).dtype).toBe('bfloat16');
    expect(F.conv2d(h([1, 3, 5, 5]), h([2, 3, 3, 3]), h([2])).dtype).toBe('float16');
  });

  it('under amp.autocast the mixed call runs (both operands cast to the autocast dtype)', () => {
    expect(amp.autocast(() => randn([2, 3]).matmul(h([3, 4]))).dtype).toBe('float16');
    expect(amp.autocast(() => F.linear(randn([2, 3]), b([4, 3])), { dtype: 'bfloat16' }).dtype).toBe('bfloat16');
    expect(amp.autocast(() => F.conv2d(randn([1, 3, 5, 5]), h([2, 3, 3, 3]))).dtype).toBe('float16');
  });

  it('elementwise ops still promote (PyTorch: float16 + float32 is float32)', () => {
    expect(randn([2, 3]).add(h([2, 3])).dtype).toBe('float32');
    expect(h([2, 3]).mul(b([2, 3])).dtype).toBe('float32');
  });
});
