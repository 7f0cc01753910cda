// ONNX's own checker (onnx.checker.check_model with full_check, i.e. with shape inference) on
// Kiln's exports: the seed model (traced and optimized), an LSTM (Loop) and a scripted If.
// Optional: it needs Debian's python3-onnx, which CI need not have; the test is skipped only
// when `python3 -c "import onnx"` fails. Also: the generated schema module matches onnx.proto.
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jit, nn, manualSeed, randn, type Tensor } from 'kiln';
import { ResearchModel } from '../examples/seed/models.mjs';
import { AdaptiveResNet } from './script-models/control-flow.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const hasOnnx = spawnSync('python3', ['-c', 'import onnx'], { encoding: 'utf8' }).status === 0;
const TMP = mkdtempSync(join(tmpdir(), 'kiln-onnx-check-'));

class Lstm extends nn.Module {
  lstm = new nn.LSTM(3, 4, { batchFirst: true });
  forward(x: Tensor): Tensor { return (this.lstm.forward(x) as [Tensor, unknown])[0]; }
}

describe.skipIf(!hasOnnx)('onnx.checker accepts Kiln exports (python3-onnx)', () => {
  it('seed model, optimized seed model, LSTM loop, scripted if', () => {
    manualSeed(31);
    const m = new ResearchModel(); m.eval();
    const traced = jit.trace(m, [randn([2, 3, 32, 32])], { dynamicAxes: { 0: { 0: 'N' } } });
    const l = new Lstm(); l.eval();
    const files: Record<string, Uint8Array> = {
      seed: jit.exportOnnx(traced),
      seed_optimized: jit.exportOnnx(jit.optimizeForInference(traced), undefined, { opsetVersion: 13 }),
      lstm: jit.exportOnnx(jit.trace(l, [randn([2, 5, 3])], { dynamicAxes: { 0: { 0: 'N', 1: 'T' } } })),
      adaptive_resnet: jit.exportOnnx(jit.script(new AdaptiveResNet(), { sourceFile: join(ROOT, 'tests/script-models/control-flow.ts'), inputs: [randn([2, 6])] })),
    };
    const paths = Object.entries(files).map(([name, bytes]) => {
      const p = join(TMP, `${name}.onnx`);
      writeFileSync(p, bytes);
      return p;
    });
    const script = 'import sys, onnx\nfor p in sys.argv[1:]:\n    onnx.checker.check_model(onnx.load(p), full_check=True)\n    print("ok", p)';
    const r = spawnSync('python3', ['-c', script, ...paths], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(paths.length);
  });
});

describe('the ONNX schema module', () => {
  it('schema.generated.ts is what scripts/gen-onnx-schema.mjs makes of onnx.proto', () => {
    const r = spawnSync(process.execPath, ['scripts/gen-onnx-schema.mjs', '--check'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });
});
