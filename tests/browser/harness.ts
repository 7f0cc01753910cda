// Runs a `.tsgraph` in headless Chromium — on WebGPU (SwiftShader, index.html) or on the CPU
// device's WebAssembly kernels (cpu.html) — and returns the page's outputs. The runtime's
// browser entry is bundled with esbuild from source, then a localhost server serves the page
// (cross-origin isolated or not), the bundle, the file and its inputs, and receives the result
// the page POSTs. Chromium is driven by its command line only (no extra packages), started
// with a fresh profile and killed by its own pid. Invariant: nothing leaves 127.0.0.1.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { expect } from 'vitest';
import { load, type InputValue } from '@kiln/runtime';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface PageOutput { name: string; shape: number[]; dtype: string; data: number[] }
export type PageResult = { ok: true; backend: string; outputs: PageOutput[][]; info?: Record<string, unknown> } | { ok: false; error: string };

/** Which page runs the file, and whether it is served cross-origin isolated (COOP + COEP headers). */
export interface PageOptions { page?: 'index.html' | 'cpu.html'; isolated?: boolean; timeoutMs?: number }

/** The runtime's browser entry as one ES module (from source, as the bundle test builds it). */
export async function bundleRuntime(): Promise<string> {
  const r = await build({
    entryPoints: [join(ROOT, 'runtime/src/browser.ts')],
    bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent', absWorkingDir: ROOT,
    alias: { '@kiln/ir-spec': join(ROOT, 'ir-spec/src/index.ts') },
  });
  return r.outputFiles[0].text;
}

/** How the browser tests start Chromium: headless, WebGPU on SwiftShader, no network services. */
export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--no-default-browser-check', '--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader',
];

/**
 * Serves `bytes` with `inputs` (one array of run() inputs per run, tensors with plain-array
 * data) to a headless Chromium page and resolves with what the page reports.
 */
export async function runInChromium(bytes: Uint8Array, inputs: unknown[][], { page = 'index.html', isolated = false, timeoutMs = 90_000 }: PageOptions = {}): Promise<PageResult> {
  const files: Record<string, [string, string | Uint8Array]> = {
    '/': ['text/html', readFileSync(join(ROOT, 'tests/browser', page), 'utf8')],
    '/runtime.js': ['text/javascript', await bundleRuntime()],
    '/model.tsgraph': ['application/octet-stream', bytes],
    '/inputs.json': ['application/json', JSON.stringify(inputs)],
  };
  let server: Server | undefined;
  let chrome: ChildProcess | undefined;
  const profile = mkdtempSync(join(tmpdir(), 'kiln-chromium-'));
  try {
    const result = new Promise<PageResult>((resolve, reject) => {
      server = createServer((req, res) => {
        if (req.method === 'POST' && req.url === '/result') {
          let body = '';
          req.on('data', (c: Buffer) => { body += c.toString('utf8'); });
          req.on('end', () => { res.end('ok'); resolve(JSON.parse(body) as PageResult); });
          return;
        }
        const f = files[req.url ?? ''];
        if (!f) { res.statusCode = 404; res.end(); return; }
        res.setHeader('content-type', f[0]);
        if (isolated) {
          res.setHeader('cross-origin-opener-policy', 'same-origin');
          res.setHeader('cross-origin-embedder-policy', 'require-corp');
        }
        res.end(f[1]);
      });
      server.on('error', reject);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const { port } = server!.address() as AddressInfo;
    const exe = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
    let log = '';
    const exited = new Promise<never>((_, reject) => {
      // Its own process group, so the browser's helper processes can be killed with it.
      chrome = spawn(exe, [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, `http://127.0.0.1:${port}/`], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
      chrome.stderr!.on('data', (c: Buffer) => { log = (log + c.toString('utf8')).slice(-4000); });
      chrome.on('error', (e) => reject(new Error(`could not start ${exe} (install Debian's chromium; .ci/run does): ${e.message}`)));
      chrome.on('exit', (code) => reject(new Error(`chromium exited (code ${code}) before the page reported; its log ends:\n${log}`)));
    });
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the page reported nothing within ${timeoutMs} ms; chromium's log ends:\n${log}`)), timeoutMs).unref());
    return await Promise.race([result, exited, timeout]);
  } finally {
    if (chrome && chrome.exitCode === null && chrome.pid !== undefined) {
      const gone = new Promise((r) => chrome!.once('exit', r));
      try {
        process.kill(-chrome.pid, 'SIGKILL'); // the whole group: browser, GPU and renderer processes
      } catch {
        chrome.kill('SIGKILL');
      }
      await gone;
    }
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    // Removing the profile is housekeeping, not part of the test: a helper process that outlives
    // the group kill for a moment must not turn a passing run into a failure.
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
    } catch {
      // left in the OS temp folder
    }
  }
}

/**
 * Expects a page's outputs to equal the CPU runtime's in Node on the same file and inputs:
 * names, shapes and dtypes exactly, values within `rtol` relative (absolute below 1).
 */
export async function expectOutputsMatchNode(page: Extract<PageResult, { ok: true }>, bytes: Uint8Array, sets: { data: number[]; shape: number[]; dtype: string }[][], rtol: number): Promise<void> {
  const cpu = await load(bytes, { backend: 'cpu' });
  for (const [k, set] of sets.entries()) {
    const want = await cpu.run(set.map((v): InputValue => ({ ...v, data: Float32Array.from(v.data), dtype: 'float32' })));
    const got = page.outputs[k];
    expect(got.map((o) => [o.name, o.shape, o.dtype])).toEqual(want.map((o) => [o.name, o.shape, o.dtype]));
    got.forEach((o, i) => {
      const w = want[i].data;
      o.data.forEach((v, j) => { if (!(Math.abs(v - w[j]) <= rtol * Math.max(1, Math.abs(w[j])))) expect(v, `${o.name}[${j}]`).toBe(w[j]); });
    });
  }
}
