// onnxruntime-web's WebGPU execution provider running the seed model exported by ./onnx.mjs.
// Invariant: the session is created with the 'webgpu' EP only (no 'wasm' fallback listed), on the
// Dawn GPU that ./gpu.mjs installs, and one run takes host data in and gives host logits back,
// like Kiln's `model.run`.

import { installGpu } from './gpu.mjs';
import { seedModelOnnx } from './onnx.mjs';

/**
 * An onnxruntime-web WebGPU session of the seed model.
 * @param {ReturnType<import('./model.mjs').seedModel>['weights']} weights
 * @returns {Promise<{ name: string, run: (x: { data: Float32Array, shape: number[] }) => Promise<Float32Array>, release: () => Promise<void> }>}
 */
export async function createOrtPeer(weights) {
  await installGpu();
  const ort = await import('onnxruntime-web/webgpu');
  ort.env.wasm.numThreads = 1; // no worker threads: the timing is of the GPU work, as for the other rows
  ort.env.logLevel = 'error';
  const session = await ort.InferenceSession.create(seedModelOnnx(weights), { executionProviders: ['webgpu'], graphOptimizationLevel: 'all' });
  return {
    name: `onnxruntime-web ${ort.env.versions?.web ?? '(unknown version)'} WebGPU`,
    async run(x) {
      const input = new ort.Tensor('float32', x.data, x.shape);
      const out = await session.run({ x: input });
      const logits = out.logits;
      const data = logits.data.slice(); // copy: the session may reuse its output buffer
      input.dispose?.();
      logits.dispose?.();
      return data;
    },
    release: () => session.release(),
  };
}
