// optim.lrScheduler against PyTorch 1.13 (tests/golden-kiln/nn_api/schedulers.json, written by
// scripts/golden/nn_api.py): the lr of every param group (and OneCycleLR's momentum / Adam
// beta1) before and after each of 100 steps, for every scheduler, equal to PyTorch's within
// 1e-12 relative (the formulas are PyTorch's float64 ones in the same order; only libm's last
// bit may differ). Also: stateDict()/loadStateDict() resumes a schedule exactly.

import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { optim, zeros, nn } from '@kiln/core';

const FILE = fileURLToPath(new URL('./golden-kiln/nn_api/schedulers.json', import.meta.url));
interface Row { lr: number[]; momentum?: number[]; beta1?: number[] }
const GOLDEN = JSON.parse(readFileSync(FILE, 'utf8')) as { torch: string; metrics: number[]; cases: Record<string, Row[]> };
const S = optim.lrScheduler;

const param = () => new nn.Parameter(zeros([1]));
/** SGD with two groups (lr 0.1 and 0.01), momentum 0.9: the generator's `sgd2`. */
const sgd2 = () => new optim.SGD([{ params: [param()] }, { params: [param()], lr: 0.01 }], { lr: 0.1, momentum: 0.9 });
const adam = () => new optim.Adam([param(), param()], { lr: 0.001 });

type Opt = ReturnType<typeof sgd2> | ReturnType<typeof adam>;
/** A scheduler: ReduceLROnPlateau steps with a metric, the others without. */
type Sched = { step(metric: number): void };
type Case = { opt: () => Opt; make: (o: Opt) => Sched; metric?: (e: number) => number };
const stepOnce = (s: Sched, c: Case, e: number): void => {
  if (c.metric) s.step(c.metric(e));
  else (s as unknown as { step(): void }).step();
};

const CASES: Record<string, Case> = {
  StepLR: { opt: sgd2, make: (o) => new S.StepLR(o, { stepSize: 7, gamma: 0.5 }) },
  MultiStepLR: { opt: sgd2, make: (o) => new S.MultiStepLR(o, { milestones: [10, 30, 30, 80], gamma: 0.3 }) },
  ExponentialLR: { opt: sgd2, make: (o) => new S.ExponentialLR(o, { gamma: 0.97 }) },
  CosineAnnealingLR: { opt: sgd2, make: (o) => new S.CosineAnnealingLR(o, { tMax: 30, etaMin: 0.001 }) },
  LinearLR: { opt: sgd2, make: (o) => new S.LinearLR(o, { startFactor: 0.25, endFactor: 1, totalIters: 20 }) },
  LambdaLR: { opt: sgd2, make: (o) => new S.LambdaLR(o, { lrLambda: (e) => 1.0 / (1.0 + 0.1 * e) }) },
  OneCycleLR_sgd: { opt: sgd2, make: (o) => new S.OneCycleLR(o, { maxLr: [0.1, 0.05], totalSteps: 100 }) },
  OneCycleLR_adam_three_phase_linear: {
    opt: adam, make: (o) => new S.OneCycleLR(o, { maxLr: 0.01, epochs: 10, stepsPerEpoch: 10, pctStart: 0.25, annealStrategy: 'linear', threePhase: true }),
  },
  SequentialLR_linear_cosine: {
    opt: sgd2, make: (o) => new S.SequentialLR(o, { schedulers: [new S.LinearLR(o, { startFactor: 0.1, totalIters: 10 }), new S.CosineAnnealingLR(o, { tMax: 90 })], milestones: [10] }),
  },
  SequentialLR_constant_exp_step: {
    opt: sgd2,
    make: (o) => new S.SequentialLR(o, {
      schedulers: [new S.ExponentialLR(o, { gamma: 0.9 }), new S.StepLR(o, { stepSize: 5, gamma: 0.5 }), new S.ExponentialLR(o, { gamma: 0.99 })], milestones: [20, 50],
    }),
  },
  ReduceLROnPlateau_min_rel: {
    opt: sgd2, make: (o) => new S.ReduceLROnPlateau(o, { factor: 0.5, patience: 3, cooldown: 2, threshold: 0.01, minLr: 0.002 }),
    metric: (e) => GOLDEN.metrics[e],
  },
  ReduceLROnPlateau_max_abs: {
    opt: sgd2, make: (o) => new S.ReduceLROnPlateau(o, { mode: 'max', factor: 0.3, patience: 2, threshold: 0.001, thresholdMode: 'abs' }),
    metric: (e) => -GOLDEN.metrics[e],
  },
};

function snap(o: Opt): Row {
  const gs = o.paramGroups as unknown as Record<string, unknown>[];
  const row: Row = { lr: gs.map((g) => g.lr as number) };
  if ('momentum' in gs[0]) row.momentum = gs.map((g) => g.momentum as number);
  if ('betas' in gs[0]) row.beta1 = gs.map((g) => (g.betas as number[])[0]);
  return row;
}

function expectRowsClose(name: string, got: Row[], want: Row[]): void {
  expect(got.length).toBe(want.length);
  want.forEach((w, step) => {
    for (const key of ['lr', 'momentum', 'beta1'] as const) {
      const wv = w[key];
      if (!wv) continue;
      const gv = got[step][key];
      expect(gv, `${name} step ${step}: ${key}`).toBeTruthy();
      wv.forEach((v, g) => {
        const err = Math.abs((gv as number[])[g] - v);
        if (err > 1e-12 * Math.abs(v) + 1e-18) expect.fail(`${name} step ${step} group ${g}: ${key} ${(gv as number[])[g]}, PyTorch ${v}`);
      });
    }
  });
}

describe(`lr schedulers match PyTorch ${GOLDEN.torch} over 100 steps`, () => {
  it('covers every golden case', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(GOLDEN.cases).sort());
  });
  for (const [name, c] of Object.entries(CASES)) {
    it(name, () => {
      const o = c.opt();
      const s = c.make(o);
      const rows = [snap(o)];
      for (let e = 0; e < 100; e++) {
        o.step();
        stepOnce(s, c, e);
        rows.push(snap(o));
      }
      expectRowsClose(name, rows, GOLDEN.cases[name]);
    });
  }

  it('stateDict/loadStateDict resumes a schedule where it left off', () => {
    for (const name of ['CosineAnnealingLR', 'OneCycleLR_sgd', 'SequentialLR_linear_cosine', 'ReduceLROnPlateau_min_rel', 'StepLR']) {
      const c = CASES[name];
      const o = c.opt();
      const s = c.make(o) as Sched & { stateDict(): Record<string, unknown> };
      for (let e = 0; e < 40; e++) stepOnce(s, c, e);
      const saved = JSON.parse(JSON.stringify(s.stateDict())) as Record<string, unknown>;
      const optSaved = o.stateDict();
      // A fresh optimizer and scheduler, restored, continue with PyTorch's sequence.
      const o2 = c.opt();
      const s2 = c.make(o2) as Sched & { loadStateDict(sd: Record<string, unknown>): void };
      o2.loadStateDict(optSaved as never);
      s2.loadStateDict(saved);
      const rows: Row[] = [];
      for (let e = 40; e < 100; e++) {
        stepOnce(s2, c, e);
        rows.push(snap(o2));
      }
      expectRowsClose(`${name} (resumed)`, rows, GOLDEN.cases[name].slice(41));
    }
  });

  it('errors name the scheduler and the fix', () => {
    expect(() => new S.OneCycleLR(sgd2(), { maxLr: 0.1 })).toThrow(/give totalSteps, or epochs and stepsPerEpoch/);
    const o = sgd2();
    const s = new S.OneCycleLR(o, { maxLr: 0.1, totalSteps: 3 });
    for (let k = 0; k < 3; k++) s.step();
    expect(() => s.step()).toThrow(/tried to step 4 times; the schedule has totalSteps=3/);
    expect(() => new S.LambdaLR(sgd2(), { lrLambda: [() => 1] })).toThrow(/expected 2 lrLambda functions/);
    expect(() => new S.SequentialLR(sgd2(), { schedulers: [new S.StepLR(sgd2(), { stepSize: 2 })], milestones: [] })).toThrow(/belongs to another optimizer/);
  });
});
