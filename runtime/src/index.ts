// @kiln/runtime, Node entry (package.json `exports` condition `node`): everything needed to run
// a `.tsgraph` — no compiler, no TypeScript toolchain. A string source is a file path (or a
// `file:`/http(s) URL). The browser entry, browser.ts, is the same API with fetch() (and Web
// Workers instead of worker_threads for the CPU kernels' threads).

import { loadWith, type LoadOptions, type ModelSource } from './load.js';
import type { Model } from './model.js';
import { readNodeSource } from './source-node.js';
import { setThreadHost } from './wasm/threads.js';
import { nodeThreadHost } from './wasm/node-threads.js';

export * from './api.js';

// The CPU kernels split big products over worker_threads here.
setThreadHost(nodeThreadHost);

/**
 * Loads a `.tsgraph` (bytes, or a file path) and prepares it on a backend. The file is fully
 * checked (a TsgraphError with a code when it is refused); nothing in it is executed.
 *
 * @example
 * ```ts
 * import { load } from '@kiln/runtime';
 * const model = await load('model.tsgraph', { backend: 'cpu' });
 * const [y] = await model.run([{ data: new Float32Array(3 * 32 * 32), shape: [1, 3, 32, 32], dtype: 'float32' }]);
 * ```
 */
export function load(source: ModelSource, opts: LoadOptions = {}): Promise<Model> {
  return loadWith(source, opts, readNodeSource);
}
