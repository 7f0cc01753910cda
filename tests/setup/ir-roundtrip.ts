// Vitest setup (registered in vitest.config.ts): every graph any test builds with GraphBuilder
// must survive the text round trip — printGraph(parseGraph(printGraph(g))) === printGraph(g),
// STYLE.md principle 5 — and pass the verifier when ir-spec has one (`verifyGraph`). A failure
// throws out of GraphBuilder.build(), so it fails the test that built the graph, with both
// texts. A test that builds an invalid graph on purpose builds it inside `buildUnchecked`.

import { afterAll } from 'vitest';
import * as irSpec from '@kiln/ir-spec';
import { onGraphBuilt, parseGraph, printGraph, type Graph } from '@kiln/ir-spec';

let unchecked = 0;

/** Runs `fn` (which builds graphs) without the round-trip and verifier checks. */
export function buildUnchecked<T>(fn: () => T): T {
  unchecked++;
  try {
    return fn();
  } finally {
    unchecked--;
  }
}

/** Throws unless `g` prints, parses back and prints identically, and verifies. */
export function checkGraph(g: Graph): void {
  const text = printGraph(g);
  let again: string;
  try {
    again = printGraph(parseGraph(text, { tensors: g.tensors }));
  } catch (e) {
    throw new Error(`IR round trip: the printed graph @${g.name} does not parse back.\n${e instanceof Error ? e.message : String(e)}\n--- printed ---\n${text}`);
  }
  if (again !== text) {
    const a = text.split('\n'), b = again.split('\n');
    let line = 0;
    while (line < a.length && a[line] === b[line]) line++;
    throw new Error(`IR round trip: graph @${g.name} prints differently after parsing (first difference at line ${line + 1}).\n--- printed ---\n${text}--- parsed and printed again ---\n${again}`);
  }
  verify(g, text);
}

/** Runs ir-spec's verifier when it exists; it reports by throwing or by returning problems. */
function verify(g: Graph, text: string): void {
  const verifyGraph: unknown = Reflect.get(irSpec, 'verifyGraph');
  if (typeof verifyGraph !== 'function') return;
  let result: unknown;
  try {
    result = verifyGraph(g);
  } catch (e) {
    throw new Error(`IR verifier rejects graph @${g.name}: ${e instanceof Error ? e.message : String(e)}\n--- graph ---\n${text}`);
  }
  const problems = Array.isArray(result) ? result : result instanceof Error ? [result] : [];
  if (problems.length) {
    throw new Error(`IR verifier rejects graph @${g.name}: ${problems.map((p) => (p instanceof Error ? p.message : String(p))).join('\n')}\n--- graph ---\n${text}`);
  }
}

afterAll(onGraphBuilt((g) => { if (!unchecked) checkGraph(g); }));
