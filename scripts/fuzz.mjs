// `npm run fuzz -- --count 100000`: bundles the load+run fuzz campaign (tests/fuzz/cli.ts, which
// bundles its own child from the sources) with esbuild and runs it; no build of the packages
// is needed. Options: see tests/fuzz/cli.ts.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// Inside the repository (git-ignored) so the bundle resolves esbuild from node_modules.
const outfile = join(root, 'node_modules/.cache/kiln-fuzz', `cli-${process.pid}.mjs`);
// campaign.ts finds the repository from its own location: keep it where it is (not bundled).
await build({
  entryPoints: [join(root, 'tests/fuzz/cli.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile,
  external: ['esbuild'], logLevel: 'warning',
  define: { 'import.meta.url': JSON.stringify(pathToFileURL(join(root, 'tests/fuzz/campaign.ts')).href) },
});
try {
  await import(pathToFileURL(outfile).href);
} finally {
  rmSync(outfile, { force: true });
}
