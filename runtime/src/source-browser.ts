// String sources in browsers: a URL, fetched. Invariant: uses only web platform globals
// (fetch), so the browser bundle stays free of Node built-ins.

import { RuntimeError } from './errors.js';

/** Fetches a `.tsgraph` from a URL (relative URLs resolve against the page). */
export async function fetchSource(url: string): Promise<Uint8Array> {
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new RuntimeError('SOURCE', `cannot fetch '${url}': ${e instanceof Error ? e.message : String(e)}`, undefined, { cause: e });
  }
  if (!res.ok) throw new RuntimeError('SOURCE', `cannot fetch '${url}': HTTP ${res.status} ${res.statusText}`.trimEnd());
  return new Uint8Array(await res.arrayBuffer());
}
