// The same `.tsgraph` (with its WGSL) runs in a real browser: headless Chromium loads a page
// that imports the esbuild-bundled runtime, runs the file on WebGPU (navigator.gpu, SwiftShader)
// and posts its outputs, which must equal the CPU runtime's in Node. Chromium is required: CI
// installs it (.ci/run), and its absence fails this test rather than skipping it.

import { describe, expect, it } from 'vitest';
import { encodeTsgraph } from '@kiln/ir-spec';
import { generateWgsl } from '../compiler/src/codegen/index.js';
import { GRAPHS } from './fixtures/tsgraph-graphs.js';
import { expectOutputsMatchNode, runInChromium } from './browser/harness.js';

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
    await expectOutputsMatchNode(page, bytes, sets, 1e-4);
  }, 120_000);
});
