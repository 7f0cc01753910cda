// The benchmark models written with tfjs-core ops, for any tfjs backend (webgpu in ./tfjs.mjs,
// wasm in ./cpu.mjs), the way tfjs-layers would run them (Conv2D = fused conv2d + bias,
// BatchNormalization = batchNorm, Dense = fused matMul + bias (+ relu)), in tfjs's native NHWC
// layout. Invariant: the weights are Kiln's, transposed to NHWC (conv [kh, kw, I, O]; a linear
// layer after an NCHW flatten has its rows permuted to NHWC's (h, w, c) order), so the logits
// equal Kiln's for the same image. No GPU or Kiln import here: a CPU peer's process holds only tfjs.

/** NCHW [n, c, h, w] data as NHWC. */
export function toNhwc({ data, shape: [n, c, h, w] }) {
  const out = new Float32Array(data.length);
  for (let b = 0; b < n; b++) for (let ch = 0; ch < c; ch++) for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
    out[((b * h + y) * w + x) * c + ch] = data[((b * c + ch) * h + y) * w + x];
  }
  return { data: out, shape: [n, h, w, c] };
}

/** Conv weight [O, I, kh, kw] as tfjs's filter [kh, kw, I, O]. */
export function filterHwio({ data, shape: [o, i, kh, kw] }) {
  const out = new Float32Array(data.length);
  for (let a = 0; a < o; a++) for (let b = 0; b < i; b++) for (let y = 0; y < kh; y++) for (let x = 0; x < kw; x++) {
    out[((y * kw + x) * i + b) * o + a] = data[((a * i + b) * kh + y) * kw + x];
  }
  return { data: out, shape: [kh, kw, i, o] };
}

/** Linear weight [out, c*h*w] (input flattened NCHW) as a matMul operand [h*w*c, out] (input flattened NHWC). */
export function denseFromNchwFlatten({ data, shape: [outF] }, [c, h, w]) {
  const out = new Float32Array(data.length);
  for (let o = 0; o < outF; o++) for (let ch = 0; ch < c; ch++) for (let p = 0; p < h * w; p++) {
    out[(p * c + ch) * outF + o] = data[o * c * h * w + ch * h * w + p];
  }
  return { data: out, shape: [h * w * c, outF] };
}

/** Linear weight [out, in] as [in, out]. */
export function transpose2d({ data, shape: [r, c] }) {
  const out = new Float32Array(data.length);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = data[i * c + j];
  return { data: out, shape: [c, r] };
}

/**
 * The seed network in tfjs ops on whatever backend `tf` has (NHWC input, see toNhwc): `forward`
 * and the weight tensors it `owned`.
 */
export function seedModelTfjs(tf, w) {
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
  return { forward, owned };
}

/**
 * The small ResNet of ./cpu-models.mjs (stem conv-BN-ReLU, basic blocks, global average pool,
 * linear) in tfjs ops: `forward` takes NHWC.
 * @param {Record<string, { data: Float32Array, shape: number[], eps?: number }>} sd Kiln's stateDict as arrays
 * @param {number} blocks
 */
export function resnetTfjs(tf, sd, blocks) {
  const owned = [];
  const t = ({ data, shape }) => { const x = tf.tensor(data, shape, 'float32'); owned.push(x); return x; };
  const bn = (k) => ({ mean: t(sd[`${k}.running_mean`]), variance: t(sd[`${k}.running_var`]), offset: t(sd[`${k}.bias`]), scale: t(sd[`${k}.weight`]) });
  const convBn = (c, b) => ({ f: t(filterHwio(sd[`${c}.weight`])), bn: bn(b) });
  const stem = convBn('stem.0', 'stem.1');
  const layers = Array.from({ length: blocks }, (_, i) => [convBn(`blocks.${i}.conv1`, `blocks.${i}.bn1`), convBn(`blocks.${i}.conv2`, `blocks.${i}.bn2`)]);
  const fc = { w: t(transpose2d(sd['fc.weight'])), b: t(sd['fc.bias']) };
  const apply = (x, { f, bn: b }) => tf.batchNorm(tf.conv2d(x, f, 1, 'same'), b.mean, b.variance, b.offset, b.scale, 1e-5);
  const forward = (x) => tf.tidy(() => {
    let h = tf.relu(apply(x, stem));
    for (const [c1, c2] of layers) h = tf.relu(tf.add(apply(tf.relu(apply(h, c1)), c2), h));
    return tf.fused.matMul({ a: tf.mean(h, [1, 2]), b: fc.w, bias: fc.b });
  });
  return { forward, owned };
}

/** The MLP of ./cpu-models.mjs (Linear-ReLU-Linear-ReLU-Linear, keys 0, 2, 4) in tfjs ops. */
export function mlpTfjs(tf, sd) {
  const owned = [];
  const t = ({ data, shape }) => { const x = tf.tensor(data, shape, 'float32'); owned.push(x); return x; };
  const layers = ['0', '2', '4'].map((k) => ({ w: t(transpose2d(sd[`${k}.weight`])), b: t(sd[`${k}.bias`]) }));
  const forward = (x) => tf.tidy(() => layers.reduce((h, l, i) => tf.fused.matMul({ a: h, b: l.w, bias: l.b, activation: i < layers.length - 1 ? 'relu' : 'linear' }), x));
  return { forward, owned };
}
