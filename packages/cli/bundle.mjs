// Bundles the `kiln` command into one file, dist/kiln.mjs (the package's `bin`). The Kiln
// packages, esbuild and the TypeScript toolchain stay external: the CLI must share one copy of
// 'kiln' with the model files it imports (nn.Module / Tensor identity), and they are installed.
import { build } from 'esbuild';
import { chmodSync, renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

await build({
  entryPoints: [here('./src/bin.ts')],
  // Written aside and renamed: tests may spawn the CLI while another process rebuilds it.
  outfile: here(`./dist/kiln.mjs.${process.pid}.tmp`),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  banner: { js: '#!/usr/bin/env node' },
  logLevel: 'warning',
});

// The bin must be executable (npm sets the mode on install; a rebuild writes a fresh file).
chmodSync(here(`./dist/kiln.mjs.${process.pid}.tmp`), 0o755);
renameSync(here(`./dist/kiln.mjs.${process.pid}.tmp`), here('./dist/kiln.mjs'));
