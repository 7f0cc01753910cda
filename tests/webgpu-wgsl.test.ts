// WGSL codegen is deterministic and reviewed like code: the kernels of the fixture CNN and the
// Winograd conv kernels (the packed variants of conv records) are golden files, one per kernel (tests/wgsl/; update with
// `npm run test:update -- tests/webgpu-wgsl.test.ts` and review the diff), the same graph always gives byte-identical WGSL and `.tsgraph` bytes, and
// kernel keys depend on dtypes, ranks and attrs but not on dims (one kernel serves every batch).
// Pure codegen: no GPU needed.

import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { GraphBuilder, encodeTsgraph, tensorType } from '@kiln/ir-spec';
import { kernelKey } from '@kiln/runtime';
import { generateWgsl, kernelFor } from '../compiler/src/codegen/index.js';
import { GRAPHS } from './fixtures/tsgraph-graphs.js';
import { expectGoldenFile, expectGoldenFolder } from './helpers/golden.js';

/** The golden file of a kernel: tests/wgsl/<folder>/<kernel name>.wgsl. */
const golden = (folder: string, name: string) => fileURLToPath(new URL(`./wgsl/${folder}/${name}.wgsl`, import.meta.url));

describe('WGSL codegen', () => {
  it('matches the golden files of the fixture CNN kernels', () => {
    const { kernels, unsupported } = generateWgsl(GRAPHS.cnn());
    expect(unsupported).toEqual([]);
    for (const k of kernels) {
      const few = k.fewRows ? `\n// few rows (<= ${k.fewRows.maxRows}): grid ${JSON.stringify(k.fewRows.grid)}\n${k.fewRows.wgsl}` : '';
      expectGoldenFile(golden('cnn', k.name), `// grid ${JSON.stringify(k.grid)}\n${k.wgsl}${few}`);
    }
    expectGoldenFolder(fileURLToPath(new URL('./wgsl/cnn/', import.meta.url)), kernels.map((k) => `${k.name}.wgsl`));
  });

  it('matches the golden files of the Winograd F(4×4, 3×3) conv kernels (the packed variant over device-packed weights, with and without a fused pool)', () => {
    const f = { dtype: 'float32' as const, rank: 4 };
    const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
    const plain = kernelFor('fused_conv2d', [f, f, { dtype: 'float32', rank: 1 }], [f], { ...conv, activation: 'none' }, 'winograd');
    const pooled = kernelFor('fused_conv2d', [f, f, null], [f], { ...conv, activation: 'relu', pool: { kernel_size: [2, 2], stride: [2, 2] } }, 'winograd_pool');
    for (const k of [plain, pooled]) {
      if (!('key' in k)) throw new Error(k.reason);
      if (!k.packed) throw new Error(`${k.name} has no packed variant`);
      expect([k.packed.input, k.packed.layout]).toEqual([1, 'winograd4x4']);
      expect(k.packed.wgsl).toContain('workgroupBarrier');
      expect(k.wgsl).not.toBe(k.packed.wgsl); // the main kernel serves weights that are not 3×3
      expectGoldenFile(golden('winograd', k.name), `// grid ${JSON.stringify(k.packed.grid)}\n${k.packed.wgsl}`);
    }
    expect('key' in plain && plain.packed?.grid).toEqual({ tile: [1, 16, 16, 16], per: 1 });
    expect('key' in pooled && pooled.packed?.grid).toEqual({ tile: [1, 16, 8, 8], per: 1 });
    // The key is the node's: no layout in the attrs, and a plain conv2d gets the variant too.
    expect('key' in plain && plain.key).not.toContain('layout');
    expect('key' in plain && kernelFor('conv2d', [f, f, null], [f], conv)).toMatchObject({ packed: { layout: 'winograd4x4' } });
  });

  it('gives no Winograd variant to convs it cannot compute (stride, dilation, groups, other pools)', () => {
    const f = { dtype: 'float32' as const, rank: 4 };
    for (const [op, attrs] of [
      ['conv2d', { stride: [2, 2] }], ['conv2d', { dilation: [1, 2] }], ['conv2d', { groups: 2 }],
      ['fused_conv2d', { activation: 'relu', pool: { kernel_size: [3, 3], stride: [2, 2] } }],
    ] as const) {
      const k = kernelFor(op, [f, f, null], [f], attrs);
      if (!('key' in k)) throw new Error(k.reason);
      expect(k.packed, `${op} ${JSON.stringify(attrs)}`).toBeUndefined();
    }
  });

  it('gives byte-identical kernels and files for the same graph', () => {
    for (const build of Object.values(GRAPHS)) {
      const a = generateWgsl(build()), b = generateWgsl(build());
      expect(JSON.stringify(a)).toBe(JSON.stringify(b));
      expect(encodeTsgraph(build(), { kernels: a.kernels })).toEqual(encodeTsgraph(build(), { kernels: b.kernels }));
    }
  });

  it('keys kernels by op, dtypes, ranks and attrs, not by dims or attr order', () => {
    const f = (rank: number) => ({ dtype: 'float32' as const, rank });
    expect(kernelKey('conv2d', [f(4), f(4), null], { stride: [2, 2], padding: [1, 1, 1, 1] }))
      .toBe(kernelKey('conv2d', [f(4), f(4), null], { padding: [1, 1, 1, 1], stride: [2, 2] }));
    expect(kernelKey('add', [f(2), f(1)], {})).not.toBe(kernelKey('add', [f(2), f(2)], {}));
    expect(kernelKey('expand', [f(2)], { shape: ['N', 4] })).toBe(kernelKey('expand', [f(2)], { shape: [7, 4] }));
    expect(kernelKey('add', [f(2), f(1)], {})).not.toBe(kernelKey('add', [f(2), { dtype: 'int32', rank: 1 }], {}));
    const one = (n: number) => {
      const b = new GraphBuilder('g');
      b.output('y', b.op1('relu', [b.input('x', tensorType('float32', [n, 7]))]));
      return generateWgsl(b.build()).kernels;
    };
    expect(one(3)).toEqual(one(50));
  });

  it('matches the golden file of the masked_select kernel, whose key does not hold the data-dependent count', () => {
    const k = kernelFor('masked_select', [{ dtype: 'float32', rank: 2 }, { dtype: 'bool', rank: 3 }], [{ dtype: 'float32', rank: 1 }], {}, 'masked_select');
    if (!('key' in k)) throw new Error(k.reason);
    expect(k.key).toBe('masked_select(f32r2,br3){}');
    expect(k.grid).toEqual({ tile: [2 ** 31 - 1], per: 1, merge: 0 });
    expectGoldenFile(golden('masked-select', k.name), `// grid ${JSON.stringify(k.grid)}\n${k.wgsl}`);
  });

  it('gives linear layers a few-rows variant that the device picks per dispatch', () => {
    const b = new GraphBuilder('fc');
    const x = b.input('x', tensorType('float32', ['N', 16]));
    b.output('y', b.op1('linear', [x, b.param('w', { dtype: 'float32', shape: [3, 16], data: new Float32Array(48) })]));
    const [k] = generateWgsl(b.build()).kernels;
    expect(k.fewRows?.maxRows).toBe(4);
    expect(k.fewRows?.grid).toEqual({ tile: [1, 64], per: 1 });
    expect(k.fewRows?.wgsl).toContain('partial[lid]');
  });

  it('declines a kernel over the storage-buffer limit instead of emitting one the device rejects', () => {
    const f = { dtype: 'float32' as const, rank: 4 };
    const r = kernelFor('batch_norm', [f, { ...f, rank: 1 }, { ...f, rank: 1 }, { ...f, rank: 1 }, { ...f, rank: 1 }], [f], {}, 'bn', { maxStorageBuffers: 4 });
    expect(r).toEqual({ op: 'batch_norm', reason: 'needs 6 storage buffers, over the limit of 4' });
    expect(kernelFor('reshape', [f], [{ dtype: 'float32', rank: 1 }], { shape: [-1] })).toEqual({ op: 'reshape', reason: 'a view (no kernel needed)' });
    // A legacy node (files written before issue 14) runs with the kernels stored in its file.
    expect(kernelFor('fused_conv2d', [f, f, null], [f], { layout: 'winograd4x4' })).toEqual({ op: 'fused_conv2d', reason: 'weight layout \'winograd4x4\' (hi/lo Winograd weights) comes only from files written before issue 14, which run with the kernels stored in them; compile the model again for new kernels: files now keep OIHW weights and the WebGPU device packs them at load' });
    // cat of 8 inputs + 1 output is over the WebGPU guaranteed minimum of 8 storage buffers.
    const eight = Array.from({ length: 8 }, () => ({ dtype: 'float32' as const, rank: 1 }));
    expect(kernelFor('cat', eight, [{ dtype: 'float32', rank: 1 }], { dim: 0 })).toEqual({ op: 'cat', reason: 'needs 9 storage buffers, over the limit of 8' });
  });
});
