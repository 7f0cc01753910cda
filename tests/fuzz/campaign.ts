// The load+run fuzz campaign (issue 17): runs cases in `workers` child processes at once
// (child.ts; each takes chunks of consecutive cases from one queue) under a per-case watchdog —
// a case that takes its child's memory past `memoryBytes` is recorded (memory) and the child is
// killed and restarted at the next case; a case that runs past `hangMs` (killed, or finished
// late) is a suspect, run again alone in a fresh child once the others are done, and counts as
// a hang only if it runs past `hangMs` again — and counts outcomes per family. Invariant: every
// case index in [from, from + count) gets exactly one outcome, whatever the children do
// (finish, hang, blow up, crash).
// Used by the CI test (tests/untrusted-fuzz.test.ts) and by `npm run fuzz` (cli.ts). It imports
// nothing from Kiln itself: the child is bundled from the sources with esbuild.

import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildJob, ChildMessage } from './child.js';

export interface CampaignOptions {
  readonly count: number;
  readonly seed: number;
  /** First case index (default 0). */
  readonly from?: number;
  /** Size scale of the scaled families (default 1). */
  readonly scale?: number;
  /** The runtime limits each load() gets. */
  readonly limits: ChildJob['limits'];
  /** A case running longer than this is a hang (ms). */
  readonly hangMs: number;
  /** A case taking the child's resident memory past this is a memory blowup (bytes). */
  readonly memoryBytes: number;
  /** Called every `progressEvery` cases. */
  readonly onProgress?: (done: number, report: CampaignReport) => void;
  readonly progressEvery?: number;
  /** Child processes running cases at once (default 1). */
  readonly workers?: number;
  /** Cases a worker takes from the queue at a time (default 500). */
  readonly chunk?: number;
  /** Only these families (default: all; see makeCase). */
  readonly families?: readonly string[];
  /** CPU kernel threads in each child (default 1). */
  readonly threads?: number;
}

export interface CaseNote { readonly index: number; readonly family: string; readonly what: string; readonly detail: string }

export interface CampaignReport {
  cases: number;
  /** family → outcome → count. Outcomes: ok, TsgraphError:CODE, RuntimeError:CODE, untyped:Name, hang, memory, crash. */
  readonly counts: Map<string, Map<string, number>>;
  /** Examples of untyped errors, hangs, memory blowups and crashes (the first 20). */
  readonly bad: CaseNote[];
  slowest: { ms: number; note: string };
  /** The largest rise of the child's peak RSS one case caused, in bytes. */
  largestRise: { bytes: number; note: string };
  wallMs: number;
  /** Cases that ran past hangMs beside the other workers but not when run again alone. */
  readonly confirmed: string[];
  /** family → summed time of its cases in the child (ms), for the mean per case. */
  readonly ms: Map<string, number>;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ALIASES: Record<string, string> = {
  '@kiln/ir-spec': join(ROOT, 'ir-spec/src/index.ts'),
  '@kiln/runtime': join(ROOT, 'runtime/src/index.ts'),
};

let childBundle: Promise<string> | undefined;
/** child.ts bundled from the sources into one file (once per process). */
function bundleChild(): Promise<string> {
  childBundle ??= (async () => {
    const { build } = await import('esbuild');
    const outfile = join(ROOT, 'node_modules/.cache/kiln-fuzz', `child-${process.pid}.mjs`);
    await build({ entryPoints: [join(ROOT, 'tests/fuzz/child.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile, alias: ALIASES, logLevel: 'warning' });
    return outfile;
  })();
  return childBundle;
}

/** Resident bytes of process `pid` now (Linux /proc), or 0 where that cannot be read. */
function rssOf(pid: number): number {
  const f = `/proc/${pid}/statm`;
  if (!existsSync(f)) return 0;
  try { return Number(readFileSync(f, 'utf8').split(' ')[1]) * 4096; } catch { return 0; }
}

export const isBad = (outcome: string) => outcome.startsWith('untyped:') || outcome === 'hang' || outcome === 'memory' || outcome === 'crash';

export async function runCampaign(opts: CampaignOptions): Promise<CampaignReport> {
  const file = await bundleChild();
  const from = opts.from ?? 0, to = from + opts.count;
  const report: CampaignReport = { cases: 0, counts: new Map(), bad: [], slowest: { ms: 0, note: '' }, largestRise: { bytes: 0, note: '' }, wallMs: 0, confirmed: [], ms: new Map() };
  const t0 = performance.now();
  const record = (family: string, outcome: string, note: CaseNote | null) => {
    let m = report.counts.get(family);
    if (!m) report.counts.set(family, (m = new Map()));
    m.set(outcome, (m.get(outcome) ?? 0) + 1);
    report.cases++;
    if (note && isBad(outcome) && report.bad.length < 20) report.bad.push(note);
    if (opts.onProgress && report.cases % (opts.progressEvery ?? 1000) === 0) opts.onProgress(report.cases, report);
  };
  // A case that ran past hangMs beside the other workers is only a suspect: it is run again
  // alone (below) before it counts as a hang.
  const suspects: CaseNote[] = [];
  const job = (a: number, b: number): ChildJob => ({ seed: opts.seed, from: a, to: b, scale: opts.scale ?? 1, limits: opts.limits, families: opts.families, threads: opts.threads });
  const workers = Math.max(1, Math.min(opts.workers ?? 1, opts.count));
  const chunk = Math.max(1, Math.min(opts.chunk ?? 500, Math.ceil(opts.count / workers)));
  let taken = from;
  const worker = async () => {
    while (taken < to) {
      const a = taken, b = Math.min(to, a + chunk);
      taken = b;
      let next = a;
      while (next < b) next = await runChild(file, job(next, b), opts, record, report, suspects);
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, worker));
    for (const s of suspects) {
      const alone: CaseNote[] = [];
      await runChild(file, job(s.index, s.index + 1), opts, record, report, alone);
      if (alone.length) record(s.family, 'hang', { ...alone[0], detail: `${alone[0].detail}; also when run alone` });
      else report.confirmed.push(`case ${s.index} (${s.family}: ${s.what}) ran past ${opts.hangMs} ms beside the other workers (${s.detail}) but not alone`);
    }
  } finally {
    childBundle = undefined;
    rmSync(file, { force: true });
  }
  report.wallMs = performance.now() - t0;
  return report;
}

/** Runs one child over cases [job.from, job.to); resolves with the index to continue at. A case
 * past hangMs goes to `suspects` instead of being recorded. */
function runChild(file: string, job: ChildJob, opts: CampaignOptions, record: (family: string, outcome: string, note: CaseNote | null) => void, report: CampaignReport, suspects: CaseNote[]): Promise<number> {
  return new Promise((resolve) => {
    const child: ChildProcess = fork(file, [], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' });
    let current: Extract<ChildMessage, { type: 'start' }> | null = null;
    let next = job.from;
    let ended = false;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-2000); });
    let timer: NodeJS.Timeout | undefined;
    const end = (outcome: string | null, detail: string) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      clearInterval(poll);
      if (outcome && current) {
        const note = { index: current.index, family: current.family, what: current.what, detail };
        if (outcome === 'hang') suspects.push(note);
        else record(current.family, outcome, note);
        next = current.index + 1;
      } else if (outcome) {
        // Died between cases (making case `next`, or starting): that case is the crash.
        record('(harness)', outcome, { index: next, family: '(harness)', what: `making case ${next}`, detail });
        next++;
      }
      child.kill('SIGKILL');
      resolve(next);
    };
    const poll = setInterval(() => {
      const rss = child.pid ? rssOf(child.pid) : 0;
      if (rss > opts.memoryBytes) end('memory', `resident memory reached ${(rss / 2 ** 20).toFixed(0)} MiB (limit ${(opts.memoryBytes / 2 ** 20).toFixed(0)} MiB)`);
    }, 20);
    child.on('message', (m: ChildMessage) => {
      if (m.type === 'start') {
        current = m;
        clearTimeout(timer);
        timer = setTimeout(() => end('hang', `still running after ${opts.hangMs} ms`), opts.hangMs);
        return;
      }
      clearTimeout(timer);
      const c = current!;
      const note = (detail: string): CaseNote => ({ index: m.index, family: c.family, what: c.what, detail });
      report.ms.set(c.family, (report.ms.get(c.family) ?? 0) + m.ms);
      if (m.ms > report.slowest.ms) report.slowest = { ms: m.ms, note: `case ${m.index} (${c.family}: ${c.what}) → ${m.outcome}` };
      const rise = m.peakAfter - m.peakBefore;
      if (rise > report.largestRise.bytes) report.largestRise = { bytes: rise, note: `case ${m.index} (${c.family}: ${c.what}) → ${m.outcome}` };
      if (m.peakAfter > opts.memoryBytes && rise > 0) {
        record(c.family, 'memory', note(`peak resident memory ${(m.peakAfter / 2 ** 20).toFixed(0)} MiB (limit ${(opts.memoryBytes / 2 ** 20).toFixed(0)} MiB)`));
        current = null;
        next = m.index + 1;
        ended = true;
        clearInterval(poll);
        child.kill('SIGKILL');
        resolve(next); // a fresh child: its peak starts low again
        return;
      }
      if (m.ms > opts.hangMs) suspects.push(note(`finished in ${m.ms.toFixed(0)} ms → ${m.outcome}`));
      else record(c.family, m.outcome, note(m.message ?? `${m.ms.toFixed(0)} ms`));
      current = null;
      next = m.index + 1;
    });
    child.on('exit', (code, signal) => {
      if (ended) return;
      if (next >= job.to && !current) { ended = true; clearTimeout(timer); clearInterval(poll); resolve(next); return; }
      end('crash', `the child exited (code ${code}, signal ${signal}): ${stderr}`);
    });
    child.send(job);
  });
}

/** How an outcome counts in the table: a clean run, a typed refusal, or one of the bad classes. */
function outcomeClass(o: string): string {
  if (o === 'ok') return 'ok';
  if (o.startsWith('untyped:')) return 'untyped';
  if (o === 'hang' || o === 'memory' || o === 'crash') return o;
  return 'typed';
}

/** The outcome table: per family the cases, clean runs, typed refusals and bad outcomes, then the typed codes. */
export function formatReport(r: CampaignReport, title: string): string {
  const COLS = ['ok', 'typed', 'untyped', 'hang', 'memory', 'crash'];
  const famW = Math.max(12, ...[...r.counts.keys()].map((f) => f.length));
  const row = (name: string, m: ReadonlyMap<string, number>) => {
    const by = new Map<string, number>();
    let total = 0;
    for (const [o, n] of m) { by.set(outcomeClass(o), (by.get(outcomeClass(o)) ?? 0) + n); total += n; }
    const ms = name === 'total' ? [...r.ms.values()].reduce((a, b) => a + b, 0) : r.ms.get(name) ?? 0;
    return [name.padEnd(famW), String(total).padStart(7), ...COLS.map((c) => String(by.get(c) ?? 0).padStart(7)), (ms / Math.max(1, total)).toFixed(1).padStart(9)].join(' ');
  };
  const all = new Map<string, number>();
  for (const m of r.counts.values()) for (const [o, n] of m) all.set(o, (all.get(o) ?? 0) + n);
  const families = [...r.counts].sort((a, b) => a[0].localeCompare(b[0]));
  const codes = (m: ReadonlyMap<string, number>) => [...m].filter(([o]) => outcomeClass(o) === 'typed').sort((a, b) => b[1] - a[1]).map(([o, n]) => `${o.replace('Error:', ' ')} ${n}`).join(', ');
  const lines = [title,
    ['family'.padEnd(famW), 'cases'.padStart(7), ...COLS.map((c) => c.padStart(7)), 'ms/case'.padStart(9)].join(' '),
    ...families.map(([f, m]) => row(f, m)),
    row('total', all),
    'typed refusals by code:',
    ...families.map(([f, m]) => `  ${f.padEnd(famW)} ${codes(m) || '-'}`),
    `  ${'total'.padEnd(famW)} ${codes(all)}`,
    `slowest case: ${r.slowest.ms.toFixed(0)} ms, ${r.slowest.note}`,
    `largest peak-memory rise of one case: ${(r.largestRise.bytes / 2 ** 20).toFixed(0)} MiB, ${r.largestRise.note}`,
    `wall time: ${(r.wallMs / 1000).toFixed(1)} s`,
    ...r.confirmed.map((c) => `  slow beside the others, not alone: ${c}`)];
  for (const b of r.bad) lines.push(`  BAD case ${b.index} (${b.family}: ${b.what}): ${b.detail.split('\n').slice(0, 4).join(' | ')}`);
  return lines.join('\n');
}
