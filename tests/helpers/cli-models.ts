// Shared by the CLI tests: building the packages and the CLI bundle they run, weights with
// non-trivial BN statistics saved for `--weights`, and the check that a compiled file run by the
// runtime alone matches the eager model.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { expect } from 'vitest';
import { load } from '@kiln/runtime';
import { noGrad, randn, saveSafetensors, type nn, type Tensor } from 'kiln';

/** Randomizes the BN running statistics (so folding them is tested; `meanScale` sizes the running
 * means) and saves the state dict. */
export function weightsFile(model: nn.Module, dir: string, name: string, meanScale = 0.2): string {
  for (const [k, b] of Object.entries(model.stateDict())) {
    if (k.endsWith('running_mean')) b.copy_(randn(b.shape).mul(meanScale));
    if (k.endsWith('running_var')) b.copy_(randn(b.shape).abs().add(0.5));
  }
  const path = join(dir, name);
  writeFileSync(path, saveSafetensors(model.stateDict()));
  return path;
}

/** The `.tsgraph` at `file`, run on the CPU runtime, equals eager `model` on each input (1e-5). */
export async function expectMatchesEager(file: string, model: nn.Module, inputs: Tensor[]): Promise<void> {
  model.eval();
  const g = await load(file, { backend: 'cpu' });
  for (const x of inputs) {
    const want = (noGrad(() => model.forward(x)) as Tensor).toArray();
    const [got] = await g.run([x]);
    expect(got.shape).toEqual(x.shape.slice(0, 1).concat(got.shape.slice(1)));
    expect(got.data.length).toBe(want.length);
    for (let i = 0; i < want.length; i++) expect(Math.abs(got.data[i] - want[i])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(want[i])));
  }
}

/** Builds the packages (`tsc -b`) and the CLI bundle in `root`, as `npm run build` does. */
export function buildCli(root: string): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const b = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (b.status !== 0) throw new Error(`tsc -b failed:\n${b.stdout}${b.stderr}`);
  const e = spawnSync(process.execPath, ['packages/cli/bundle.mjs'], { cwd: root, encoding: 'utf8' });
  if (e.status !== 0) throw new Error(`the CLI bundle failed:\n${e.stdout}${e.stderr}`);
}
