// Recursion at compile time. jit.script inlines every call, so a method or function that calls
// itself is unrolled: that ends when the recursion is driven by values known when compiling
// (module fields such as a tree of submodules, static numbers, static list lengths). Each call
// is recorded with the number of `if`/`loop` regions open around it; when one function is
// active more than MAX_RECURSION times, the error says whether a recursive call sits under a
// data-dependent condition (its depth depends on run-time data) or the static recursion is
// simply too deep. Invariant: the activation list of a context is exactly the calls being
// inlined right now (pushed and popped around each inlining, also when it throws).

import type { Node as TsNode } from 'ts-morph';
import type { Frame, ScriptContext } from './context.js';

/** How often one function may be active at once while inlining (recursion depth cap). */
export const MAX_RECURSION = 32;

interface Activation {
  readonly key: string;
  /** Regions open around the call that started this activation. */
  readonly regions: number;
  readonly loc: string;
}

const active = new WeakMap<ScriptContext, Activation[]>();

/**
 * Runs `inline` (the inlining of a call of `label`, identified by `key`) as one activation;
 * refuses a recursion deeper than MAX_RECURSION with a located error at `at`.
 */
export function activation<T>(ctx: ScriptContext, caller: Frame, key: string, label: string, at: TsNode, inline: () => T): T {
  let list = active.get(ctx);
  if (!list) { list = []; active.set(ctx, list); }
  const same = list.filter((a) => a.key === key);
  const regions = ctx.b.regionDepth;
  const { line, column } = caller.src.file.getLineAndColumnAtPos(at.getStart());
  const loc = `${caller.src.display}:${line - caller.src.lineOffset}:${column}`;
  if (same.length >= MAX_RECURSION) {
    // A recursive call made inside more regions than the first activation sits under a
    // data-dependent `if` or loop: only run-time data could stop it.
    const runtime = [...same.slice(1), { key, regions, loc }].find((a) => a.regions > same[0].regions);
    if (runtime) {
      const where = runtime.loc === loc ? '' : ` (the call at ${runtime.loc})`;
      throw caller.src.error(at, `${label} calls itself inside an 'if' or loop on a run-time value${where}, ` +
        `so how deep it recurses depends on run-time data; jit.script unrolls recursion when compiling and stopped after ${MAX_RECURSION} levels. ` +
        'Make the recursion end on values known when compiling (module fields, static numbers), or rewrite it as a while loop');
    }
    throw caller.src.error(at, `${label} recurses more than ${MAX_RECURSION} levels deep when compiling; jit.script unrolls recursion (every level is inlined), ` +
      'so it must end within that depth on values known when compiling. Check that the recursion ends, or rewrite it as a loop');
  }
  list.push({ key, regions, loc });
  try {
    return inline();
  } finally {
    list.pop();
  }
}
