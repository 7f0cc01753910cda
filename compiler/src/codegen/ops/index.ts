// The WGSL templates of all primitive elementwise entries, one file per ir-spec op family.
// Invariant: an op appears in exactly one family file (checked here at load, and against the
// entries by tests/op-entries.test.ts).

import { TEMPLATES as activation } from './activation.js';
import { TEMPLATES as elementwise } from './elementwise.js';
import type { Template } from './template.js';

export type { Template, Wt } from './template.js';
export { NAN } from './template.js';

function join(...families: Readonly<Record<string, Template>>[]): ReadonlyMap<string, Template> {
  const all = new Map<string, Template>();
  for (const f of families) {
    for (const [op, t] of Object.entries(f)) {
      if (all.has(op)) throw new Error(`WGSL template of '${op}' is defined twice (compiler/src/codegen/ops)`);
      all.set(op, t);
    }
  }
  return all;
}

/** Template of each primitive elementwise op, by op name. */
export const TEMPLATES: ReadonlyMap<string, Template> = join(elementwise, activation);
