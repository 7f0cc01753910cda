// The `kiln` command end to end: the esbuild-bundled CLI (packages/cli/dist/kiln.mjs) is spawned
// on the fixture models of tests/cli-fixtures. compile (script and --trace, --input, the
// `inputs` export, --weights, -O levels, --print-after, --check) writes a .tsgraph whose outputs
// match the eager model within 1e-5; run, inspect, viz and bench read it; a broken model file gives a
// located error and exit code 1; bad flags give the usage and exit code 1.

import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeTsgraph, encodeTsgraph, GraphBuilder, tensorType, walkNodes } from '@kiln/ir-spec';
import { runPass } from '../compiler/src/pipeline.js';
import { manualSeed, noGrad, randn, full, tensor, type Tensor } from 'kiln';
import { SmallCnn } from './cli-fixtures/small-cnn.js';
import { Gate } from './cli-fixtures/gate.js';
import { isUserError } from '../packages/cli/src/errors.js';
import { generateWgsl } from '../compiler/src/codegen/index.js';
import { GRAPHS } from './fixtures/tsgraph-graphs.js';
import { buildCli, expectMatchesEager, weightsFile } from './helpers/cli-models.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/kiln.mjs');
const FIX = 'tests/cli-fixtures';
const TMP = mkdtempSync(join(tmpdir(), 'kiln-cli-test-'));

interface Result { code: number | null; stdout: string; stderr: string }

function kiln(...args: string[]): Result {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs the CLI and expects exit 0 (showing stderr when it is not). */
function ok(...args: string[]): Result {
  const r = kiln(...args);
  expect(r.code, `kiln ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return r;
}

const countNodes = (nodes: readonly { regions: readonly { nodes: readonly unknown[] }[] }[]): number =>
  nodes.reduce((n: number, node) => n + 1 + node.regions.reduce((m, r) => m + countNodes(r.nodes as typeof nodes), 0), 0);

describe('kiln CLI', () => {
  beforeAll(() => buildCli(ROOT), 300_000);

  describe('help and usage', () => {
    it('kiln --help lists every command; each command has --help', () => {
      const r = ok('--help');
      for (const c of ['compile', 'export', 'run', 'inspect', 'viz', 'bench']) {
        expect(r.stdout).toMatch(new RegExp(`^  ${c} `, 'm'));
        expect(ok(c, '--help').stdout).toContain(`Usage: kiln ${c} <`);
      }
    });

    it('an unknown flag gives the command usage and exit 1; so do an unknown command and a missing argument', () => {
      const r = kiln('compile', `${FIX}/small-cnn.ts`, '--bogus', '-o', join(TMP, 'x.tsgraph'));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("unknown option '--bogus' for 'kiln compile'");
      expect(r.stderr).toContain('Usage: kiln compile <model.ts | model.onnx>');
      const u = kiln('frobnicate');
      expect([u.code, u.stderr.includes("unknown command 'frobnicate'"), u.stderr.includes('Usage: kiln <command>')]).toEqual([1, true, true]);
      const m = kiln('compile', `${FIX}/small-cnn.ts`);
      expect([m.code, m.stderr.includes('missing -o <out.tsgraph>')]).toEqual([1, true]);
      const o = kiln('compile', `${FIX}/small-cnn.ts`, '-O3', '-o', join(TMP, 'x.tsgraph'));
      expect([o.code, o.stderr.includes('-O0, -O1 or -O2')]).toEqual([1, true]);
    });
  });

  describe('compile', () => {
    it('scripts the default export with the `inputs` export and --weights; the file matches eager at several batch sizes', async () => {
      manualSeed(11);
      const model = new SmallCnn();
      const w = weightsFile(model, TMP, 'cnn.safetensors');
      const out = join(TMP, 'cnn.tsgraph');
      const r = ok('compile', `${FIX}/small-cnn.ts`, '--weights', w, '-o', out);
      for (const stage of ['load', 'weights', 'script', 'optimize', 'fold-conv-bn', 'fuse-epilogue', 'codegen', 'write']) expect(r.stderr).toMatch(new RegExp(`^ +${stage} +\\d+\\.\\d ms`, 'm'));
      expect(r.stderr).toMatch(/wrote .*cnn\.tsgraph: \d+ nodes, \d+ tensors, \d+ WGSL kernels, -O2; runs on CPU and WebGPU/);
      const { graph, header } = decodeTsgraph(new Uint8Array(readFileSync(out)));
      expect(header.kernels.length).toBeGreaterThan(0);
      expect(graph.toString()).toContain('%x: f32[N,3,8,8]');
      expect(graph.toString()).toContain('fused_conv2d');
      await expectMatchesEager(out, model, [1, 3].map((n) => randn([n, 3, 8, 8])));
    });

    it('traces with --trace and an --input that overrides the export; -O0 keeps the BN', async () => {
      manualSeed(12);
      const model = new SmallCnn();
      const w = weightsFile(model, TMP, 'cnn-trace.safetensors');
      const out = join(TMP, 'cnn-trace.tsgraph');
      const r = ok('compile', `${FIX}/small-cnn.ts`, '--trace', '--input', 'x:f32[B,3,8,8]', '--weights', w, '-O0', '-o', out);
      expect(r.stderr).toMatch(/^ +trace +\d/m);
      const text = decodeTsgraph(new Uint8Array(readFileSync(out))).graph.toString();
      expect(text).toContain('%x: f32[B,3,8,8]');
      expect(text).toContain('batch_norm');
      await expectMatchesEager(out, model, [2, 5].map((n) => randn([n, 3, 8, 8])));
    });

    it('scripts a class named by --export with --input; the if region matches eager on both branches (--check, --print-after)', async () => {
      manualSeed(13);
      const model = new Gate();
      const w = weightsFile(model, TMP, 'gate.safetensors');
      const out = join(TMP, 'gate.tsgraph');
      const r = ok('compile', `${FIX}/gate.ts`, '--export', 'Gate', '--input', 'x:f32[N,4]', '--weights', w, '--check', '--print-after', 'fuse-elementwise', '-o', out);
      expect(r.stdout).toMatch(/graph @Gate\(%x: f32\[N,4\]\)[\s\S]*= if\(/);
      expect(r.stdout).toContain('fused_elementwise');
      const xs = [10, -10].flatMap((s) => [full([1, 4], s), full([3, 4], s)]);
      const taken = new Set(xs.map((x) => (noGrad(() => model.fc.forward(x).sum().item()) > 0)));
      expect(taken.size, 'the inputs take both branches').toBe(2);
      await expectMatchesEager(out, model, xs);
    });

    it('a factory export works; a missing export, missing inputs and a bad --input say what to do (exit 1)', () => {
      ok('compile', `${FIX}/gate.ts`, '--export', 'makeGate', '--input', 'x:f32[N,4]', '-q', '-o', join(TMP, 'gate2.tsgraph'));
      const none = kiln('compile', `${FIX}/gate.ts`, '--input', 'x:f32[N,4]', '-o', join(TMP, 'y.tsgraph'));
      expect(none.code).toBe(1);
      expect(none.stderr).toContain("no export 'default'; export the model as default");
      expect(none.stderr).toContain('Gate, makeGate');
      const noInputs = kiln('compile', `${FIX}/gate.ts`, '--export', 'Gate', '-o', join(TMP, 'y.tsgraph'));
      expect([noInputs.code, noInputs.stderr.includes('pass --input x:f32[N,3,32,32]')]).toEqual([1, true]);
      const bad = kiln('compile', `${FIX}/gate.ts`, '--export', 'Gate', '--input', 'x=f32[N,4]', '-o', join(TMP, 'y.tsgraph'));
      expect([bad.code, bad.stderr.includes('write it as name:type')]).toEqual([1, true]);
    });

    it('a syntax error is reported at file:line:col with the line and a caret, without a stack trace (exit 1)', () => {
      const r = kiln('compile', `${FIX}/broken-syntax.ts`, '--input', 'x:f32[N,4]', '-o', join(TMP, 'z.tsgraph'));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('error: tests/cli-fixtures/broken-syntax.ts:7:36: Expected ")" but found ";"');
      expect(r.stderr).toContain('    return this.fc.forward(x.relu();');
      expect(r.stderr).not.toMatch(/^\s+at /m);
      const v = kiln('compile', `${FIX}/broken-syntax.ts`, '--input', 'x:f32[N,4]', '-o', join(TMP, 'z.tsgraph'), '--verbose');
      expect(v.code).toBe(1);
      expect(v.stderr).toMatch(/^\s+at /m);
    });

    it('a model file that throws when imported is located in the .ts file (source-mapped), exit 1', () => {
      const r = kiln('compile', `${FIX}/throws-on-import.ts`, '--input', 'x:f32[N,4]', '-o', join(TMP, 'z.tsgraph'));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('error: tests/cli-fixtures/throws-on-import.ts:10:31: the model file throws when imported: no layer sizes configured');
    });

    it('a construct jit.script refuses is reported with the scripter\'s location and advice (exit 1)', () => {
      const r = kiln('compile', `${FIX}/unscriptable.ts`, '--input', 'x:f32[N,4]', '-o', join(TMP, 'z.tsgraph'));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("error: tests/cli-fixtures/unscriptable.ts:9:5: 'try' statements are not supported by jit.script");
      expect(r.stderr).toContain('@jit.ignore');
      expect(r.stderr).not.toMatch(/^\s+at /m);
    });

    it('errors are classified: the frontends\' and the file format\'s are the user\'s (exit 1), others internal (exit 2)', () => {
      const named = (name: string) => Object.assign(new Error('x'), { name });
      for (const n of ['ScriptError', 'TraceError', 'TsgraphError']) expect(isUserError(named(n))).toBe(true);
      expect(isUserError(new TypeError('x is undefined'))).toBe(false);
      expect(isUserError('a string')).toBe(false);
    });
  });

  describe('run, inspect, viz on compiled files', () => {
    const gateFile = join(TMP, 'gate-run.tsgraph');
    const cnnFile = join(TMP, 'cnn-run.tsgraph');
    let gate: Gate;
    beforeAll(() => {
      manualSeed(21);
      gate = new Gate();
      ok('compile', `${FIX}/gate.ts`, '--export', 'Gate', '--input', 'x:f32[N,4]', '--weights', weightsFile(gate, TMP, 'gate-run.safetensors'), '-q', '-o', gateFile);
      ok('compile', `${FIX}/small-cnn.ts`, '-q', '-o', cnnFile);
    }, 120_000);

    it('run: random inputs at --batch, output shapes and the time', () => {
      const r = ok('run', cnnFile, '--batch', '3', '--backend', 'cpu', '--runs', '3');
      expect(r.stdout).toContain('input  x: [3,3,8,8]  (f32[N,3,8,8])  random');
      expect(r.stdout).toMatch(/output output: float32 \[3,5\] {2}(-?\d[\d.e+-]* ){5}/);
      expect(r.stdout).toMatch(/run \d+\.\d+ ms \(median of 3/);
    });

    it('run: inputs from JSON (nested arrays and {data, shape}) and .npy print the eager values', () => {
      const x = [[1, 2, 3, 4], [-1, -2, -3, -4.5]];
      writeFileSync(join(TMP, 'x.json'), JSON.stringify(x));
      writeFileSync(join(TMP, 'x2.json'), JSON.stringify({ data: x.flat(), shape: [2, 4] }));
      const want = (noGrad(() => gate.eval().forward(tensor(x))) as Tensor).toArray();
      const npy = npyFile(join(TMP, 'x.npy'), Float32Array.from(x.flat()), [2, 4]);
      for (const file of [join(TMP, 'x.json'), join(TMP, 'x2.json'), npy]) {
        const r = ok('run', gateFile, '--input', `x=${file}`);
        const line = r.stdout.split('\n').find((l) => l.includes('output output:'))!;
        expect(line).toContain('float32 [2,3]');
        const values = line.split(/\s+/).slice(-6).map(Number);
        values.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want[i]))));
      }
      const wrong = kiln('run', gateFile, '--input', `y=${join(TMP, 'x.json')}`);
      expect([wrong.code, wrong.stderr.includes("the graph has no input 'y'; its inputs are x: f32[N,4]")]).toEqual([1, true]);
    });

    it('inspect: version, producer, signature, IR, the tensor table and sizes', () => {
      const r = ok('inspect', cnnFile);
      const { header, graph } = decodeTsgraph(new Uint8Array(readFileSync(cnnFile)));
      expect(r.stdout).toMatch(/format +1\.\d/);
      expect(r.stdout).toMatch(/producer +name kiln, version \d/);
      expect(r.stdout).toMatch(/backends +cpu, webgpu$/m);
      expect(r.stdout).toContain('Inputs:\n  x: f32[N,3,8,8]');
      expect(r.stdout).toContain('Outputs:\n  output: f32[N,5]');
      expect(r.stdout).toContain(graph.toString().trim());
      expect(r.stdout).toContain(`Tensors (${header.tensors.length}):`);
      for (const t of header.tensors) expect(r.stdout).toMatch(new RegExp(`^  ${t.name.replace(/\./g, '\\.')} +${t.dtype} +\\[${t.shape.join(',')}\\] +${t.length}$`, 'm'));
      expect(r.stdout).toContain(`(${readFileSync(cnnFile).length} bytes)`);
      const bad = kiln('inspect', `${FIX}/gate.ts`);
      expect([bad.code, bad.stderr.includes('BAD_MAGIC: not a .tsgraph file')]).toEqual([1, true]);
    });

    it('inspect: the blob checksum (verified), none for a format 1.0 file, and a corrupted file refused', () => {
      const { header } = decodeTsgraph(new Uint8Array(readFileSync(cnnFile)));
      expect(ok('inspect', cnnFile, '--no-ir').stdout).toMatch(new RegExp(`^  checksum +xxh32 ${header.checksum?.blob} \\(verified\\)$`, 'm'));
      const old = ok('inspect', 'tests/fixtures/cnn-format-1.0.tsgraph', '--no-ir');
      expect(old.stdout).toMatch(/^  checksum +none \(a format 1\.0 file, written before checksums; re-save it to add one\)$/m);
      const bytes = new Uint8Array(readFileSync(cnnFile));
      bytes[bytes.length - 100] ^= 1;
      const corrupt = join(TMP, 'corrupt.tsgraph');
      writeFileSync(corrupt, bytes);
      const r = kiln('inspect', corrupt);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${corrupt}: CHECKSUM_MISMATCH: the tensor data`);
    });

    it('inspect: the kernels a file carries (name, key, dispatch grid, WGSL size)', () => {
      const g = GRAPHS.cnn();
      const { kernels } = generateWgsl(g);
      const file = join(TMP, 'with-kernels.tsgraph');
      writeFileSync(file, encodeTsgraph(g, { kernels }));
      const r = ok('inspect', file, '--no-ir');
      expect(kernels.length).toBeGreaterThan(0);
      expect(r.stdout).toContain(`Kernels (${kernels.length}):`);
      const rows = r.stdout.split('\n');
      for (const k of kernels) {
        const row = rows.find((l) => l.startsWith(`  ${k.name} `));
        expect(row, `a row for kernel ${k.name}`).toBeDefined();
        expect(row).toContain(` ${k.key} `);
        expect(row).toMatch(new RegExp(`per workgroup +${k.wgsl.length}$`));
      }
      expect(r.stdout).not.toContain('IR:');
      // Without the conv's kernel the file runs on the CPU only, and inspect says why.
      const partial = join(TMP, 'partial-kernels.tsgraph');
      writeFileSync(partial, encodeTsgraph(g, { kernels: kernels.filter((k) => !k.key.includes('conv2d')) }));
      expect(ok('inspect', partial, '--no-ir').stdout).toMatch(/backends +cpu \(webgpu: no WGSL for \d+ nodes?: [a-z_0-9, ]*conv2d/);
    });

    it('inspect: a node or kernel wider than WebGPU\'s default 8 storage buffers is named with the reason', () => {
      const b = new GraphBuilder('wide');
      const xs = Array.from({ length: 10 }, (_, i) => b.input(`x${i}`, tensorType('float32', ['N', 4])));
      b.output('y', xs.slice(1).reduce((acc, x) => b.op1('add', [acc, x]), xs[0]));
      const g = runPass('fuse-elementwise', b.build(), { maxStorageBuffers: 16 }); // one node over 10 inputs
      const noKernel = join(TMP, 'wide-no-kernel.tsgraph');
      writeFileSync(noKernel, encodeTsgraph(g, { kernels: generateWgsl(g).kernels }));
      expect(ok('inspect', noKernel, '--no-ir').stdout).toContain('backends   cpu (webgpu: no WGSL for 1 node: fused_elementwise; fused_elementwise reads 10 tensors and writes 1, ' +
        "so its kernel would bind 11 storage buffers, over WebGPU's limit of 8 per shader stage (maxStorageBuffersPerShaderStage))");
      const wideKernel = join(TMP, 'wide-kernel.tsgraph');
      writeFileSync(wideKernel, encodeTsgraph(g, { kernels: generateWgsl(g, { maxStorageBuffers: 16 }).kernels }));
      expect(ok('inspect', wideKernel, '--no-ir').stdout).toContain(
        "backends   cpu, webgpu (only on adapters with maxStorageBuffersPerShaderStage >= 11: kernel 'fused_elementwise_0' binds 11 storage buffers, over WebGPU's default of 8)");
    });

    it('viz --format dot: one box per node, the if regions and element bodies as clusters, fused kernels outlined', () => {
      const r = ok('viz', gateFile);
      const { graph } = decodeTsgraph(new Uint8Array(readFileSync(gateFile)));
      expect(r.stdout.startsWith('digraph "@Gate')).toBe(true);
      const opBoxes = r.stdout.split('\n').filter((l) => /shape=box/.test(l));
      expect(opBoxes.length).toBe(countNodes(graph.body.nodes));
      // The if's two regions, and each fused_elementwise's element body (its ops drawn inside).
      const bodies = [...walkNodes(graph.body)].filter((n) => n.op === 'fused_elementwise').length;
      expect(bodies).toBeGreaterThan(0);
      expect(r.stdout.match(/subgraph cluster_/g)?.length).toBe(2 + bodies);
      expect(r.stdout).toContain('label="if: then"');
      expect(r.stdout).toContain('label="fused_elementwise: element body"');
      expect(opBoxes.filter((l) => l.includes('peripheries=2')).every((l) => l.includes('fused_'))).toBe(true);
      expect(opBoxes.some((l) => l.includes('fused_elementwise') && l.includes('peripheries=2'))).toBe(true);
      expect(r.stdout).toMatch(/label="linear\\nf32\[N,3\]\\nfc"/);
    });

    it('bench: eager vs -O0 vs -O2 on a model file (outputs checked first), and a .tsgraph as it is', () => {
      const r = ok('bench', `${FIX}/small-cnn.ts`, '--batch', '2,3', '--runs', '3', '-q');
      for (const n of [2, 3]) expect(r.stdout).toContain(`batch ${n}, 3 runs each (after one warm-up run); ratios against eager`);
      expect(r.stdout).toMatch(/^  variant +p50 ms +p90 ms +peak memory +QPS +speedup +memory saved$/m);
      // variant, p50, p90, measured peak memory (eager's too), QPS, speedup, memory ratio.
      for (const v of ['eager', '-O0 cpu', '-O2 cpu']) expect(r.stdout.match(new RegExp(`^  ${v} +\\d+\\.\\d+ +\\d+\\.\\d+ +\\d+(\\.\\d+)? (B|KiB|MiB) +\\d+\\.\\d +\\d+\\.\\d+x +\\d+\\.\\d+x$`, 'gm'))).toHaveLength(2);
      expect(r.stdout).toMatch(/^  eager .* 1\.00x +1\.00x$/m);
      expect(kiln('bench', `${FIX}/small-cnn.ts`, '--batch', '2,x').stderr).toMatch(/--batch must be a positive integer or a comma-separated list/);
      const f = ok('bench', cnnFile, '--runs', '2');
      expect(f.stdout).toMatch(/cnn-run\.tsgraph cpu +\d+\.\d+ +\d+\.\d+ +\d+(\.\d+)? (B|KiB|MiB) +\d+\.\d +1\.00x/);
    });

    it('viz on a model file compiles it in memory first (with the compile flags)', () => {
      const r = ok('viz', `${FIX}/gate.ts`, '--export', 'Gate', '--input', 'x:f32[N,4]', '-O1', '-q');
      expect(r.stdout.startsWith('digraph "@Gate (tests/cli-fixtures/gate.ts)"')).toBe(true);
      expect(r.stdout.match(/subgraph cluster_/g)?.length).toBe(2);
      expect(r.stdout).not.toContain('fused_');
      expect(r.stderr).toBe('');
    });

    it('viz --format html: a self-contained page that headless Chromium lays out with one box per node', () => {
      const page = join(TMP, 'gate.html');
      ok('viz', gateFile, '--format', 'html', '-o', page);
      const html = readFileSync(page, 'utf8');
      expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/);
      const { graph } = decodeTsgraph(new Uint8Array(readFileSync(gateFile)));
      const n = countNodes(graph.body.nodes);
      expect(html).toContain(`data-nodes="${n}"`);
      const exe = process.env.KILN_CHROMIUM ?? '/usr/bin/chromium';
      const profile = mkdtempSync(join(tmpdir(), 'kiln-cli-chromium-'));
      const c = spawnSync(exe, ['--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${profile}`, '--dump-dom', `file://${page}`], { encoding: 'utf8', timeout: 90_000 });
      expect(c.status, `chromium failed: ${c.stderr}`).toBe(0);
      expect(c.stdout).toContain(`data-rendered="${n}"`);
    });
  });
});

/** A .npy v1.0 file of little-endian float32. */
function npyFile(path: string, data: Float32Array, shape: number[]): string {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = new Uint8Array(10);
  pre.set([0x93, ...'NUMPY'.split('').map((c) => c.charCodeAt(0)), 1, 0]);
  new DataView(pre.buffer).setUint16(8, header.length, true);
  writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(data.buffer)]));
  return path;
}
