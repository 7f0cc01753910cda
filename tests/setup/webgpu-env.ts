// Vitest setup (registered in vitest.config.ts): where Dawn finds a Vulkan driver on a machine
// without a GPU. Defaults only — a VK_ICD_FILENAMES or XDG_RUNTIME_DIR set by the user (a real
// GPU's driver) wins. scripts/setup-test-env.mjs, run by `npm test` first, makes sure the default
// driver (SwiftShader, from Debian's chromium) and the Vulkan loader are installed.

import { mkdirSync } from 'node:fs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });
