// The PyTorch parity test: walks EVERY case of every golden file in tests/golden/ops, checks
// forward outputs, side-effect outputs and input gradients within the file's tolerances, and
// fails on any case that is neither checked nor named in parity/not-yet.ts.

import { describe, it, expect, afterAll } from 'vitest';
import { readdirSync } from 'node:fs';
import { withObserver, type Tensor } from '@kiln/core';
import { allOps } from '@kiln/ir-spec';
import { GOLDEN_DIR, readGolden, fromGolden, expectClose, goldenGradients, type GoldenCase, type GoldenTensor, type Tol } from './parity/golden.js';
import type { AdapterTable, AdapterResult } from './parity/adapter.js';
import { NOT_YET_CASES, NOT_YET_FILES } from './parity/not-yet.js';
import { customRunners } from './parity/custom.js';

const tables: Record<string, AdapterTable> = {};
for (const fam of ['elementwise', 'activation', 'reductions', 'matmul', 'conv', 'pool', 'norm', 'loss', 'shape', 'indexing']) {
  tables[fam] = (await import(`./parity/adapters/${fam}.ts`)).adapters;
}

const families = readdirSync(GOLDEN_DIR).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, '')).sort();
const stats = { cases: 0, tensors: 0, skippedFiles: [] as string[] };
/** IR ops dispatched while checking golden cases (forward and backward). */
const exercised = new Set<string>();
const recordOps = { onOp: (op: { name: string }) => { exercised.add(op.name); } };

/** Registered ops that no golden case reaches, each with where it is tested instead. */
const NOT_IN_GOLDEN: Record<string, string> = {
  logical_not: 'PyTorch golden data has no logical_not case; packages/core/src/ops/elementwise.test.ts checks it',
  fused_elementwise: 'compiler-made fused kernel; tests/passes.test.ts checks it against the ops it replaces',
  fused_conv2d: 'compiler-made fused kernel; tests/passes.test.ts checks it against conv2d + activation',
  fused_linear: 'compiler-made fused kernel; tests/passes.test.ts checks it against linear + activation',
  batch_norm_backward: 'made by graph autodiff (jit.compile) only; tests/jit-compile-batchnorm.test.ts checks it against the gradient rules of batch_norm over batch_norm_stats',
  uniform: 'random: PyTorch streams cannot be reproduced; tests/random-ops.test.ts checks eager = script = trace = runtime draws per seed, packages/core/src/random.test.ts the statistics',
  floor: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  ceil: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  round: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  trunc: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  log1p: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  expm1: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  isnan: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  isfinite: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  sort: 'issue #22 op: tests/golden-kiln/ops_api (PyTorch 1.13 data from scripts/golden/ops_api.py) checks it in tests/api-ops.test.ts',
  normal: 'random: PyTorch streams cannot be reproduced; tests/random-ops.test.ts checks eager = script = trace = runtime draws per seed, packages/core/src/random.test.ts the statistics',
};

const asList = <T,>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

function runOpCase(table: AdapterTable, c: GoldenCase, tol: Tol): number {
  const adapter = table[c.op];
  if (!adapter) throw new Error(`no adapter for golden op '${c.op}' (case ${c.name}); add it to tests/parity/adapters`);
  const wantGrads = c.grads?.inputs ?? [];
  const inputs = c.inputs.map((g, i) => fromGolden(g, { requiresGrad: !!wantGrads[i] }));
  const res = adapter(inputs, c.attrs ?? {}, c);
  const r: AdapterResult = !Array.isArray(res) && 'output' in (res as object) && !(res as Tensor).shape ? (res as AdapterResult) : { output: res as Tensor | Tensor[] };
  const outs = asList(r.output);
  const wants = asList(c.output as GoldenTensor | GoldenTensor[]);
  if (outs.length !== wants.length) throw new Error(`${c.name}: ${outs.length} outputs, golden has ${wants.length}`);
  let n = 0;
  outs.forEach((o, k) => { expectClose(o, wants[k], tol, `${c.name} output ${k}`); n++; });
  for (const [name, want] of Object.entries(c.extra_outputs ?? {})) {
    expectClose(r.extra?.[name], want, tol, `${c.name} extra output ${name}`);
    n++;
  }
  if (c.grads && c.grad_output) {
    const targets = inputs.filter((_, i) => wantGrads[i]);
    const got = goldenGradients(outs, c.grad_output as GoldenTensor | GoldenTensor[], targets);
    if (got) {
      let j = 0;
      wantGrads.forEach((want, i) => {
        if (!want) return;
        const g = got[j++] ?? inputs[i].mul(0);
        expectClose(g, want, tol, `${c.name} grad of input ${i} (${c.inputs[i].name ?? ''})`);
        n++;
      });
    }
  }
  return n;
}

describe('PyTorch golden parity', () => {
  for (const fam of families) {
    if (NOT_YET_FILES[fam]) {
      stats.skippedFiles.push(`${fam} (${NOT_YET_FILES[fam]})`);
      continue;
    }
    const file = readGolden(fam);
    describe(fam, () => {
      for (const c of file.cases) {
        const tol = c.tol ?? file.default_tol;
        const reason = NOT_YET_CASES[`${fam}/${c.name}`];
        if (reason) { stats.skippedFiles.push(`${fam}/${c.name} (${reason})`); continue; }
        it(c.name, () => {
          const n = withObserver(recordOps, () => tables[fam] ? runOpCase(tables[fam], c, tol)
            : customRunners[fam] ? customRunners[fam](c, tol)
            : (() => { throw new Error(`no runner for golden family '${fam}'`); })());
          expect(n).toBeGreaterThan(0);
          stats.cases++;
          stats.tensors += n;
        });
      }
    });
  }
  it('exercises every registered op (forward or backward) in some golden case', () => {
    const missing = allOps().map((o) => o.name).filter((n) => !exercised.has(n) && !NOT_IN_GOLDEN[n]);
    expect(missing, 'ops with no golden coverage: add a golden-backed use or list them in NOT_IN_GOLDEN with the test that covers them').toEqual([]);
  });
  afterAll(() => {
    console.log(`golden parity: checked ${stats.cases} cases (${stats.tensors} tensors); files not yet covered: ${stats.skippedFiles.join(', ') || 'none'}`);
  });
});
