// tfjs-webgpu running the seed model of ./tfjs-models.mjs (tfjs-core ops in NHWC, Kiln's weights
// transposed). Invariant: the backend is webgpu on the Dawn GPU ./gpu.mjs installs, and one run
// takes host data in and gives host logits back, like Kiln's `model.run`.

import { installGpu } from './gpu.mjs';
import { seedModelTfjs } from './tfjs-models.mjs';

export { toNhwc } from './tfjs-models.mjs';

/**
 * A tfjs-webgpu model of the seed network; `run` takes the NCHW input already converted with
 * toNhwc (tfjs's layout) and gives host logits [N * 10].
 * @param {ReturnType<import('./model.mjs').seedModel>['weights']} w
 */
export async function createTfjsPeer(w) {
  await installGpu();
  const tf = await import('@tensorflow/tfjs-core');
  await import('@tensorflow/tfjs-backend-webgpu');
  if (!(await tf.setBackend('webgpu')) || tf.getBackend() !== 'webgpu') {
    throw new Error(`bench/peers: tfjs could not start its webgpu backend (got '${tf.getBackend()}'); is navigator.gpu installed before the import?`);
  }
  await tf.ready();
  const { forward, owned } = seedModelTfjs(tf, w);
  return {
    name: `tfjs-webgpu ${tf.version_core}`,
    async run(x) {
      const input = tf.tensor(x.data, x.shape, 'float32');
      const y = forward(input);
      const data = await y.data();
      input.dispose();
      y.dispose();
      return data;
    },
    async release() {
      tf.dispose(owned);
    },
  };
}
