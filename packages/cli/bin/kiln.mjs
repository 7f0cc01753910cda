#!/usr/bin/env node
// The `kiln` bin: a launcher for the esbuild bundle dist/kiln.mjs. It exists in the source tree
// so that `npm install` links the bin before the first `npm run build` creates the bundle.
const bundle = new URL('../dist/kiln.mjs', import.meta.url);
try {
  await import(bundle.href);
} catch (e) {
  if (e?.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/kiln.mjs')) {
    process.stderr.write('kiln: the CLI is not built yet; run `npm run build` in the Kiln repository first\n');
    process.exitCode = 2;
  } else {
    throw e;
  }
}
