// jit.compile guards the globals its graph read (as Dynamo guards Python globals): a number,
// string or boolean property of globalThis the scripted forward reads is baked into the graph,
// listed among its guards, and a changed value recompiles (a restored one reuses its graph).
import { describe, it, expect, afterEach } from 'vitest';
import { jit, nn, noGrad, randn, type Tensor } from 'kiln';

declare global {
  // eslint-disable-next-line no-var
  var KILN_TEST_SCALE: number | undefined;
  // eslint-disable-next-line no-var
  var KILN_TEST_ACTIVATION: string | undefined;
}

class ScaledByGlobals extends nn.Module {
  fc = new nn.Linear(4, 3);
  forward(x: Tensor): Tensor {
    const y = this.fc.forward(x).mul(KILN_TEST_SCALE!);
    return KILN_TEST_ACTIVATION === 'relu' ? y.relu() : y.neg();
  }
}

afterEach(() => { delete globalThis.KILN_TEST_SCALE; delete globalThis.KILN_TEST_ACTIVATION; });

function expectClose(a: Tensor, b: Tensor): void {
  expect(a.shape).toEqual(b.shape);
  const x = a.toArray(), y = b.toArray();
  for (let i = 0; i < y.length; i++) expect(Math.abs(x[i] - y[i])).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(y[i])));
}

describe('jit.compile: globals guards', () => {
  it('a changed global recompiles, naming it; a restored value reuses the first graph', () => {
    globalThis.KILN_TEST_SCALE = 2;
    globalThis.KILN_TEST_ACTIVATION = 'relu';
    const m = new ScaledByGlobals();
    const c = jit.compile(m);
    const x = randn([2, 4]);
    const run = () => expectClose(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    run();
    run();
    expect(c.explain().compiles).toBe(1);
    expect(c.explain().graphs[0].via).toBe('script');
    expect(c.explain().graphs[0].guards).toEqual(expect.arrayContaining(['global KILN_TEST_SCALE', 'global KILN_TEST_ACTIVATION']));
    globalThis.KILN_TEST_SCALE = 3;
    run();
    globalThis.KILN_TEST_ACTIVATION = 'neg';
    run();
    expect(c.explain().compiles).toBe(3);
    expect(c.explain().recompiles).toEqual(['global KILN_TEST_SCALE changed from 2 to 3', 'global KILN_TEST_ACTIVATION changed from "relu" to "neg"']);
    globalThis.KILN_TEST_SCALE = 2;
    globalThis.KILN_TEST_ACTIVATION = 'relu';
    run();
    expect(c.explain().compiles).toBe(3);
  });

  it('a compiled function reads globals too; gradients use the current value', () => {
    globalThis.KILN_TEST_SCALE = 0.5;
    const f = (x: Tensor) => x.mul(KILN_TEST_SCALE!).sum();
    const c = jit.compile(f);
    const x = randn([3], { requiresGrad: true });
    c(x).backward();
    expect([...x.grad!.toArray()]).toEqual([0.5, 0.5, 0.5]);
    x.grad = null;
    globalThis.KILN_TEST_SCALE = 4;
    c(x).backward();
    expect([...x.grad!.toArray()]).toEqual([4, 4, 4]);
    expect(c.explain().compiles).toBe(2);
  });

  it('a global that is not a number, string or boolean is not read: the scripter refuses and the tracer runs it', () => {
    globalThis.KILN_TEST_SCALE = undefined;
    const m = new ScaledByGlobals();
    globalThis.KILN_TEST_SCALE = 2;
    const c = jit.compile(m);
    expect(c.explain().compiles).toBe(0);
    (globalThis as Record<string, unknown>).KILN_TEST_ACTIVATION = { relu: true };
    const x = randn([2, 4]);
    expectClose(noGrad(() => c.forward(x)), noGrad(() => m.forward(x)));
    expect(c.explain().graphs[0].via).toBe('trace');
  });
});
