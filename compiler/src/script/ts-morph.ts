// ts-morph (and the TypeScript compiler inside it: ~75 MB of memory and most of a second to
// import) is loaded at the first jit.script call, not when kiln is imported: eager code, tracing
// and the runtime never pay for it. Invariant: the scripter's files import ts-morph for types
// only and reach its values through tsm(), so one module instance serves them all (the one a
// static `import 'ts-morph'` elsewhere gets too: Node caches the CommonJS module).

import type * as TsMorph from 'ts-morph';

let loaded: typeof TsMorph | undefined;

/** Node's `require` for this file (Node ≥ 20.16 has process.getBuiltinModule); undefined in a browser. */
function nodeRequire(): ((id: string) => unknown) | undefined {
  type NodeModule = { createRequire(from: string): (id: string) => unknown };
  const proc = (globalThis as { process?: { getBuiltinModule?(id: string): NodeModule | undefined } }).process;
  return proc?.getBuiltinModule?.('node:module')?.createRequire(import.meta.url);
}

/** ts-morph, loaded on first use. */
export function tsm(): typeof TsMorph {
  if (loaded) return loaded;
  const require = nodeRequire();
  if (!require) {
    throw new Error('jit.script: ts-morph is not loaded. In a browser bundle, call provideTsMorph(await import(\'ts-morph\')) ' +
      'from @kiln/compiler before scripting; in Node, use Node.js 20.16 or newer.');
  }
  return (loaded = require('ts-morph') as typeof TsMorph);
}

/**
 * Hands the scripter an already imported ts-morph: what a browser bundle does (it has no
 * `require`), e.g. `provideTsMorph(await import('ts-morph'))`, before the first jit.script call.
 */
export function provideTsMorph(module: typeof TsMorph): void {
  loaded = module;
}
