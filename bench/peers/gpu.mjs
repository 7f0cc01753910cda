// One WebGPU for every runtime in the peer benchmark: Dawn (npm `webgpu`, found by Kiln's
// runtime, which also defines the WebGPU globals) installed as `navigator.gpu`, as a browser
// would have it, so Kiln, onnxruntime-web and tfjs-webgpu all request their adapters from the
// same GPU object in one process.
// Invariant: installGpu() is idempotent and runs before any peer module is imported (tfjs
// registers its backend at import time only when navigator.gpu exists).

import { mkdirSync } from 'node:fs';
import { findGpu } from '@kiln/runtime';

let installed;

/**
 * Dawn's `GPUQueue.writeBuffer` reads its source through a plain ArrayBuffer; onnxruntime-web's
 * WebGPU EP passes views of its (shared) WebAssembly.Memory. Copy such views into a fresh
 * ArrayBuffer first; other data goes through untouched.
 */
function copyWasmWrites(GPUQueue) {
  const write = GPUQueue.prototype.writeBuffer;
  if (write.kilnCopiesWasm) return;
  const wrapped = function writeBuffer(buffer, offset, data, dataOffset, size) {
    if (ArrayBuffer.isView(data) && !(data.buffer instanceof ArrayBuffer)) {
      const bytesPer = data.BYTES_PER_ELEMENT ?? 1;
      const start = dataOffset ?? 0;
      const count = size ?? data.byteLength / bytesPer - start;
      const copy = new Uint8Array(count * bytesPer);
      copy.set(new Uint8Array(data.buffer, data.byteOffset + start * bytesPer, count * bytesPer));
      return write.call(this, buffer, offset, copy, 0, copy.byteLength);
    }
    return write.call(this, buffer, offset, data, dataOffset, size);
  };
  wrapped.kilnCopiesWasm = true;
  GPUQueue.prototype.writeBuffer = wrapped;
}

/**
 * Installs Dawn as `navigator.gpu` (SwiftShader when there is no GPU) and returns it.
 * @returns {Promise<GPU>}
 * @example const gpu = await installGpu(); const adapter = await gpu.requestAdapter();
 */
export function installGpu() {
  installed ??= (async () => {
    process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
    process.env.XDG_RUNTIME_DIR ??= '/tmp/kiln-xdg';
    mkdirSync(process.env.XDG_RUNTIME_DIR, { recursive: true });
    const gpu = await findGpu();
    if (globalThis.GPUQueue) copyWasmWrites(globalThis.GPUQueue);
    if (!globalThis.navigator) Object.defineProperty(globalThis, 'navigator', { value: {}, configurable: true, writable: true });
    Object.defineProperty(globalThis.navigator, 'gpu', { value: gpu, configurable: true, writable: true });
    const adapter = await gpu.requestAdapter();
    if (!adapter) {
      throw new Error('bench/peers: no WebGPU adapter; install Debian\'s chromium and libvulkan1 (SwiftShader) or set VK_ICD_FILENAMES to a Vulkan driver');
    }
    return gpu;
  })();
  return installed;
}

/** A one-line description of the adapter the runs use (vendor, architecture, device). */
export async function adapterName() {
  const adapter = await (await installGpu()).requestAdapter();
  const info = adapter.info ?? {};
  return [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' / ') || 'unknown adapter';
}
