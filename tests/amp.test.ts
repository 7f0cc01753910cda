// Automatic mixed precision (packages/core/src/amp): autocast against PyTorch 1.13
// (tests/golden-kiln/autocast.json, scripts/golden/autocast.py: bfloat16 from PyTorch's CPU
// autocast, float16 built from the CUDA op list with explicit .half() casts, as the script
// explains), autocast recorded by jit.trace / jit.script, and GradScaler's algorithm.
//
// GradScaler: PyTorch 1.13 runs its scale update (_amp_update_scale_) on CUDA only, so its
// sequences are derived here by hand from the documented algorithm: a step with inf/NaN
// gradients is skipped and the scale halves (growth tracker reset); growthInterval clean steps in
// a row double it.

import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { amp, autocast, F, jit, nn, optim, tensor, Tensor } from 'kiln';

interface Case {
  name: string; x: number[]; xShape: number[]; yShape: number[]; params: Record<string, number[]>;
  bfloat16: { dtype: string; y: number[] }; float16: { y: number[]; logSoftmax: number[]; sum: number };
}
const GOLD = JSON.parse(readFileSync(new URL('./golden-kiln/autocast.json', import.meta.url), 'utf8')) as { cases: Case[] };

function build(c: Case): nn.Module & { forward(x: Tensor): Tensor } {
  const m = c.name === 'mlp'
    ? new nn.Sequential(new nn.Linear(6, 5), new nn.ReLU(), new nn.Linear(5, 3))
    : new nn.Sequential(new nn.Conv2d(2, 3, 3, { padding: 1 }), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(12, 4));
  const sd = m.stateDict();
  m.loadStateDict(Object.fromEntries(Object.entries(c.params).map(([k, v]) => [k, tensor(v, { shape: [...sd[k].shape] })])));
  return m;
}

/** Within `ulps` units in the last place of a type with `bits` fraction bits. */
function expectUlps(actual: ArrayLike<number>, expected: readonly number[], bits: number, ulps = 1): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const tol = ulps * Math.max(Math.abs(expected[i]), 2 ** -14) * 2 ** -bits;
    if (!(Math.abs(actual[i] - expected[i]) <= tol)) expect.fail(`element ${i}: ${actual[i]} vs ${expected[i]} (tolerance ${tol})`);
  }
}

describe('autocast vs PyTorch 1.13', () => {
  for (const c of GOLD.cases) {
    const x = () => tensor(c.x, { shape: c.xShape });
    it(`${c.name}: bfloat16 autocast matches torch.autocast('cpu', bfloat16) within one bfloat16 ulp`, () => {
      const y = autocast(() => build(c).forward(x()), { dtype: 'bfloat16' });
      expect([y.dtype, y.shape]).toEqual(['bfloat16', c.yShape]);
      expect(c.bfloat16.dtype).toBe('torch.bfloat16');
      expectUlps(y.toArray(), c.bfloat16.y, 8);
    });
    it(`${c.name}: float16 autocast matches the CUDA op list emulated with .half() (one float16 ulp)`, () => {
      const m = build(c);
      const y = autocast(() => m.forward(x()));
      expect([y.dtype, y.shape]).toEqual(['float16', c.yShape]);
      expectUlps(y.toArray(), c.float16.y, 10);
      // fp32-list ops take float16 inputs and return float32.
      const ls = autocast(() => F.logSoftmax(y, 1));
      const s = autocast(() => y.sum());
      expect([ls.dtype, s.dtype]).toEqual(['float32', 'float32']);
      expectUlps(ls.toArray(), c.float16.logSoftmax, 20, 4);
      expect(s.item()).toBeCloseTo(c.float16.sum, 2);
    });
  }

  it('enabled: false and nested regions restore the outer state; results stay float32 outside', () => {
    const c = GOLD.cases[0], m = build(c), x = tensor(c.x, { shape: c.xShape });
    expect(autocast(() => m.forward(x), { enabled: false }).dtype).toBe('float32');
    const inner = autocast(() => [autocast(() => m.forward(x), { dtype: 'bfloat16' }).dtype, amp.isAutocastEnabled()] as const);
    expect(inner).toEqual(['bfloat16', true]);
    expect(amp.isAutocastEnabled()).toBe(false);
    expect(m.forward(x).dtype).toBe('float32');
    expect(() => autocast(() => F.binaryCrossEntropy(tensor([0.5]), tensor([1])))).toThrow(/unsafe to autocast/);
    expect(() => autocast(() => 1, { dtype: 'float64' as 'float16' })).toThrow(/dtype must be 'float16' or 'bfloat16'/);
  });

  it('gradients flow through the casts to float32 parameters; backward runs with autocast off', () => {
    const c = GOLD.cases[1], m = build(c), x = tensor(c.x, { shape: c.xShape });
    const loss = autocast(() => F.crossEntropy(m.forward(x), tensor([1, 3], { dtype: 'int32' })));
    expect(loss.dtype).toBe('float32');
    loss.backward();
    for (const p of m.parameters()) {
      expect(p.grad!.dtype).toBe('float32');
      expect(Array.from(p.grad!.toArray()).every(Number.isFinite)).toBe(true);
    }
    // Float32 reference: the reduced-precision gradient is close to it.
    const m32 = build(c);
    F.crossEntropy(m32.forward(x), tensor([1, 3], { dtype: 'int32' })).backward();
    const g16 = m.parameters()[0].grad!.toArray(), g32 = m32.parameters()[0].grad!.toArray();
    g32.forEach((v, i) => expect(Math.abs(g16[i] - v)).toBeLessThan(1e-2 + 1e-2 * Math.abs(v)));
  });
});

describe('autocast in compiled graphs', () => {
  const c = GOLD.cases[1];
  it('jit.trace under autocast records the casts; the graph gives the eager float16 numbers', () => {
    const m = build(c).eval(), x = tensor(c.x, { shape: c.xShape });
    const traced = autocast(() => jit.trace(m, [x]));
    const text = traced.graph.toString();
    expect(text).toMatch(/cast\(%input\) \{dtype="float16"\} : f16\[2,2,4,4\]/);
    expect(text).toMatch(/conv2d\(%0, %1, %2\) \{[^}]*\} : f16\[2,3,4,4\]/);
    expect(text).toMatch(/-> \(output: f16\[2,4\]\)/);
    const eager = autocast(() => m.forward(x));
    const y = traced.forward(x) as Tensor;
    expect(y.dtype).toBe('float16');
    expect(Array.from(y.toArray())).toEqual(Array.from(eager.toArray()));
    expectUlps(y.toArray(), c.float16.y, 10);
  });
  it('jit.script under autocast records the casts too', () => {
    const m = build(c).eval(), x = tensor(c.x, { shape: c.xShape });
    const scripted = autocast(() => jit.script(m, { inputs: [x] }));
    expect(scripted.graph.toString()).toMatch(/linear\(%7, %8, %9\) : f16\[N,4\]/);
    const y = scripted.forward(x) as Tensor;
    expect(Array.from(y.toArray())).toEqual(Array.from(autocast(() => m.forward(x)).toArray()));
  });
});

describe('GradScaler (PyTorch 1.13 semantics, hand-derived sequences)', () => {
  function setup(opts: amp.GradScalerOptions = {}) {
    const w = tensor([1, 2], { requiresGrad: true });
    const opt = new optim.SGD([w], { lr: 0.5 });
    const scaler = new amp.GradScaler(opts);
    /** One iteration; `poison` puts an inf (or NaN) in the loss's gradient. */
    const iter = (poison?: number) => {
      opt.zeroGrad();
      const loss = w.mul(poison ?? 1).sum();
      scaler.scale(loss).backward();
      const r = scaler.step(opt);
      scaler.update();
      return r;
    };
    return { w, opt, scaler, iter };
  }

  it('defaults: initial scale 2**16, growth 2, backoff 0.5, interval 2000; scale() multiplies', () => {
    const { scaler } = setup();
    expect([scaler.getScale(), scaler.getGrowthFactor(), scaler.getBackoffFactor(), scaler.getGrowthInterval()]).toEqual([65536, 2, 0.5, 2000]);
    expect(scaler.scale(tensor([1.5])).item()).toBe(98304);
  });

  it('unscales before the step: the update equals the unscaled one', () => {
    const { w, iter } = setup();
    iter();
    // d(sum w)/dw = 1 per element; scaled by 65536, unscaled back to 1; SGD lr 0.5.
    expect(Array.from(w.toArray())).toEqual([0.5, 1.5]);
  });

  it('skips a step on inf and on NaN gradients and backs off; grows after growthInterval clean steps', () => {
    const { w, scaler, iter } = setup({ initScale: 8, growthInterval: 3 });
    const scales: number[] = [];
    const steps: boolean[] = [];
    const run = (poison?: number) => { const before = Array.from(w.toArray()); iter(poison); steps.push(Array.from(w.toArray()).some((v, i) => v !== before[i])); scales.push(scaler.getScale()); };
    run(); run(); run();          // 3 clean: the tracker reaches 3 → 8·2
    run(Infinity);                 // skipped → ·0.5, tracker 0
    run(NaN);                      // skipped → ·0.5
    run(); run();                  // 2 clean: no growth yet
    run(Infinity);                 // skipped: tracker reset
    run(); run(); run();           // 3 clean → growth
    expect(scales).toEqual([8, 8, 16, 8, 4, 4, 4, 2, 2, 2, 4]);
    expect(steps).toEqual([true, true, true, false, false, true, true, false, true, true, true]);
  });

  it('growth stops at a scale whose product would overflow float32; backoff from a huge scale is exact', () => {
    const { scaler, iter } = setup({ initScale: 2 ** 127, growthInterval: 1 });
    iter();
    expect(scaler.getScale()).toBe(2 ** 127); // 2**128 is inf in float32: kept
    iter(Infinity);
    expect(scaler.getScale()).toBe(2 ** 126);
  });

  it('unscale_ then step (gradient clipping between); misuse gives clear errors', () => {
    const { w, opt, scaler } = setup();
    scaler.scale(w.sum()).backward();
    scaler.unscale_(opt);
    expect(Array.from(w.grad!.toArray())).toEqual([1, 1]);
    expect(() => scaler.unscale_(opt)).toThrow(/already been called on this optimizer since the last update/);
    scaler.step(opt);
    expect(() => scaler.step(opt)).toThrow(/step\(\) has already been called since the last update/);
    scaler.update();
    const fresh = new amp.GradScaler();
    expect(() => fresh.update()).toThrow(/call scaler.scale\(loss\) first/);
  });

  it('stateDict has PyTorch keys and restores the sequence; disabled scaler passes through', () => {
    const a = setup({ initScale: 8, growthInterval: 3 });
    a.iter(); a.iter();
    const sd = a.scaler.stateDict();
    expect(sd).toEqual({ scale: 8, growth_factor: 2, backoff_factor: 0.5, growth_interval: 3, _growth_tracker: 2 });
    const b = setup();
    b.scaler.loadStateDict(sd);
    b.iter();
    expect(b.scaler.getScale()).toBe(16);
    const off = setup({ enabled: false });
    off.iter(Infinity);
    expect(off.scaler.getScale()).toBe(1);
    expect(off.scaler.stateDict()).toEqual({});
  });
});

