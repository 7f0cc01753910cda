// @kiln/runtime, browser entry (package.json `exports` conditions `browser` and `default`): the
// same API as index.ts, where a string source is a URL fetched with fetch(). Invariant: no
// Node built-in is reachable from here (tests/runtime-bundle.test.ts bundles this file).

import { loadWith, type LoadOptions, type ModelSource } from './load.js';
import type { Model } from './model.js';
import { fetchSource } from './source-browser.js';

export * from './api.js';

/**
 * Loads a `.tsgraph` (bytes, or a URL) and prepares it on a backend. The file is fully checked
 * (a TsgraphError with a code when it is refused); nothing in it is executed.
 *
 * @example
 * ```ts
 * import { load } from '@kiln/runtime';
 * const model = await load('/models/cnn.tsgraph');
 * const [y] = await model.run([{ data: pixels, shape: [1, 3, 32, 32], dtype: 'float32' }]);
 * ```
 */
export function load(source: ModelSource, opts: LoadOptions = {}): Promise<Model> {
  return loadWith(source, opts, fetchSource);
}
