// KILN_DEBUG=ir (STYLE.md §14): the IR of each captured graph — what jit.trace and jit.script
// made, before any pass — printed on stderr. Invariant: nothing is printed, and nothing but one
// environment read is done, unless the KILN_DEBUG environment variable lists `ir` (Node only).

import type { Graph } from './graph.js';

/** Prints `g` on stderr under KILN_DEBUG=ir, headed by how it was captured (`jit.trace`, `jit.script`). */
export function debugCapturedIr(how: string, g: Graph): void {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined>; stderr?: { write(s: string): void } } }).process;
  const flags = proc?.env?.KILN_DEBUG?.split(',').map((f) => f.trim()) ?? [];
  if (!flags.includes('ir') || !proc?.stderr) return;
  proc.stderr.write(`// KILN_DEBUG=ir: @${g.name} after ${how}\n${g.toString()}\n`);
}
