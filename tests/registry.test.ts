// The op registry meta-test: every ir-spec entry is complete (STYLE principle 1). Golden
// coverage of each op is checked by parity.test.ts; finite-difference gradients by gradcheck.
import { describe, it, expect } from 'vitest';
import { allOps } from '@kiln/ir-spec';

describe('op registry', () => {
  const ops = allOps();
  it('keeps the primitive set small (tens, not hundreds)', () => {
    expect(ops.length).toBeGreaterThan(20);
    expect(ops.length).toBeLessThan(100);
  });
  for (const op of ops) {
    it(`${op.name} has every part`, () => {
      expect(op.name).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(op.doc.trim().length, 'doc').toBeGreaterThan(0);
      expect(Array.isArray(op.inputs)).toBe(true);
      for (const i of op.inputs) expect(i).toMatch(/^(\.\.\.)?[a-z][a-z0-9_]*\??$/i);
      expect(typeof op.attrs.safeParse, 'zod attrs schema').toBe('function');
      expect(typeof op.infer, 'shape rule').toBe('function');
      expect(typeof op.cpu, 'CPU kernel').toBe('function');
      expect(op.grad === null || typeof op.grad.rule === 'function', 'gradient rule or explicit null').toBe(true);
    });
  }
});
