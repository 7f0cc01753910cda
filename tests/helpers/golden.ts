// Golden files: expected outputs committed beside the tests (pass golden IR, IR text fixtures,
// .tsgraph fixtures, WGSL kernels), compared with what the code produces now. Invariants:
// - ONE switch regenerates them all: KILN_UPDATE_GOLDEN=1, which `npm run test:update` sets (it
//   also drives vitest's own snapshot update in vitest.config.ts, so nothing needs `-u`).
// - A run without the switch never writes a file: a missing or differing file fails the test
//   with the command that regenerates it.
// - An update run rewrites only the files whose check fails (and deletes stale ones in a checked
//   folder), logs each one, and the run ends with the list (tests/setup/golden-report.ts); files
//   that still match are left byte for byte.
// - tests/golden/ is a copy of PyTorch's results, never regenerated: paths there are refused.
// Golden IR is compared with values renumbered in order of definition (`canonicalIR`), so an
// expected file whose values carry other numbers or names still matches the same graph.

import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, inject } from 'vitest';
import { parseGraph, printGraph } from '@kiln/ir-spec';

/** The environment variable of the switch (documented in README.md, "Tests"). */
export const UPDATE_SWITCH = 'KILN_UPDATE_GOLDEN';
/** The command that regenerates golden files, as failures print it. */
export const UPDATE_COMMAND = 'npm run test:update --';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PYTORCH = fileURLToPath(new URL('../golden/', import.meta.url));

declare module 'vitest' {
  interface ProvidedContext {
    /** The file an update run lists rewritten golden files in ('' when not updating). */
    kilnGoldenLog: string;
  }
}

/** Whether this run regenerates golden files (`npm run test:update`). */
export function updatingGolden(): boolean {
  return process.env[UPDATE_SWITCH] === '1';
}

type Content = string | Uint8Array;

export interface GoldenCheck {
  /** For text: the form both sides are compared in, and a failure's diff shows (default: as is). */
  canonical?: (text: string) => string;
}

/** What `checkGolden` found and did: only 'rewritten' wrote the file. */
export type GoldenStatus = 'same' | 'rewritten' | 'missing' | 'differs';

/**
 * Compares `actual` with the file at `path` and, when `update` and they differ (or the file is
 * missing), writes `actual` there. The mechanism under `expectGoldenFile`, with the switch as an
 * argument so its own tests can run it both ways.
 */
export function checkGolden(path: string, actual: Content, update: boolean, opts: GoldenCheck = {}): GoldenStatus {
  refusePyTorch(path);
  let status: GoldenStatus;
  if (!existsSync(path)) status = 'missing';
  else {
    const raw = readFileSync(path);
    const canonical = opts.canonical ?? ((t: string) => t);
    const same = typeof actual === 'string' ? canonical(raw.toString('utf8')) === canonical(actual) : sameBytes(new Uint8Array(raw), actual);
    status = same ? 'same' : 'differs';
  }
  if (status === 'same' || !update) return status;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, actual);
  return 'rewritten';
}

/**
 * Expects the file at `path` to hold `actual` (text or bytes). Under the switch, a missing or
 * differing file is rewritten instead, and the rewrite is reported.
 *
 * @example
 * expectGoldenFile(fileURLToPath(new URL('./ir-text/cnn.ir', import.meta.url)), printGraph(g));
 */
export function expectGoldenFile(path: string, actual: Content, opts: GoldenCheck & { what?: string } = {}): void {
  const status = checkGolden(path, actual, updatingGolden(), opts);
  const rel = relative(ROOT, path).split(sep).join('/');
  if (status === 'rewritten') return report(rel);
  const how = `if the change is intended, run \`${UPDATE_COMMAND} ${testFile()}\` and review the diff like code`;
  if (status === 'missing') expect.fail(`golden file ${rel} is missing; ${how}`);
  if (status === 'differs') {
    const what = `${opts.what ? `${opts.what}: ` : ''}the output differs from golden file ${rel}; ${how}`;
    const stored = readFileSync(path);
    const canonical = opts.canonical ?? ((t: string) => t);
    if (typeof actual === 'string') expect(canonical(actual), what).toBe(canonical(stored.toString('utf8')));
    else expect.fail(`${what} (${firstDifference(new Uint8Array(stored), actual)})`);
  }
}

/**
 * Expects the folder `dir` to hold exactly the golden files `names` (each checked on its own with
 * `expectGoldenFile`), so a file nothing produces any more does not linger. Under the switch the
 * stale files are deleted instead, and reported.
 */
export function expectGoldenFolder(dir: string, names: readonly string[]): void {
  refusePyTorch(dir);
  const stale = existsSync(dir) ? readdirSync(dir).filter((f) => !names.includes(f)).sort() : [];
  const rel = relative(ROOT, dir).split(sep).join('/');
  if (!updatingGolden()) {
    expect(stale, `golden files in ${rel} that no test produces any more: delete them, or run \`${UPDATE_COMMAND} ${testFile()}\``).toEqual([]);
    return;
  }
  for (const f of stale) {
    rmSync(join(dir, f));
    report(`${rel}/${f}`, 'removed');
  }
}

/**
 * Expects the IR text file at `path` to describe the same graph as `actual` (printer output),
 * up to the numbering and names of values: both sides are compared as `canonicalIR` prints them.
 * Under the switch a file that does not match is rewritten with `actual`; one that matches is
 * kept as written (hand-chosen names survive).
 */
export function expectGoldenIR(path: string, actual: string, what?: string): void {
  expectGoldenFile(path, actual, { canonical: canonicalIR, what });
}

/** Whether two IR texts describe the same graph up to the numbering and names of values. */
export function sameIR(a: string, b: string): boolean {
  return canonicalIR(a) === canonicalIR(b);
}

/**
 * The text as the printer writes it after parsing it: every value numbered in order of
 * definition, attributes sorted, one trailing newline. Text that does not parse is returned
 * unchanged (with trailing newlines trimmed), so it compares unequal and the diff shows it.
 */
export function canonicalIR(text: string): string {
  try {
    return printGraph(parseGraph(text));
  } catch {
    return `${text.replace(/\n+$/, '')}\n`;
  }
}

/** Throws for a path in tests/golden/ (or that folder itself), whose files are PyTorch's. */
function refusePyTorch(path: string): void {
  const full = resolve(path);
  if (full.startsWith(PYTORCH) || `${full}${sep}` === PYTORCH) {
    throw new Error(`${relative(ROOT, full)} is under tests/golden/, a copy of PyTorch's results: it is never regenerated; compare against it instead`);
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function firstDifference(stored: Uint8Array, actual: Uint8Array): string {
  let i = 0;
  while (i < stored.length && i < actual.length && stored[i] === actual[i]) i++;
  return `${actual.length} bytes now, ${stored.length} stored; first difference at byte ${i}`;
}

/** The running test file, relative to the repository root. */
function testFile(): string {
  const path = expect.getState().testPath;
  return path ? relative(ROOT, path).split(sep).join('/') : '<test file>';
}

function report(rel: string, done: 'rewrote' | 'removed' = 'rewrote'): void {
  console.warn(`golden: ${done} ${rel}`);
  let log = '';
  try {
    log = inject('kilnGoldenLog');
  } catch {
    // Outside a vitest run with tests/setup/golden-report.ts: the line above is the report.
  }
  // The list is of the repository's files (the helper's own tests rewrite files in a temp folder).
  if (log && !rel.startsWith('..')) appendFileSync(log, `${rel}${done === 'removed' ? ' (removed)' : ''}\n`);
}
