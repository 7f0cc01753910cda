// Vitest global setup (registered in vitest.config.ts): in an update run (KILN_UPDATE_GOLDEN=1,
// `npm run test:update`) it gives the test workers one log file, where tests/helpers/golden.ts
// lists every golden file it rewrites, and prints that list when the run ends, so the update
// says exactly which files to review. Without the switch it does nothing and creates nothing.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

export default function setup(project: TestProject): (() => void) | void {
  if (process.env.KILN_UPDATE_GOLDEN !== '1') {
    project.provide('kilnGoldenLog', '');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'kiln-golden-'));
  const log = join(dir, 'rewritten.txt');
  project.provide('kilnGoldenLog', log);
  return () => {
    let files: string[] = [];
    try {
      files = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))].sort();
    } catch {
      // No test rewrote anything, so the log was never created.
    }
    rmSync(dir, { recursive: true, force: true });
    console.log(files.length
      ? `\nKILN_UPDATE_GOLDEN: rewrote or removed ${files.length} golden file${files.length === 1 ? '' : 's'} (review the diff):\n${files.map((f) => `  ${f}`).join('\n')}\n`
      : '\nKILN_UPDATE_GOLDEN: every golden file already matched; nothing was rewritten.\n');
  };
}
