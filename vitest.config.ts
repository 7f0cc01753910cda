import { defineConfig } from 'vitest/config';
import { fileURLToPath } from 'node:url';

const UPDATE = process.env.KILN_UPDATE_GOLDEN === '1';
const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// Tests import the packages from source (fast edit-test loop); tests/build/ checks the built dist.
export default defineConfig({
  resolve: {
    alias: {
      '@kiln/ir-spec': src('./ir-spec/src/index.ts'),
      '@kiln/runtime': src('./runtime/src/index.ts'),
      '@kiln/compiler': src('./compiler/src/index.ts'),
      '@kiln/core': src('./packages/core/src/index.ts'),
      kiln: src('./packages/kiln/src/index.ts'),
    },
  },
  test: {
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 60_000,
    // Dawn's driver defaults; every graph a test builds must round-trip through the IR text form (and verify).
    setupFiles: ['./tests/setup/webgpu-env.ts', './tests/setup/ir-roundtrip.ts'],
    // One switch regenerates every expected file, vitest snapshots included (tests/helpers/golden.ts):
    // `npm run test:update` sets KILN_UPDATE_GOLDEN=1; without it nothing is written, new snapshots neither.
    update: UPDATE ? 'all' : 'none',
    globalSetup: ['./tests/setup/golden-report.ts'],
    pool: 'forks',
  },
});
