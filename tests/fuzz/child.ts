// The fuzz child process: runs cases the parent (campaign.ts) names, one at a time, and reports
// each one's start and outcome over IPC, so the parent's watchdog can time it and kill this
// process when a case hangs or blows up memory. Invariant: a case's report carries the process's
// peak RSS before and after it (resourceUsage().maxRSS), so a memory spike is attributed to the
// case that made it even when the memory was freed before the report.

import { setNumThreads } from '@kiln/runtime';
import { makeCase } from './families.js';
import { runCase } from './run-case.js';

export interface ChildJob {
  readonly seed: number;
  readonly from: number;
  readonly to: number;
  readonly scale: number;
  readonly limits: { readonly maxRunMs: number; readonly maxLiveBytes: number; readonly maxTensorBytes: number };
  /** Only these families (default: all). */
  readonly families?: readonly string[];
  /** CPU kernel threads (default 1: one core per fuzz process, no worker threads). */
  readonly threads?: number;
}

export type ChildMessage =
  | { readonly type: 'start'; readonly index: number; readonly family: string; readonly what: string; readonly bytes: number }
  | { readonly type: 'done'; readonly index: number; readonly outcome: string; readonly message?: string; readonly ms: number; readonly peakBefore: number; readonly peakAfter: number };


const peakBytes = () => process.resourceUsage().maxRSS * 1024;

process.on('message', (job: ChildJob) => {
  void (async () => {
    setNumThreads(job.threads ?? 1);
    for (let i = job.from; i < job.to; i++) {
      const c = makeCase(job.seed, i, job.scale, job.families);
      process.send!({ type: 'start', index: i, family: c.family, what: c.what, bytes: c.bytes.length } satisfies ChildMessage);
      const peakBefore = peakBytes();
      const t0 = performance.now();
      const r = await runCase(c, { ...job.limits, verifyChecksum: true });
      const ms = performance.now() - t0;
      await new Promise<void>((res) => process.send!({ type: 'done', index: i, ...r, ms, peakBefore, peakAfter: peakBytes() } satisfies ChildMessage, () => res()));
    }
    process.disconnect();
  })();
});
