// The playground (examples/playground) in a real browser: the pages are built once with
// esbuild and served by the playground's own server; headless Chromium (WebGPU on SwiftShader,
// driven over the DevTools protocol) compiles and runs an example IN THE PAGE, and its outputs
// must equal what Node's runtime computes for the same source, seed and inputs; a syntax error
// must appear in the editor at its line and column; a digit drawn with mouse events must get
// Node's prediction for the same 8×8 image. Screenshots of both pages are saved to
// examples/playground/screenshots/ when updating golden files (npm run test:update -- tests/playground.test.ts),
// else to a temporary folder: screenshots are pictures to look at, not compared.

import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Server } from 'node:http';
import { load } from '@kiln/runtime';
import { buildPlayground, exampleSource } from '../examples/playground/build.mjs';
import { servePlayground } from '../examples/playground/serve.mjs';
import { ALL_PASSES, compileSource } from '../examples/playground/src/compile.js';
import { diffLines } from '../examples/playground/src/diff.js';
import { Browser, type Page } from './browser/cdp.js';
import { updatingGolden } from './helpers/golden.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PLAYGROUND = join(ROOT, 'examples/playground');
const SHOTS = updatingGolden() ? join(PLAYGROUND, 'screenshots') : mkdtempSync(join(tmpdir(), 'kiln-shots-'));

interface PageOutput { name: string; shape: number[]; dtype: string; data: number[] }
interface PageResult { ok: boolean; diagnostics: { line: number; col: number; message: string }[]; stages: { name: string; changed: boolean }[];
  kernels: number; backend?: string; fallback?: string; runError?: string; outputs: PageOutput[] }

let dir: string;
let server: Server;
let url: string;
let browser: Browser;
let sizes: Record<string, number>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kiln-playground-'));
  sizes = await buildPlayground({ outdir: dir });
  ({ server, url } = await servePlayground({ dir }));
  browser = await Browser.launch();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  rmSync(dir, { recursive: true, force: true });
  if (!updatingGolden()) rmSync(SHOTS, { recursive: true, force: true });
});

async function openPlayground(): Promise<Page> {
  const page = await browser.open(url);
  await page.waitFor("window.playground && document.getElementById('status').dataset.state === 'idle'", 'the playground page to start');
  return page;
}

describe('playground page', () => {
  it('is served with cross-origin isolation and bundles the compiler', async () => {
    const res = await fetch(url);
    expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(res.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
    expect((await fetch(`${url}../../etc/passwd`)).status).toBe(404);
    // The page with the compiler carries TypeScript; the digits page only the runtime.
    expect(sizes['playground.js']).toBeGreaterThan(sizes['digits.js']);
  });

  it('compiles and runs AdaptiveResNet in the page, with the outputs of Node\'s runtime', async () => {
    const page = await openPlayground();
    const isolated = await page.evaluate<boolean>('crossOriginIsolated');
    expect(isolated).toBe(true);
    const name = 'adaptive-resnet.ts';
    const source = exampleSource(name);
    await page.evaluate(`(() => { const s = document.getElementById('example'); s.value = String(playground.examples.findIndex((e) => e.file === '${name}')); s.dispatchEvent(new Event('change')); })()`);
    expect(await page.evaluate<string>('playground.editor.text()')).toBe(source);
    const got = await page.evaluate<PageResult>('playground.compileAndRun().then(() => playground.result())');
    expect(got.runError).toBeUndefined();
    expect(got.ok).toBe(true);
    expect(got.stages[0].name).toBe('capture');
    expect(got.stages.filter((s) => s.changed).map((s) => s.name)).toContain('fuse-epilogue');
    expect(got.kernels).toBeGreaterThan(0);
    expect(got.backend).toBe('webgpu'); // SwiftShader's adapter: no fallback needed
    // Node: the same source and seed give the same weights, inputs and file; run it on the CPU.
    const node = compileSource(source);
    if (!node.ok) throw new Error(JSON.stringify(node.diagnostics));
    const model = await load(node.bytes, { backend: 'cpu' });
    const want = await model.run(node.examples);
    expect(got.outputs.map((o) => [o.name, o.shape])).toEqual(want.map((o) => [o.name, o.shape]));
    for (let i = 0; i < want.length; i++) {
      const w = Array.from(want[i].data as Float32Array);
      got.outputs[i].data.forEach((v, j) => expect(Math.abs(v - w[j])).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(w[j]))));
    }
    // The IR view diffs two stages; the graph and WGSL views are filled.
    await page.evaluate("(() => { const b = document.getElementById('stageB'); b.value = '0'; b.dispatchEvent(new Event('change')); })()");
    expect(await page.evaluate<number>("document.querySelectorAll('#ir .add').length")).toBeGreaterThan(0);
    expect(await page.evaluate<string>("document.getElementById('wgsl').textContent")).toMatch(/@compute/);
    expect(await page.evaluate<string>("document.getElementById('graph').srcdoc")).toMatch(/<svg/);
    await page.evaluate("document.querySelector('[data-tab=run]').click()");
    writeFileSync(join(SHOTS, 'playground.png'), await page.screenshot());
    // Download .tsgraph saves the very file Node compiled from the same source.
    const downloads = mkdtempSync(join(tmpdir(), 'kiln-downloads-'));
    try {
      await browser.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
      await page.evaluate("document.getElementById('download').click()");
      const file = join(downloads, 'AdaptiveResNet.tsgraph');
      for (let i = 0; i < 200 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 100));
      expect(new Uint8Array(readFileSync(file))).toEqual(node.bytes);
    } finally {
      rmSync(downloads, { recursive: true, force: true });
    }
  }, 240_000);

  it('falls back to the CPU with the reason shown, and runs only the passes left on', async () => {
    const page = await openPlayground();
    // A browser without WebGPU: the page must say so and run on the CPU.
    await page.evaluate("void Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true })");
    const name = 'transformer-block.ts';
    await page.evaluate(`(() => { const s = document.getElementById('example'); s.value = String(playground.examples.findIndex((e) => e.file === '${name}')); s.dispatchEvent(new Event('change')); })()`);
    await page.evaluate("document.querySelector('input[data-pass=\"fuse-elementwise\"]').click()");
    const got = await page.evaluate<PageResult>('playground.compileAndRun().then(() => playground.result())');
    expect(got.ok).toBe(true);
    expect(got.backend).toBe('cpu');
    expect(got.fallback).toMatch(/no WebGPU/);
    expect(await page.evaluate<string>("document.getElementById('fallback').textContent")).toMatch(/CPU fallback: this browser has no WebGPU/);
    expect(got.stages.map((s) => s.name)).not.toContain('fuse-elementwise');
    expect(got.stages.map((s) => s.name)).toContain('plan-memory');
    const node = compileSource(exampleSource(name), { passes: ALL_PASSES.filter((p) => p !== 'fuse-elementwise') });
    if (!node.ok) throw new Error(JSON.stringify(node.diagnostics));
    const [want] = await (await load(node.bytes, { backend: 'cpu' })).run(node.examples);
    expect(got.outputs[0].shape).toEqual(want.shape);
    got.outputs[0].data.forEach((v, j) => expect(Math.abs(v - want.data[j])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want.data[j]))));
  }, 120_000);

  it('shows a syntax error in the editor at its line and column, as the CLI reports it', async () => {
    const page = await openPlayground();
    const source = "import { nn, type Tensor } from 'kiln';\n\nexport class Broken extends nn.Module {\n  forward(x: Tensor): Tensor {\n    return x.relu(;\n  }\n}\n\nexport const inputs = { x: 'f32[N,4]' };\nexport default new Broken();\n";
    await page.evaluate(`playground.editor.setText(${JSON.stringify(source)})`);
    const got = await page.evaluate<PageResult>('playground.compileAndRun().then(() => playground.result())');
    expect(got.ok).toBe(false);
    expect(got.diagnostics[0]).toMatchObject({ line: 5, col: 19 });
    // The lint mark sits on line 5 of the editor.
    await page.waitFor("document.querySelector('.cm-lintRange-error')", 'the lint mark');
    const markLine = await page.evaluate<number>("(() => { const v = playground.editor.view; return v.state.doc.lineAt(v.posAtDOM(document.querySelector('.cm-lintRange-error'))).number; })()");
    expect(markLine).toBe(5);
    expect(await page.evaluate<string>("document.getElementById('status').dataset.state")).toBe('error');
  }, 120_000);

  it('shows an unsupported construct at its place in the source', async () => {
    const page = await openPlayground();
    const source = "import { nn, type Tensor } from 'kiln';\n\nexport class Tries extends nn.Module {\n  forward(x: Tensor): Tensor {\n    try { return x.relu(); } catch { return x; }\n  }\n}\n\nexport const inputs = { x: 'f32[N,4]' };\nexport default new Tries();\n";
    await page.evaluate(`playground.editor.setText(${JSON.stringify(source)})`);
    const got = await page.evaluate<PageResult>('playground.compileAndRun().then(() => playground.result())');
    expect(got.ok).toBe(false);
    expect(got.diagnostics[0]).toMatchObject({ line: 5, col: 5 });
    expect(got.diagnostics[0].message).toMatch(/'try' statements are not supported/);
  }, 120_000);
});

describe('the playground compiler, in Node', () => {
  it('traces as it scripts: the same outputs from jit.trace and jit.script of the transformer block', async () => {
    const source = exampleSource('transformer-block.ts');
    const runs = [];
    for (const mode of ['script', 'trace'] as const) {
      const r = compileSource(source, { mode });
      if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
      runs.push(Array.from((await (await load(r.bytes, { backend: 'cpu' })).run(r.examples))[0].data as Float32Array));
    }
    runs[1].forEach((v, i) => expect(Math.abs(v - runs[0][i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(runs[0][i]))));
  }, 60_000);

  it('reports a missing input type and a foreign import at their lines', () => {
    const noInputs = compileSource("import { nn } from 'kiln';\nclass A extends nn.Module { forward(x) { return x; } }\nexport default new A();\n");
    expect(noInputs).toMatchObject({ ok: false, stage: 'inputs' });
    const foreign = compileSource("import { nn } from 'kiln';\nimport { x } from 'lodash';\nexport default x;\n");
    expect(foreign).toMatchObject({ ok: false, stage: 'import', diagnostics: [{ line: 2 }] });
  });

  it('diffs two IR listings line by line', () => {
    expect(diffLines(['a', 'b', 'c'], ['a', 'x', 'c'])).toEqual([
      { kind: 'same', text: 'a' }, { kind: 'del', text: 'b' }, { kind: 'add', text: 'x' }, { kind: 'same', text: 'c' }]);
  });
});

describe('digits page', () => {
  it('predicts a digit drawn with mouse events as Node\'s runtime does for the same image', async () => {
    const page = await browser.open(`${url}digits.html`);
    await page.waitFor('window.digits && window.digits.ready()', 'digits.tsgraph to load');
    const box = await page.evaluate<{ x: number; y: number; w: number; h: number }>("(() => { const b = document.getElementById('pad').getBoundingClientRect(); return { x: b.left, y: b.top, w: b.width, h: b.height }; })()");
    // A "7": a bar across the top, then a stroke down to the bottom left.
    const pts: [number, number][] = [];
    for (let i = 0; i <= 10; i++) pts.push([0.25 + 0.5 * (i / 10), 0.2]);
    for (let i = 1; i <= 14; i++) pts.push([0.75 - 0.3 * (i / 14), 0.2 + 0.65 * (i / 14)]);
    const at = ([fx, fy]: [number, number]) => [box.x + fx * box.w, box.y + fy * box.h] as const;
    await page.mouse('mouseMoved', ...at(pts[0]));
    await page.mouse('mousePressed', ...at(pts[0]));
    for (const p of pts.slice(1)) await page.mouse('mouseMoved', ...at(p), true);
    await page.mouse('mouseReleased', ...at(pts[pts.length - 1]));
    await page.waitFor('window.digits.ready() && window.digits.last()', 'a prediction');
    await new Promise((r) => setTimeout(r, 300));
    await page.waitFor('window.digits.ready()', 'the last prediction');
    const got = await page.evaluate<{ image: number[]; probs: number[]; prediction: number }>('window.digits.last()');
    expect(got.image).toEqual(await page.evaluate<number[]>('window.digits.image()'));
    expect(got.image.filter((v) => v > 0).length).toBeGreaterThan(5);
    const model = await load(new Uint8Array(readFileSync(join(PLAYGROUND, 'public/digits.tsgraph'))), { backend: 'cpu' });
    const [out] = await model.run([{ data: Float32Array.from(got.image), shape: [1, 1, 8, 8], dtype: 'float32' }]);
    const logits = Array.from(out.data as Float32Array);
    expect(got.prediction).toBe(logits.indexOf(Math.max(...logits)));
    expect(await page.evaluate<string>("document.getElementById('prediction').textContent")).toBe(String(got.prediction));
    expect(await page.evaluate<number>("document.querySelectorAll('#bars .bar').length")).toBe(10);
    writeFileSync(join(SHOTS, 'digits.png'), await page.screenshot());
  }, 120_000);
});
