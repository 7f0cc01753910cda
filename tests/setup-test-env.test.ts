// scripts/setup-test-env.mjs, the set-up step of `npm test` and .ci/run: with a part of the
// WebGPU software stack missing (here: a driver manifest path that does not exist), it either
// installs the Debian packages, saying so in one line, or stops with one line naming the command.

import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../scripts/setup-test-env.mjs', import.meta.url));
const setup = (env: Record<string, string>, args: string[] = []) =>
  spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });

describe('setup-test-env', () => {
  it('passes silently when the stack is present', () => {
    const r = setup({});
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toBe('');
  });

  it('stops before the suite with the exact command when it may not install', () => {
    const r = setup({ VK_ICD_FILENAMES: '/nonexistent/vk_icd.json', KILN_SETUP_INSTALL: 'never' });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('a Vulkan driver manifest (/nonexistent/vk_icd.json)');
    expect(lines[0]).toContain('run: sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium');
  });

  it('says in one line what it installs and why when it can install', () => {
    const r = setup({ VK_ICD_FILENAMES: '/nonexistent/vk_icd.json', KILN_CHROMIUM: '/nonexistent/chromium' }, ['--dry-run']);
    if (process.getuid?.() === 0 || spawnSync('sudo', ['-n', 'true']).status === 0) {
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('setup: installing Debian packages chromium for the WebGPU tests ' +
        '(missing: a Vulkan driver manifest (/nonexistent/vk_icd.json), a headless browser (/nonexistent/chromium)) [dry run]');
    } else {
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('run: sudo apt-get');
    }
  });
});
