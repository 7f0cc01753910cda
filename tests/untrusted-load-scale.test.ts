// Loading at scale (issue 17 finding 2, issue 15 load time): a 100,000-node graph loads and runs;
// the hand-written node check that spares zod on large headers refuses exactly what the schema
// refuses, with the schema's message; and weights read from a file are views into its bytes
// while bytes a caller passes are copied (the model never aliases the caller's memory).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeTsgraph, encodeTsgraph, GraphBuilder, tensorType, TsgraphError } from '@kiln/ir-spec';
import { load } from '@kiln/runtime';
import { assemble, disassemble, type Json } from './fixtures/tsgraph-craft.js';
import { chainGraph } from './fixtures/untrusted-graphs.js';

const dir = mkdtempSync(join(tmpdir(), 'kiln-load-scale-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The file of `bytes` with its header edited by `edit`. */
function editHeader(bytes: Uint8Array, edit: (h: Json) => void): Uint8Array {
  const parts = disassemble(bytes);
  const h = JSON.parse(parts.header) as Json;
  edit(h);
  return assemble({ ...parts, header: JSON.stringify(h) });
}

function schemaMessage(bytes: Uint8Array): string {
  try {
    decodeTsgraph(bytes);
  } catch (e) {
    expect(e).toBeInstanceOf(TsgraphError);
    expect((e as TsgraphError).code).toBe('SCHEMA');
    return (e as Error).message;
  }
  throw new Error('expected a SCHEMA refusal');
}

describe('a 100,000-node graph', () => {
  it('loads and runs: relu applied 100,000 times', async () => {
    const n = 100_000;
    const bytes = encodeTsgraph(chainGraph(n));
    const model = await load(bytes, { backend: 'cpu' });
    const [y] = await model.run([{ data: new Float32Array([-1, 2, -3, 4]), shape: [1, 4], dtype: 'float32' }]);
    expect(Array.from(y.data)).toEqual([0, 2, 0, 4]);
    expect(model.stats?.nodesRun).toBe(n);
  }, 120_000);
});

describe('the node fast path refuses what the schema refuses, with its message', () => {
  const good = encodeTsgraph(chainGraph(3));
  const node = (h: Json, i: number) => ((h as { graph: { nodes: Json[] } }).graph.nodes[i] as { [k: string]: Json });
  const cases: [string, (h: Json) => void, RegExp][] = [
    ['op is a number', (h) => { node(h, 1).op = 5; }, /header field graph\.nodes\[1\]\.op: /],
    ['op is empty', (h) => { node(h, 1).op = ''; }, /header field graph\.nodes\[1\]\.op: /],
    ['an unknown node key', (h) => { node(h, 2).extra = 1; }, /header field graph\.nodes\[2\]/],
    ['a negative input id', (h) => { node(h, 1).inputs = [-1]; }, /header field graph\.nodes\[1\]\.inputs\[0\]: /],
    ['a fractional output id', (h) => { (node(h, 0).outputs as { [k: string]: Json }[])[0].id = 1.5; }, /header field graph\.nodes\[0\]\.outputs\[0\]\.id: /],
    ['an unparseable output type', (h) => { (node(h, 0).outputs as { [k: string]: Json }[])[0].type = 'f32[N,'; }, /header field graph\.nodes\[0\]\.outputs\[0\]\.type: type 'f32\[N,'/],
    ['attrs is an array', (h) => { node(h, 1).attrs = []; }, /header field graph\.nodes\[1\]\.attrs: /],
    ['meta with an unknown key', (h) => { node(h, 1).meta = { scope: 'a', other: 'b' }; }, /header field graph\.nodes\[1\]\.meta/],
    ['a hint that is not a string', (h) => { (node(h, 0).outputs as { [k: string]: Json }[])[0].hint = 3; }, /header field graph\.nodes\[0\]\.outputs\[0\]\.hint: /],
  ];
  for (const [what, edit, message] of cases) {
    it(what, () => {
      expect(schemaMessage(editHeader(good, edit))).toMatch(message);
    });
  }

  it('a file the fast path accepts decodes to the same graph as before (round trip)', () => {
    const g = decodeTsgraph(good).graph;
    expect(g.body.nodes.map((n) => n.op)).toEqual(['relu', 'relu', 'relu']);
    expect(encodeTsgraph(g)).toEqual(good);
  });
});

describe('weights: views of a file that was read, copies of bytes that were passed', () => {
  const b = new GraphBuilder('affine');
  const x = b.input('x', tensorType('float32', [2]));
  const w = b.param('w', { dtype: 'float32', shape: [2], data: new Float32Array([3, 5]) });
  b.output('y', b.op1('mul', [x, w]));
  const bytes = encodeTsgraph(b.build());
  const input = { data: new Float32Array([1, 2]), shape: [2], dtype: 'float32' as const };

  it('a file path loads and runs as its bytes do', async () => {
    const file = join(dir, 'affine.tsgraph');
    writeFileSync(file, bytes);
    const fromFile = await load(file, { backend: 'cpu' });
    const fromBytes = await load(bytes, { backend: 'cpu' });
    expect(Array.from((await fromFile.run([input]))[0].data)).toEqual([3, 10]);
    expect(Array.from((await fromBytes.run([input]))[0].data)).toEqual([3, 10]);
  });

  it("writing the caller's bytes after load() does not change the model", async () => {
    const mine = bytes.slice();
    const model = await load(mine, { backend: 'cpu' });
    mine.fill(0);
    expect(Array.from((await model.run([input]))[0].data)).toEqual([3, 10]);
  });
});
