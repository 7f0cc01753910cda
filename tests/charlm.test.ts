// examples/charlm end to end (issue #22 part B): a short training run lowers the loss, and the
// model traced with a symbolic sequence length, saved and run by the runtime alone samples the
// same text as eager mode at every prompt length from 11 to blockSize (same probabilities, same
// sampler draws). Uses the built dist (npm run build).
import { describe, it, expect } from 'vitest';
import { existsSync } from 'node:fs';
import { trainCharLM } from '../examples/charlm/train.mjs';

describe('examples/charlm', () => {
  it('trains, and the .tsgraph samples what eager samples', async () => {
    const r = await trainCharLM({ steps: 60, batchSize: 16, sampleChars: 30, log: () => undefined });
    expect(r.losses.length).toBe(60);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(r.losses.slice(-10))).toBeLessThan(mean(r.losses.slice(0, 10)) - 0.5);
    expect(r.eagerSample.startsWith('the potter ')).toBe(true);
    expect(r.eagerSample.length).toBe('the potter '.length + 30);
    expect(r.fileSample).toBe(r.eagerSample);
    expect(existsSync(r.path)).toBe(true);
  }, 600_000);
});
