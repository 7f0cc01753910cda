// The load+run fuzzer in CI (issue 17): a few thousand structure-aware cases (fuzz/families.ts)
// through load() and one run() in a child process under a per-case watchdog (fuzz/campaign.ts).
// Every case must end in a clean run or a typed error (TsgraphError / RuntimeError): no untyped
// error, no hang, no memory blowup, no crash. Deterministic cases (a fixed seed); the long
// campaign is `npm run fuzz -- --count 100000`. The runtime limits are set low here so the
// cases that run into them (endless loops, huge expands, slow kernels) cost milliseconds, not seconds.

import { describe, expect, it } from 'vitest';
import { formatReport, isBad, runCampaign } from './fuzz/campaign.js';
import { FAMILY_NAMES, makeCase } from './fuzz/families.js';

const CASES = 2500;

describe('load+run fuzz', () => {
  it(`${CASES} hostile files and inputs end in a clean run or a typed error, each within the watchdog`, async () => {
    const report = await runCampaign({
      count: CASES, seed: 0x17, scale: 0.5,
      limits: { maxRunMs: 100, maxLiveBytes: 32 * 2 ** 20, maxTensorBytes: 16 * 2 ** 20 },
      hangMs: 5000, memoryBytes: 1024 * 2 ** 20, workers: 2, chunk: 300,
    });
    const table = formatReport(report, `load+run fuzz: ${report.cases} cases`);
    console.log(table);
    expect(report.cases).toBe(CASES);
    const bad = [...report.counts.values()].flatMap((m) => [...m].filter(([o]) => isBad(o)));
    expect(bad, table).toEqual([]);
    // Every family ran, and the limits each family aims at were reached.
    for (const f of FAMILY_NAMES) expect(report.counts.has(f), `family ${f} ran no case`).toBe(true);
    const got = (f: string, o: string) => report.counts.get(f)?.get(o) ?? 0;
    expect(got('endless-loop', 'RuntimeError:TIME_LIMIT')).toBeGreaterThan(0);
    expect(got('huge-expand', 'RuntimeError:TOO_LARGE') + got('huge-expand', 'RuntimeError:MEMORY_LIMIT')).toBeGreaterThan(0);
    expect(got('huge-product', 'RuntimeError:TIME_LIMIT') + got('slow-kernel', 'RuntimeError:TIME_LIMIT'), 'slow kernels stopped at the time limit').toBeGreaterThan(0);
    expect(got('slow-kernel', 'ok'), 'slow kernels that fit the limit finish').toBeGreaterThan(0);
    expect(got('odd-inputs', 'RuntimeError:INPUT')).toBeGreaterThan(0);
    expect(got('proto-keys', 'TsgraphError:VERIFY') + got('proto-keys', 'TsgraphError:SCHEMA')).toBeGreaterThan(0);
    for (const f of ['long-chain', 'deep-nesting', 'odd-inputs', 'fused-body']) expect(got(f, 'ok'), `no clean run in ${f}`).toBeGreaterThan(0);
    expect(got('fused-body', 'TsgraphError:VERIFY'), 'broken element bodies are refused when loaded').toBeGreaterThan(0);
  }, 180_000);

  it('a case past the hang limit is run again alone before it counts as a hang, and counts once', async () => {
    // An endless loop under a 400 ms run limit outlasts a 60 ms watchdog every time it runs.
    let index = 0;
    while (makeCase(0x17, index, 0.5).family !== 'endless-loop') index++;
    const report = await runCampaign({
      count: 1, from: index, seed: 0x17, scale: 0.5,
      limits: { maxRunMs: 400, maxLiveBytes: 32 * 2 ** 20, maxTensorBytes: 16 * 2 ** 20 },
      hangMs: 60, memoryBytes: 1024 * 2 ** 20,
    });
    expect(report.cases).toBe(1);
    expect(report.counts.get('endless-loop')?.get('hang')).toBe(1);
    const note = report.bad.find((b) => b.index === index);
    expect(note?.detail).toMatch(/also when run alone/);
  }, 60_000);
});
