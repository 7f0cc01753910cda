// Runtime figures, measured on the BUILT packages (`npm run build` first): the size of the
// browser bundle a user gets from `@kiln/runtime` (esbuild, minified, and gzipped), and the
// CPU executor's latency on a small CNN `.tsgraph` at batch 1 and 32. `node bench/runtime.mjs`
// prints the rows; bench/run.mjs imports benchRuntime().
//
// The bundle is made by the esbuild CLI of the repository's node_modules (a dev dependency),
// run as a child process, from `export * from '@kiln/runtime'` with `platform: browser`, so the
// package.json `browser` condition picks the entry exactly as it would for a user's bundler.

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { GraphBuilder, encodeTsgraph, tensorType } from '@kiln/ir-spec';
import { load } from '@kiln/runtime';
import { seededValues, isMain, summarize, timeRuns } from './stats.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ESBUILD = fileURLToPath(new URL('../node_modules/.bin/esbuild', import.meta.url));

/**
 * The minified browser bundle of `@kiln/runtime`, or null when the esbuild CLI is missing.
 * @returns {{ bytes: number, gzipBytes: number } | null}
 */
export function runtimeBundleSize() {
  if (!existsSync(ESBUILD)) return null;
  const text = execFileSync(ESBUILD, ['--bundle', '--minify', '--format=esm', '--platform=browser', '--log-level=error'], {
    cwd: ROOT,
    input: "export * from '@kiln/runtime';",
    maxBuffer: 64 << 20,
  });
  return { bytes: text.length, gzipBytes: gzipSync(text).length };
}

const param = (shape, seed) => ({ dtype: 'float32', shape, data: seededValues(shape.reduce((a, d) => a * d, 1), seed) });

/**
 * A small CNN on [N,3,32,32]: conv(3→16) → ReLU → maxpool → conv(16→32) → ReLU → maxpool →
 * flatten → linear(2048→10), as `.tsgraph` bytes.
 */
export function smallCnnTsgraph() {
  const b = new GraphBuilder('bench-cnn');
  const x = b.input('x', tensorType('float32', ['N', 3, 32, 32]));
  const conv = { stride: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
  const pool = { kernel_size: [2, 2], stride: [2, 2] };
  let h = b.op1('conv2d', [x, b.param('c1.weight', param([16, 3, 3, 3], 1)), b.param('c1.bias', param([16], 2))], conv);
  [h] = b.op('max_pool2d', [b.op1('relu', [h])], pool);
  h = b.op1('conv2d', [h, b.param('c2.weight', param([32, 16, 3, 3], 3)), b.param('c2.bias', param([32], 4))], conv);
  [h] = b.op('max_pool2d', [b.op1('relu', [h])], pool);
  h = b.op1('reshape', [h], { shape: ['N', 32 * 8 * 8] });
  b.output('logits', b.op1('linear', [h, b.param('fc.weight', param([10, 2048], 5)), b.param('fc.bias', param([10], 6))]));
  return encodeTsgraph(b.build());
}

/**
 * Runtime rows: bundle size (KiB, one sample each) and CPU latency (ms per run).
 * @param {{ quick?: boolean, log?: (s: string) => void }} [opts]
 * @returns {Promise<import('./run.mjs').Row[]>}
 */
export async function benchRuntime({ quick = false, log = () => {} } = {}) {
  const rows = [];
  log('runtime bundle ...');
  const size = runtimeBundleSize();
  if (size) {
    rows.push({ name: 'runtime browser bundle, minified', unit: 'KiB', samples: [size.bytes / 1024] });
    rows.push({ name: 'runtime browser bundle, minified + gzip', unit: 'KiB', samples: [size.gzipBytes / 1024] });
  } else {
    log(`esbuild CLI not found at ${ESBUILD}: no bundle rows`);
  }
  const model = await load(smallCnnTsgraph(), { backend: 'cpu' });
  for (const n of [1, 32]) {
    log(`runtime CPU executor, small CNN, batch ${n} ...`);
    const x = { data: seededValues(n * 3 * 32 * 32, 7 + n), shape: [n, 3, 32, 32], dtype: 'float32' };
    const samples = timeRuns(() => model.runSync([x]), quick ? { minRuns: 3, budgetMs: 1000 } : { minRuns: 7, budgetMs: 4000 });
    rows.push({ name: `runtime CPU executor, small CNN [N,3,32,32], batch ${n}`, unit: 'ms', samples });
    rows.push({ name: `runtime peak intermediate memory, batch ${n}`, unit: 'KiB', samples: [model.stats.peakIntermediateBytes / 1024] });
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const rows = await benchRuntime({ quick: process.argv.includes('--quick'), log: (s) => process.stderr.write(`${s}\n`) });
  for (const r of rows) console.log(`${r.name}: ${summarize(r.samples).median.toFixed(2)} ${r.unit}`);
}
