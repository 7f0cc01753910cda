// The golden-file mechanism itself (tests/helpers/golden.ts): golden IR compares graphs up to
// the numbering and names of values — the same graph however it was built or numbered matches,
// a different graph fails; the one switch (KILN_UPDATE_GOLDEN) is the only way a test writes an
// expected file, and no other switch or snapshot mechanism exists in the repository.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GraphBuilder, parseGraph, printGraph, tensorType, Value, type Graph } from '@kiln/ir-spec';
import { PASSES } from '@kiln/compiler';
import {
  canonicalIR, checkGolden, expectGoldenFile, expectGoldenFolder, expectGoldenIR, sameIR, UPDATE_SWITCH,
} from './helpers/golden.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PASS_DIR = fileURLToPath(new URL('./passes/', import.meta.url));
const TMP = mkdtempSync(join(tmpdir(), 'kiln-golden-test-'));
afterAll(() => rmSync(TMP, { recursive: true, force: true }));

const read = (path: string) => readFileSync(path, 'utf8');
const f32 = (...shape: (number | string)[]) => tensorType('float32', shape);

/** Runs `fn` with the switch on or off, restoring it after (an update run keeps its setting). */
function withSwitch<T>(on: boolean, fn: () => T): T {
  const saved = process.env[UPDATE_SWITCH];
  if (on) process.env[UPDATE_SWITCH] = '1';
  else delete process.env[UPDATE_SWITCH];
  try {
    return fn();
  } finally {
    if (saved === undefined) delete process.env[UPDATE_SWITCH];
    else process.env[UPDATE_SWITCH] = saved;
  }
}

/** z = relu(x) + y, squared; `noise` first creates unrelated values and a whole other graph. */
function buildSmall(noise: boolean): Graph {
  if (noise) {
    for (let i = 0; i < 7; i++) new Value(f32(i + 1));
    const other = new GraphBuilder('other');
    other.output('o', other.op1('neg', [other.input('a', f32(3))]));
    other.build();
  }
  const b = new GraphBuilder('small');
  const x = b.input('x', f32('N', 4));
  const y = b.input('y', f32('N', 4));
  if (noise) b.literal(5); // an unused value, created first; eliminate-dead-code removes it
  const s = b.op1('add', [b.op1('relu', [x]), y]);
  b.output('z', b.op1('mul', [s, s]));
  return b.build();
}

describe('golden IR survives renumbering', () => {
  const cse = read(join(PASS_DIR, 'eliminate-common-subexpressions', 'repeat.expected.ir'));

  it('the same graph built after unrelated values (and through a pass that renumbers) matches one golden file', () => {
    const file = join(TMP, 'small.expected.ir');
    writeFileSync(file, printGraph(buildSmall(false)));
    const noisy = buildSmall(true);
    // The unused literal shifts every number after it; dead-code elimination shifts them back.
    expect(printGraph(noisy)).not.toBe(read(file));
    expect(checkGolden(file, printGraph(PASSES['eliminate-dead-code'](noisy)), false, { canonical: canonicalIR })).toBe('same');
    expect(checkGolden(file, printGraph(noisy), false, { canonical: canonicalIR })).toBe('differs');
  });

  it('an expected file that keeps other numbers or names matches the pass output', () => {
    const shifted = cse.replace(/%(\d+)/g, (_, n) => `%${Number(n) + 10}`);
    const reversed = cse.replace(/%(\d+)/g, (_, n) => `%${3 - Number(n)}`);
    const named = cse.replace(/%0\b/g, '%r').replace(/%1\b/g, '%sum').replace(/%2\b/g, '%two').replace(/%3\b/g, '%out');
    for (const text of [shifted, reversed, named]) {
      expect(text).not.toBe(cse);
      expect(sameIR(text, cse), text).toBe(true);
    }
    // Written by hand from the input by deleting the dead lines, keeping the input's numbers.
    const input = read(join(PASS_DIR, 'eliminate-dead-code', 'unused.input.ir'));
    const byHand = input.split('\n').filter((l) => !/= (relu|exp|neg|sigmoid)\(/.test(l)).join('\n')
      .replace(/ {2}%7 = if[^]*?\) : f32\[N,4\]\n/, '');
    expect(byHand).toContain('%3 = if');
    const out = printGraph(PASSES['eliminate-dead-code'](parseGraph(input)));
    expect(sameIR(byHand, out)).toBe(true);
    expect(canonicalIR(byHand)).toBe(out);
  });

  it('every committed pass golden file still matches with its values renumbered backwards, and fails with a line dropped', () => {
    const files = readdirSync(PASS_DIR).filter((d) => statSync(join(PASS_DIR, d)).isDirectory())
      .flatMap((d) => readdirSync(join(PASS_DIR, d)).filter((f) => f.endsWith('.expected.ir')).map((f) => join(PASS_DIR, d, f)));
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const text = read(file);
      const numbers = [...text.matchAll(/%(\d+)\b/g)].map((m) => Number(m[1]));
      const top = Math.max(...numbers);
      const backwards = text.replace(/%(\d+)\b/g, (_, n) => `%${top - Number(n)}`);
      expect(backwards, file).not.toBe(text);
      expect(sameIR(backwards, text), file).toBe(true);
      const lines = text.split('\n');
      const node = lines.findIndex((l) => /^ {2}%\d+ = /.test(l) && !l.endsWith('({'));
      const dropped = [...lines.slice(0, node), ...lines.slice(node + 1)].join('\n');
      expect(sameIR(dropped, text), `${file} without line ${node + 1}`).toBe(false);
    }
  });

  it('a different graph fails: an op, an attribute, a type, an edge, operand order, a node more, an output', () => {
    const changes: [string, string][] = [
      ['an op', cse.replace('relu(%x)', 'tanh(%x)')],
      ['an attribute', cse.replace('value=2', 'value=3')],
      ['a type', cse.replace('%2 = constant() {dtype="float32", value=2} : f32[]', '%2 = constant() {dtype="float32", value=2} : f32[1]')],
      ['an edge', cse.replace('add(%0, %0)', 'add(%0, %x)')],
      ['operand order', cse.replace('mul(%1, %2)', 'mul(%2, %1)')],
      ['a node more', cse.replace('  return', '  %9 = neg(%x) : f32[N,4]\n  return')],
      ['an output', cse.replace('z=%3', 'z=%1')],
      ['text that does not parse', cse.replace('relu(%x)', 'relu(%x')],
    ];
    const file = join(TMP, 'cse.expected.ir');
    writeFileSync(file, cse);
    for (const [what, text] of changes) {
      expect(text, what).not.toBe(cse);
      expect(sameIR(text, cse), what).toBe(false);
      expect(checkGolden(file, text, false, { canonical: canonicalIR }), what).toBe('differs');
    }
    expect(read(file)).toBe(cse);
  });
});

describe('the update switch', () => {
  it('without it, a missing or different file fails with the command and nothing is written', () => {
    withSwitch(false, () => {
      const missing = join(TMP, 'never.txt');
      expect(() => expectGoldenFile(missing, 'a\n')).toThrow(/golden file .*never\.txt is missing; .*npm run test:update -- tests\/golden-files\.test\.ts/);
      expect(existsSync(missing)).toBe(false);
      const file = join(TMP, 'kept.txt');
      writeFileSync(file, 'old\n');
      expect(() => expectGoldenFile(file, 'new\n', { what: 'the thing' })).toThrow(/the thing: the output differs from golden file/);
      expect(read(file)).toBe('old\n');
      const bin = join(TMP, 'kept.bin');
      writeFileSync(bin, new Uint8Array([1, 2, 3]));
      expect(() => expectGoldenFile(bin, new Uint8Array([1, 9, 3]))).toThrow(/3 bytes now, 3 stored; first difference at byte 1/);
      expect([...readFileSync(bin)]).toEqual([1, 2, 3]);
      expectGoldenFile(bin, new Uint8Array([1, 2, 3]));
    });
  });

  it('with it, only failing files are rewritten, each reported; a matching hand-numbered IR file is kept', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      withSwitch(true, () => {
        const fresh = join(TMP, 'sub', 'fresh.ir');
        const text = printGraph(buildSmall(false));
        expectGoldenIR(fresh, text);
        expect(read(fresh)).toBe(text);
        const hand = join(TMP, 'hand.ir');
        const handText = text.replace(/%(\d+)/g, (_, n) => `%v${n}`);
        writeFileSync(hand, handText);
        expectGoldenIR(hand, text);
        expect(read(hand)).toBe(handText);
        const bin = join(TMP, 'rewritten.bin');
        writeFileSync(bin, new Uint8Array([1]));
        expectGoldenFile(bin, new Uint8Array([2, 3]));
        expect([...readFileSync(bin)]).toEqual([2, 3]);
      });
      const lines = warn.mock.calls.map((c) => String(c[0]));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/^golden: rewrote .*sub\/fresh\.ir$/);
      expect(lines[1]).toMatch(/^golden: rewrote .*rewritten\.bin$/);
    } finally {
      warn.mockRestore();
    }
  });

  it('a golden folder holds only the files a test produces: stale ones fail, or are deleted under the switch', () => {
    const dir = join(TMP, 'kernels');
    expectGoldenFolder(dir, []); // no folder yet: nothing stale
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.wgsl'), 'a');
    writeFileSync(join(dir, 'old.wgsl'), 'old');
    withSwitch(false, () => expect(() => expectGoldenFolder(dir, ['a.wgsl'])).toThrow(/no test produces any more/));
    expect(readdirSync(dir).sort()).toEqual(['a.wgsl', 'old.wgsl']);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      withSwitch(true, () => expectGoldenFolder(dir, ['a.wgsl']));
      expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([expect.stringMatching(/^golden: removed .*kernels\/old\.wgsl$/)]);
    } finally {
      warn.mockRestore();
    }
    expect(readdirSync(dir)).toEqual(['a.wgsl']);
  });

  it('never touches tests/golden/, the copies of PyTorch results, even under the switch', () => {
    const readme = fileURLToPath(new URL('./golden/README.md', import.meta.url));
    const before = read(readme);
    expect(() => checkGolden(readme, 'replaced', true)).toThrow(/tests\/golden\/README\.md is under tests\/golden\/, a copy of PyTorch's results: it is never regenerated/);
    expect(() => withSwitch(true, () => expectGoldenFile(join(PASS_DIR, '..', 'golden', 'README.md'), 'replaced'))).toThrow(/never regenerated/);
    const ops = fileURLToPath(new URL('./golden/ops', import.meta.url));
    const listed = readdirSync(ops).sort();
    // Every file listed, so even a broken guard would delete nothing.
    expect(() => withSwitch(true, () => expectGoldenFolder(ops, listed))).toThrow(/golden\/ops is under tests\/golden\/.*never regenerated/);
    expect(readdirSync(ops).sort()).toEqual(listed);
    expect(read(readme)).toBe(before);
  });
});

describe('one switch in the repository', () => {
  /** Source and docs that could hold a test switch (not dependencies, builds or data). */
  function sources(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (['node_modules', 'dist', 'golden', '.git'].includes(name)) return [];
      if (statSync(path).isDirectory()) return sources(path);
      return /\.(ts|mts|mjs|js|json|md)$/.test(name) && !name.endsWith('.generated.ts') ? [path] : [];
    });
  }
  const files = ['tests', 'compiler', 'ir-spec', 'runtime', 'packages', 'scripts', 'examples', 'bench']
    .flatMap((d) => sources(join(ROOT, d)))
    .concat(['README.md', 'package.json', 'vitest.config.ts'].map((f) => join(ROOT, f)))
    .filter((f) => f !== fileURLToPath(import.meta.url));
  // Split so this file does not match itself.
  const others: [RegExp, string][] = [
    [new RegExp(`(?<!KILN_)UPDATE_${'GOLDEN'}|KILN_UPDATE_${'FIXTURES'}`), 'another update variable'],
    [new RegExp(`toMatch(Inline|File)?${'Snapshot'}\\(`), 'a vitest snapshot (use expectGoldenFile)'],
    [new RegExp(`vitest( run)? -${'u'}\\b`), 'vitest -u (use npm run test:update)'],
    [new RegExp(`process\\.env(\\.|\\[')KILN_UPDATE_${'GOLDEN'}`), 'reading the switch outside the helper'],
  ];
  const owners = ['tests/helpers/golden.ts', 'tests/setup/golden-report.ts', 'vitest.config.ts'];

  it('is read only by tests/helpers/golden.ts (and the config and report that follow it)', () => {
    expect(files.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const f of files) {
      const rel = relative(ROOT, f);
      const text = read(f);
      for (const [re, what] of others) {
        if (re.test(text) && !(what.startsWith('reading') && owners.includes(rel))) found.push(`${rel}: ${what}`);
      }
    }
    expect(found).toEqual([]);
  });
});
