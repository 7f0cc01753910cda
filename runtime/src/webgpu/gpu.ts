/// <reference types="@webgpu/types" />
// Finding a WebGPU implementation: `navigator.gpu` in browsers, the `webgpu` npm package (Dawn)
// in Node. Invariant: the Node package is imported dynamically through a specifier held in a
// variable, so a browser bundle of the runtime never contains or resolves it.

import { RuntimeError } from '../errors.js';

const NODE_PACKAGE = 'webgpu';

interface DawnModule {
  create(options: string[]): GPU;
  globals: object;
}

let nodeGpu: Promise<GPU> | undefined;

async function dawn(): Promise<GPU> {
  const spec = NODE_PACKAGE;
  let mod: DawnModule;
  try {
    mod = (await import(/* @vite-ignore */ spec)) as DawnModule;
  } catch (e) {
    throw new RuntimeError('BACKEND', `WebGPU in Node needs the 'webgpu' npm package (Dawn), which could not be loaded: ${e instanceof Error ? e.message : String(e)}; install it next to @kiln/runtime`, undefined, { cause: e });
  }
  // Dawn's objects need the WebGPU enums (GPUBufferUsage, ...) as globals, as in browsers.
  for (const [k, v] of Object.entries(mod.globals)) if (!(k in globalThis)) Object.defineProperty(globalThis, k, { value: v, configurable: true, writable: true });
  return mod.create([]);
}

/** The platform's GPU object: navigator.gpu, or Dawn in Node (loaded once). */
export async function findGpu(): Promise<GPU> {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) return nav.gpu;
  const isNode = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';
  if (!isNode) throw new RuntimeError('BACKEND', 'this browser has no WebGPU (navigator.gpu is missing); use a WebGPU-enabled browser or backend: \'cpu\'');
  nodeGpu ??= dawn();
  return nodeGpu;
}

/** A WebGPU adapter, or a BACKEND RuntimeError saying how to get one. */
export async function requestAdapter(gpu?: GPU): Promise<GPUAdapter> {
  const g = gpu ?? await findGpu();
  const adapter = await g.requestAdapter();
  if (!adapter) {
    throw new RuntimeError('BACKEND', 'no WebGPU adapter found; on a machine without a GPU install Debian\'s chromium and libvulkan1 and set VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json and XDG_RUNTIME_DIR (see .ci/run), or use backend: \'cpu\'');
  }
  return adapter;
}
