// The same `.tsgraph` (with its WGSL) runs in a real browser: headless Chromium loads a page
// that imports the esbuild-bundled runtime, runs the file on WebGPU (navigator.gpu, SwiftShader)
// and posts its outputs, which must equal the CPU runtime's in Node. Chromium is required: CI
// installs it (.ci/run), and its absence fails this test rather than skipping it.

import { describe, expect, it } from 'vitest';
import { encodeTsgraph, type TypedArray } from '@kiln/ir-spec';
import { load, type InputValue } from '@kiln/runtime';
import { generateWgsl } from '../compiler/src/codegen/index.js';
import { GRAPHS } from './fixtures/tsgraph-graphs.js';
import { runInChromium } from './browser/harness.js';

function fill(n: number, salt: number): number[] {
  return Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i * 0.37 + salt) * 2));
}

describe('the runtime in headless Chromium on WebGPU', () => {
  it('runs the fixture CNN .tsgraph with outputs equal to the CPU runtime in Node', async () => {
    const g = GRAPHS.cnn();
    const bytes = encodeTsgraph(g, { kernels: generateWgsl(g).kernels });
    const sets = [1, 2].map((n) => [{ data: fill(n * 3 * 8 * 8, n), shape: [n, 3, 8, 8], dtype: 'float32' }]);
    const page = await runInChromium(bytes, sets);
    if (!page.ok) throw new Error(`the page failed: ${page.error}`);
    expect(page.backend).toBe('webgpu');
    const cpu = await load(bytes, { backend: 'cpu' });
    for (const [k, set] of sets.entries()) {
      const want = await cpu.run(set.map((v): InputValue => ({ ...v, data: Float32Array.from(v.data), dtype: 'float32' })));
      const got = page.outputs[k];
      expect(got.map((o) => [o.name, o.shape, o.dtype])).toEqual(want.map((o) => [o.name, o.shape, o.dtype]));
      got.forEach((o, i) => {
        const w: TypedArray = want[i].data;
        o.data.forEach((v, j) => { if (!(Math.abs(v - w[j]) <= 1e-4 * Math.max(1, Math.abs(w[j])))) expect(v, `${o.name}[${j}]`).toBe(w[j]); });
      });
    }
  }, 120_000);
});
