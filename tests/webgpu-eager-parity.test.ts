// Eager WebGPU against PyTorch (Dawn on SwiftShader): every case of the golden op families the
// CPU parity test checks (tests/parity.test.ts, same adapters and data) runs with every tensor on
// 'webgpu' — forward outputs and input gradients, read back asynchronously, within the case's
// tolerance and never tighter than 1e-4. A case that cannot run on the GPU must be listed in
// GPU_GAPS with the reason its error names (an op without a WGSL generator, a data-dependent
// output shape); an unlisted failure, or a listed case that now passes, fails the test.

import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { device, initWebGpu, memory, type Tensor } from '@kiln/core';
import { readGolden, fromGolden, expectClose, goldenGradients, type GoldenCase, type GoldenTensor, type Tol } from './parity/golden.js';
import type { AdapterTable, AdapterResult } from './parity/adapter.js';
import { GPU_GAPS } from './parity/webgpu-gaps.js';
import { allOps, isViewOp } from '@kiln/ir-spec';
import { KERNELS } from '@kiln/compiler';

/** Registered ops with no WGSL generator, and how eager WebGPU runs them instead. */
const NO_WGSL: Record<string, string> = {
  normal: 'random: drawn on the CPU stream (the same numbers as a CPU tensor) and uploaded',
  uniform: 'random: drawn on the CPU stream (the same numbers as a CPU tensor) and uploaded',
};

const FAMILIES = ['elementwise', 'activation', 'reductions', 'matmul', 'conv', 'pool', 'norm', 'loss', 'shape', 'indexing'];
const tables: Record<string, AdapterTable> = {};
for (const fam of FAMILIES) tables[fam] = (await import(`./parity/adapters/${fam}.ts`)).adapters;

const asList = <T,>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);
const atLeast1e4 = (t: Tol): Tol => ({ atol: Math.max(t.atol, 1e-4), rtol: Math.max(t.rtol, 1e-4) });
const failures: Record<string, string> = {};

async function runOnGpu(table: AdapterTable, c: GoldenCase, tol: Tol): Promise<number> {
  const adapter = table[c.op];
  const wantGrads = c.grads?.inputs ?? [];
  const inputs = c.inputs.map((g, i) => fromGolden(g, { requiresGrad: !!wantGrads[i] }));
  for (const t of inputs) expect(t.device).toBe('webgpu');
  const res = adapter(inputs, c.attrs ?? {}, c);
  const r: AdapterResult = !Array.isArray(res) && 'output' in (res as object) && !(res as Tensor).shape ? (res as AdapterResult) : { output: res as Tensor | Tensor[] };
  const outs = asList(r.output);
  const wants = asList(c.output as GoldenTensor | GoldenTensor[]);
  expect(outs.length).toBe(wants.length);
  let n = 0;
  for (const [k, o] of outs.entries()) {
    expect(o.device, `${c.name} output ${k}`).toBe('webgpu');
    expectClose(await o.toAsync('cpu'), wants[k], tol, `${c.name} output ${k}`);
    n++;
  }
  for (const [name, want] of Object.entries(c.extra_outputs ?? {})) {
    const got = r.extra?.[name];
    expectClose(got && await got.toAsync('cpu'), want, tol, `${c.name} extra output ${name}`);
    n++;
  }
  if (c.grads && c.grad_output) {
    const targets = inputs.filter((_, i) => wantGrads[i]);
    const got = goldenGradients(outs, c.grad_output as GoldenTensor | GoldenTensor[], targets);
    if (got) {
      let j = 0;
      for (const [i, want] of wantGrads.entries()) {
        if (!want) continue;
        const g = got[j++] ?? inputs[i].mul(0);
        expect(g.device, `${c.name} grad ${i}`).toBe('webgpu');
        expectClose(await g.toAsync('cpu'), want, tol, `${c.name} grad of input ${i} (${c.inputs[i].name ?? ''})`);
        n++;
      }
    }
  }
  return n;
}

describe('eager WebGPU golden parity', () => {
  it('lists every registered op without a WGSL generator (views need none)', () => {
    expect(allOps().map((o) => o.name).filter((n) => !KERNELS[n] && !isViewOp(n)).sort()).toEqual(Object.keys(NO_WGSL).sort());
  });

  beforeAll(async () => {
    await initWebGpu();
    device('webgpu'); // fromGolden's tensor() and every factory an adapter calls land on the GPU
  });
  afterAll(() => { device('cpu'); });

  for (const fam of FAMILIES) {
    const file = readGolden(fam);
    describe(fam, () => {
      for (const c of file.cases) {
        const id = `${fam}/${c.name}`;
        it(c.name, async () => {
          const gap = GPU_GAPS[id];
          let n = 0;
          try {
            n = await runOnGpu(tables[fam], c, atLeast1e4(c.tol ?? file.default_tol));
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            failures[id] = msg.split('\n')[0];
            if (gap) { expect(msg, `${id} fails for another reason than its listed gap`).toMatch(gap.error); return; }
            throw e;
          }
          expect(gap, `${id} passes on WebGPU now: remove it from tests/parity/webgpu-gaps.ts`).toBeUndefined();
          expect(n).toBeGreaterThan(0);
        }, 120_000);
      }
    });
  }

  afterAll(() => {
    const m = memory.stats('webgpu');
    console.log(`eager WebGPU parity: ${Object.keys(failures).length} cases failed (all listed gaps); submits ${m.submits}, maps ${m.maps}, buffers created ${m.buffersCreated}`);
    if (process.env.KILN_GPU_GAPS_OUT) console.log(JSON.stringify(failures, null, 1));
  });
});
