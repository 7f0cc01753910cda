// Files saved by jit (script and trace) store source locations relative to the working
// directory, so the same model saved from two checkouts gives the same bytes; in memory, errors
// and graphs keep the absolute paths (clickable in an editor).
import { describe, it, expect } from 'vitest';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeTsgraph } from '@kiln/ir-spec';
import { jit, randn } from 'kiln';
import { relativeLocation } from '../packages/kiln/src/jit/producer.js';
import { SmallCnn } from './cli-fixtures/small-cnn.js';

const FILE = fileURLToPath(new URL('./cli-fixtures/small-cnn.ts', import.meta.url));
const REL = relative(process.cwd(), FILE);

function locs(bytes: Uint8Array): string[] {
  const out: string[] = [];
  JSON.stringify(decodeTsgraph(bytes).header.graph, (k, v) => { if (k === 'loc') out.push(v as string); return v; });
  return out;
}

describe('saved source paths', () => {
  it('jit.script: the source metadata and every node location are relative', () => {
    const scripted = jit.script(new SmallCnn().eval(), { sourceFile: FILE });
    scripted.forward(randn([2, 3, 8, 8]));
    expect(scripted.graph.metadata.source).toBe(FILE);
    const bytes = scripted.toBytes();
    expect(decodeTsgraph(bytes).header.metadata.source).toBe(REL);
    const l = locs(bytes);
    expect(l.length).toBeGreaterThan(0);
    for (const loc of l) expect(loc).toMatch(new RegExp(`^${REL.replace(/[.]/g, '\\.')}:\\d+:\\d+$`));
  });

  it('jit.trace: node locations from the stack are relative', () => {
    const traced = jit.trace(new SmallCnn().eval(), [randn([2, 3, 8, 8])]);
    const l = locs(traced.toBytes());
    expect(l.length).toBeGreaterThan(0);
    for (const loc of l) expect(loc.startsWith('/')).toBe(false);
  });

  it('relativeLocation: absolute paths and file URLs with or without line:col; other text unchanged', () => {
    const cwd = process.cwd();
    expect(relativeLocation(`${cwd}/a/m.ts:3:7`)).toBe('a/m.ts:3:7');
    expect(relativeLocation(`file://${cwd}/a/m.ts:3:7`)).toBe('a/m.ts:3:7');
    expect(relativeLocation(`${cwd}/a/m.ts`)).toBe('a/m.ts');
    expect(relativeLocation('/elsewhere/m.ts:1:2')).toBe(`${relative(cwd, '/elsewhere/m.ts')}:1:2`);
    expect(relativeLocation('Gate.forward (runtime text):2:5')).toBe('Gate.forward (runtime text):2:5');
  });
});
