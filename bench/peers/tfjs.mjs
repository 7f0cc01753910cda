// tfjs-webgpu running the seed model written with tfjs-core ops, the way tfjs-layers would run it
// (Conv2D = fused conv2d + bias, BatchNormalization = batchNorm, Dense = fused matMul + bias
// (+ relu)), in tfjs's native NHWC layout. Invariant: the weights are Kiln's, transposed to NHWC
// (conv [kh, kw, I, O]; the first linear layer's rows permuted from Kiln's (c, h, w) flatten order
// to NHWC's (h, w, c)), so the logits equal Kiln's for the same image.

import { installGpu } from './gpu.mjs';

/** NCHW [n, c, h, w] data as NHWC. */
export function toNhwc({ data, shape: [n, c, h, w] }) {
  const out = new Float32Array(data.length);
  for (let b = 0; b < n; b++) for (let ch = 0; ch < c; ch++) for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
    out[((b * h + y) * w + x) * c + ch] = data[((b * c + ch) * h + y) * w + x];
  }
  return { data: out, shape: [n, h, w, c] };
}

/** Conv weight [O, I, kh, kw] as tfjs's filter [kh, kw, I, O]. */
function filterHwio({ data, shape: [o, i, kh, kw] }) {
  const out = new Float32Array(data.length);
  for (let a = 0; a < o; a++) for (let b = 0; b < i; b++) for (let y = 0; y < kh; y++) for (let x = 0; x < kw; x++) {
    out[((y * kw + x) * i + b) * o + a] = data[((a * i + b) * kh + y) * kw + x];
  }
  return { data: out, shape: [kh, kw, i, o] };
}

/** Linear weight [out, c*h*w] (input flattened NCHW) as a matMul operand [h*w*c, out] (input flattened NHWC). */
function denseFromNchwFlatten({ data, shape: [outF] }, [c, h, w]) {
  const out = new Float32Array(data.length);
  for (let o = 0; o < outF; o++) for (let ch = 0; ch < c; ch++) for (let p = 0; p < h * w; p++) {
    out[(p * c + ch) * outF + o] = data[o * c * h * w + ch * h * w + p];
  }
  return { data: out, shape: [h * w * c, outF] };
}

/** Linear weight [out, in] as [in, out]. */
function transpose2d({ data, shape: [r, c] }) {
  const out = new Float32Array(data.length);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = data[i * c + j];
  return { data: out, shape: [c, r] };
}

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
  const owned = [];
  const t = ({ data, shape }) => { const x = tf.tensor(data, shape, 'float32'); owned.push(x); return x; };
  const bn = (b) => ({ mean: t(b.mean), variance: t(b.variance), offset: t(b.beta), scale: t(b.gamma), eps: b.eps });
  const p = {
    f1: t(filterHwio(w.conv1.weight)), b1: t(w.conv1.bias), bn1: bn(w.bn1),
    f2: t(filterHwio(w.conv2.weight)), b2: t(w.conv2.bias), bn2: bn(w.bn2),
    d1: t(denseFromNchwFlatten(w.fc1.weight, [128, 8, 8])), c1: t(w.fc1.bias),
    d2: t(transpose2d(w.fc2.weight)), c2: t(w.fc2.bias),
  };
  const block = (x, filter, bias, b) => {
    const conv = tf.fused.conv2d({ x, filter, bias, strides: 1, pad: 'same' });
    return tf.maxPool(tf.relu(tf.batchNorm(conv, b.mean, b.variance, b.offset, b.scale, b.eps)), 2, 2, 'valid');
  };
  const forward = (x) => tf.tidy(() => {
    const f = block(block(x, p.f1, p.b1, p.bn1), p.f2, p.b2, p.bn2);
    const h = tf.fused.matMul({ a: tf.reshape(f, [x.shape[0], -1]), b: p.d1, bias: p.c1, activation: 'relu' });
    return tf.fused.matMul({ a: h, b: p.d2, bias: p.c2 });
  });
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
