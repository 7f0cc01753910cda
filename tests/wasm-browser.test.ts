// The CPU device's WebAssembly kernels in a real browser: headless Chromium loads the
// esbuild-bundled runtime, runs a `.tsgraph` with backend 'cpu' and a GEMM big enough to split,
// served once cross-origin isolated (shared memory: the product splits over Web Workers) and once
// not (a private memory, one thread). Outputs must equal the CPU runtime's in Node, and the split
// product the one-thread one bit for bit. Chromium is required (.ci/run installs it).

import { describe, expect, it } from 'vitest';
import { encodeTsgraph } from '@kiln/ir-spec';
import { GRAPHS } from './fixtures/tsgraph-graphs.js';
import { expectOutputsMatchNode, runInChromium } from './browser/harness.js';

function fill(n: number, salt: number): number[] {
  return Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i * 0.37 + salt) * 2));
}

describe('the runtime in headless Chromium on the CPU (WebAssembly SIMD)', () => {
  for (const isolated of [true, false]) {
    it(`runs the fixture CNN and a split GEMM ${isolated ? 'cross-origin isolated, on Web Workers' : 'without isolation, on one thread'}`, async () => {
      const bytes = encodeTsgraph(GRAPHS.cnn());
      const sets = [1, 4].map((n) => [{ data: fill(n * 3 * 8 * 8, n), shape: [n, 3, 8, 8], dtype: 'float32' }]);
      const page = await runInChromium(bytes, sets, { page: 'cpu.html', isolated });
      if (!page.ok) throw new Error(`the page failed: ${page.error}`);
      expect(page.backend).toBe('cpu');
      const info = page.info!;
      expect(['simd', 'relaxed-simd']).toContain(info.kind);
      expect(info.isolated).toBe(isolated);
      expect(info.sameOnTwoThreads).toBe(true);
      if (isolated) expect(info.workerChunks as number).toBeGreaterThan(0);
      else expect([info.splitCalls, info.workersStarted]).toEqual([0, 0]);
      await expectOutputsMatchNode(page, bytes, sets, 1e-5);
    }, 120_000);
  }
});
