#!/usr/bin/env node
// The one set-up step before the test suite (`npm test` and `.ci/run` both run it): the WebGPU
// tests run for real, on Dawn over SwiftShader's Vulkan driver when the machine has no GPU. That
// needs three things from Debian: the Vulkan loader (libvulkan1), SwiftShader's driver manifest
// and a headless browser (both shipped by chromium). When one is missing this script installs the
// packages itself where it can (root, or passwordless sudo, with apt-get), saying so in one line;
// where it cannot, it stops before the suite with one line naming the exact command to run.
// Invariant: it exits 0 only when every part is present afterwards, so no WebGPU test can fail
// (or be skipped) for want of the software stack.
//
// Environment: VK_ICD_FILENAMES (a ':'-separated list of driver manifests; default SwiftShader's),
// KILN_CHROMIUM (the browser; default /usr/bin/chromium), KILN_SETUP_INSTALL=never (report, never
// install). `--dry-run` prints what it would install without installing.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const LOADER_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/usr/local/lib'];

/** Each part the suite needs: how to find it, and the Debian package that brings it. */
function parts(env) {
  const manifests = (env.VK_ICD_FILENAMES || SWIFTSHADER_ICD).split(':').filter(Boolean);
  const browser = env.KILN_CHROMIUM || '/usr/bin/chromium';
  return [
    { what: 'the Vulkan loader (libvulkan.so.1)', pkg: 'libvulkan1', present: () => hasVulkanLoader() },
    { what: `a Vulkan driver manifest (${manifests.join(':')})`, pkg: 'chromium', present: () => manifests.some((m) => existsSync(m)) },
    { what: `a headless browser (${browser})`, pkg: 'chromium', present: () => existsSync(browser) },
  ];
}

function hasVulkanLoader() {
  if (LOADER_DIRS.some((d) => existsSync(`${d}/libvulkan.so.1`))) return true;
  try {
    return /libvulkan\.so\.1\b/.test(execFileSync('ldconfig', ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    return false;
  }
}

/** How packages can be installed here: as root, through passwordless sudo, or not at all. */
function installer(env) {
  if (env.KILN_SETUP_INSTALL === 'never') return undefined;
  if (spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status !== 0) return undefined;
  if (process.getuid?.() === 0) return [];
  if (spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0) return ['sudo'];
  return undefined;
}

function run(prefix, args) {
  const [cmd, ...rest] = [...prefix, ...args];
  const r = spawnSync(cmd, rest, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (r.status !== 0) throw new Error(`'${[cmd, ...rest].join(' ')}' failed (exit ${r.status})`);
}

function main() {
  const env = process.env;
  const dryRun = process.argv.includes('--dry-run');
  const missing = parts(env).filter((p) => !p.present());
  if (missing.length === 0) return 0;
  const pkgs = [...new Set(missing.map((p) => p.pkg))];
  const why = missing.map((p) => p.what).join(', ');
  const command = `sudo apt-get update && sudo apt-get install -y --no-install-recommends ${pkgs.join(' ')}`;
  const prefix = installer(env);
  if (!prefix) {
    console.error(`setup: the WebGPU tests need ${why}, which this machine lacks; run: ${command}`);
    return 1;
  }
  console.log(`setup: installing Debian packages ${pkgs.join(' ')} for the WebGPU tests (missing: ${why})${dryRun ? ' [dry run]' : ''}`);
  if (dryRun) return 0;
  try {
    run(prefix, ['apt-get', 'update', '-qq']);
    run(prefix, ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...pkgs]);
  } catch (e) {
    console.error(`setup: installing failed: ${e.message}; run: ${command}`);
    return 1;
  }
  const still = parts(env).filter((p) => !p.present());
  if (still.length > 0) {
    console.error(`setup: after installing ${pkgs.join(' ')}, still missing: ${still.map((p) => p.what).join(', ')}; ` +
      'point VK_ICD_FILENAMES at a Vulkan driver manifest and KILN_CHROMIUM at a Chromium binary');
    return 1;
  }
  return 0;
}

process.exitCode = main();
