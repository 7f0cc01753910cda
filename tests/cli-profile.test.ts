// The CLI's profiling surface (issue 20): `kiln run --profile trace.json` (kernel table grouped
// by source line, Chrome trace), `kiln viz --autograd` (DOT and the HTML page), KILN_DEBUG=ir.

import { beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCli } from './helpers/cli-models.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/kiln.mjs');
const TMP = mkdtempSync(join(tmpdir(), 'kiln-cli-prof-'));
const CNN = 'tests/cli-fixtures/small-cnn.ts';

function kiln(args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
  expect(r.status, `kiln ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('kiln profiling commands', () => {
  beforeAll(() => buildCli(ROOT), 300_000);

  it('run --profile prints kernels by source line and writes a Chrome trace', () => {
    const file = join(TMP, 'cnn.tsgraph');
    kiln(['compile', CNN, '-o', file, '-q']);
    const trace = join(TMP, 'trace.json');
    const r = kiln(['run', file, '--backend', 'cpu', '--runs', '3', '--batch', '2', '--profile', trace]);
    expect(r.stdout).toContain('profile of 3 runs, by kernel and source line:');
    expect(r.stdout).toMatch(/^fused_conv2d +cpu +[\d.]+% .* +3 .*tests\/cli-fixtures\/small-cnn\.ts:\d+:\d+/m);
    expect(r.stdout).toMatch(/Self CPU time total: [\d.]+m?s/);
    const json = JSON.parse(readFileSync(trace, 'utf8')) as { traceEvents: { name: string; ph: string; cat: string; args: Record<string, unknown> }[] };
    expect(json.traceEvents.filter((e) => e.cat === 'run')).toHaveLength(3);
    const conv = json.traceEvents.find((e) => e.name === 'fused_conv2d')!;
    expect(conv.args['IR nodes']).toEqual([expect.stringMatching(/^fused_conv2d in features\.0 at /), expect.stringMatching(/^batch_norm in features\.1 at /),
      expect.stringMatching(/^relu in features\.2 at /), expect.stringMatching(/^max_pool2d in features\.3 at /)]);
  }, 240_000);

  it('viz --autograd draws the autograd graph of one eager forward as DOT and as the HTML page', () => {
    const dot = kiln(['viz', '--autograd', CNN, '-q']).stdout;
    expect(dot.startsWith('digraph autograd {')).toBe(true);
    expect(dot).toMatch(/label="conv2dBackward"/);
    expect(dot).toMatch(/label="features\.0\.weight\\n\(8, 3, 3, 3\)", shape=box, style=filled, fillcolor="#add8e6"/);
    expect(dot).toMatch(/label="saved\\n\(\d+, 3, 8, 8\)"/); // conv's saved input, with its shape
    const page = join(TMP, 'autograd.html');
    kiln(['viz', '--autograd', CNN, '--format', 'html', '-o', page, '-q']);
    const html = readFileSync(page, 'utf8');
    expect(html).toContain('conv2dBackward');
    expect(html).toContain('head.weight');
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/);
  }, 240_000);

  it('KILN_DEBUG=ir prints the captured IR before any pass', () => {
    const r = kiln(['compile', CNN, '-o', join(TMP, 'c2.tsgraph'), '-q'], { KILN_DEBUG: 'ir' });
    expect(r.stderr).toMatch(/^\/\/ KILN_DEBUG=ir: @SmallCnn after jit\.script\ngraph @SmallCnn\(/m);
    expect(r.stderr).toMatch(/batch_norm\(/); // not yet folded
    const t = kiln(['compile', CNN, '--trace', '-o', join(TMP, 'c3.tsgraph'), '-q'], { KILN_DEBUG: 'ir' });
    expect(t.stderr).toContain('// KILN_DEBUG=ir: @SmallCnn after jit.trace');
  }, 240_000);
});
