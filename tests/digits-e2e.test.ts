// The end-to-end digits demo (examples/digits/end-to-end.mjs, `npm run demo`): eager training,
// compile, -O2, save, then the runtime alone on the 360 test images, on the CPU and on WebGPU. Checks the accuracy, that
// every prediction equals eager's and that the saved file loads again. Times are never asserted.

import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from '@kiln/runtime';
import { runDemo } from '../examples/digits/end-to-end.mjs';

describe('digits end to end: train → compile → optimize → save → runtime', () => {
  it('runs the saved model in the runtime alone with eager\'s predictions on all 360 test images', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-digits-e2e-'));
    try {
      const r = await runDemo({ progress: false, out: dir, runs: 1 });
      console.log(`digits e2e: jit.${r.compiledWith}, accuracy ${(100 * r.testAccuracy).toFixed(2)}%, ` +
        `max abs diff ${r.cpu.maxAbsDiff.toExponential(2)}, eager ${r.eagerMs.toFixed(1)} ms vs runtime ${r.cpu.ms.toFixed(1)} ms, webgpu ${r.webgpu.status}`);
      expect(r.images).toBe(360);
      expect(r.testAccuracy).toBeGreaterThanOrEqual(0.965);
      expect(r.testAccuracy).toBeCloseTo(r.eagerAccuracy, 10);
      expect(r.cpu.identical).toBe(360);
      expect(r.cpu.worstRelDiff).toBeLessThanOrEqual(1e-5);
      expect(['script', 'trace']).toContain(r.compiledWith);
      // The same file on WebGPU (SwiftShader here): every prediction equal to eager's.
      if (r.webgpu.status !== 'ran') throw new Error(`the WebGPU leg did not run: ${r.webgpu.reason}`);
      expect(r.webgpu.identical).toBe(360);
      expect(r.webgpu.worstRelDiff).toBeLessThanOrEqual(1e-4);

      expect(r.path).toBe(join(dir, 'digits.tsgraph'));
      expect(existsSync(r.path)).toBe(true);
      const model = await load(readFileSync(r.path), { backend: 'cpu' });
      expect(model.inputs.length).toBe(1);
      const [y] = await model.run([{ data: new Float32Array(3 * 64).fill(0.5), shape: [3, 1, 8, 8], dtype: 'float32' }]);
      expect(y.shape).toEqual([3, 10]);
      expect(Array.from(y.data).every(Number.isFinite)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
