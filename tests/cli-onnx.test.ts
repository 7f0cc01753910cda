// The CLI's ONNX commands, end to end through the bundled `kiln`: `kiln export model.ts --onnx`
// writes a model ONNX Runtime runs with the eager model's numbers at two batch sizes (symbolic N
// of --input/the `inputs` export becomes a dim_param), and `kiln compile model.onnx` imports a
// PyTorch export into a .tsgraph that runs with PyTorch's numbers; misuse gives exit code 1.
import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jit, manualSeed, noGrad, randn, tensor, type Tensor } from 'kiln';
import { SmallCnn } from './cli-fixtures/small-cnn.js';
import { buildCli, weightsFile } from './helpers/cli-models.js';
import { ortSession, runOrt, expectClose } from './helpers/onnx.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/kiln.mjs');
const TMP = mkdtempSync(join(tmpdir(), 'kiln-cli-onnx-'));

function kiln(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('kiln export --onnx and kiln compile model.onnx', () => {
  beforeAll(() => buildCli(ROOT), 300_000);

  it('kiln export model.ts --onnx -o model.onnx runs in ONNX Runtime with the eager numbers', async () => {
    manualSeed(21);
    const model = new SmallCnn();
    const weights = weightsFile(model, TMP, 'small-cnn.safetensors');
    model.eval();
    const out = join(TMP, 'small-cnn.onnx');
    const r = kiln('export', 'tests/cli-fixtures/small-cnn.ts', '--onnx', '-o', out, '--weights', weights, '--opset', '16');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`wrote ${out}: ONNX opset 16`);
    const session = await ortSession(new Uint8Array(readFileSync(out)));
    for (const n of [1, 3]) {
      const x = randn([n, 3, 8, 8]);
      const [got] = await runOrt(session, [x]);
      expectClose(got, noGrad(() => model.forward(x)) as Tensor, 2e-5, `batch ${n}`);
    }
  });

  it('kiln compile model.onnx imports a PyTorch export; the .tsgraph gives PyTorch\'s outputs', async () => {
    const golden = JSON.parse(readFileSync(join(ROOT, 'tests/golden-kiln/onnx/resnet_opset17.json'), 'utf8')) as { cases: { input: { shape: number[]; data: number[] }; output: { shape: number[]; data: number[] } }[] };
    const out = join(TMP, 'resnet.tsgraph');
    const r = kiln('compile', 'tests/golden-kiln/onnx/resnet_opset17.onnx', '-o', out);
    expect(r.code, r.stderr).toBe(0);
    const g = await jit.load(out);
    for (const c of golden.cases) {
      const [got] = await g.run([tensor(Float32Array.from(c.input.data), { shape: c.input.shape })]);
      expectClose(got, tensor(Float32Array.from(c.output.data), { shape: c.output.shape }), 1e-4);
    }
  });

  it('misuse: no --onnx, an --input for an ONNX file, an unsupported operator', () => {
    const noFormat = kiln('export', 'tests/cli-fixtures/small-cnn.ts', '-o', join(TMP, 'x.onnx'));
    expect(noFormat.code).toBe(1);
    expect(noFormat.stderr).toContain('--onnx');
    const input = kiln('compile', 'tests/golden-kiln/onnx/mlp_opset13.onnx', '--input', 'x:f32[N,6]', '-o', join(TMP, 'x.tsgraph'));
    expect(input.code).toBe(1);
    expect(input.stderr).toContain('--input does not apply to an ONNX model');
    const celu = kiln('compile', 'tests/golden-kiln/onnx/unsupported_celu_opset17.onnx', '-o', join(TMP, 'y.tsgraph'));
    expect(celu.code).toBe(1);
    expect(celu.stderr).toMatch(/Celu, opset 17\) is not supported/);
  });
});
