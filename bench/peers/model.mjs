// The one seed model every runtime in the peer benchmark runs: Kiln's ResearchModel (eval) with
// manualSeed(0) weights, its BatchNorm statistics and affine parameters set to seeded non-trivial
// values (so BN is not an identity that a wrong export could hide). Invariant: every peer builds
// its model from `weights` below, and every peer's output is checked against `reference(x)`, the
// Kiln eager forward pass.

import { jit, manualSeed, nn, noGrad, randn, tensor } from 'kiln';
import { ResearchModel, seedInputShape } from '../../examples/seed/models.mjs';
import { seededValues } from '../stats.mjs';

/** Seeded values in [lo, hi) (deterministic, see seededValues). */
const uniform = (n, seed, lo, hi) => seededValues(n, seed).map((v) => lo + (v + 0.5) * (hi - lo));

/**
 * The seed model and its weights as plain arrays (PyTorch layouts: conv [O, I, kh, kw],
 * linear [out, in]).
 */
export function seedModel() {
  manualSeed(0);
  const model = new ResearchModel();
  const sd = model.stateDict();
  const stats = {};
  for (const [i, prefix] of ['features.1', 'features.5'].entries()) {
    const c = sd[`${prefix}.running_mean`].shape[0];
    stats[`${prefix}.weight`] = uniform(c, 11 + i, 0.5, 1.5);
    stats[`${prefix}.bias`] = uniform(c, 21 + i, -0.2, 0.2);
    stats[`${prefix}.running_mean`] = uniform(c, 31 + i, -0.1, 0.1);
    stats[`${prefix}.running_var`] = uniform(c, 41 + i, 0.5, 2);
  }
  const loaded = { ...sd };
  for (const [k, v] of Object.entries(stats)) loaded[k] = tensor(v, { shape: sd[k].shape });
  model.loadStateDict(loaded);
  model.eval();

  const eps = [...model.modules()].filter((m) => m instanceof nn.BatchNorm2d).map((m) => m.eps);
  const state = model.stateDict();
  const get = (k) => ({ data: state[k].toArray(), shape: [...state[k].shape] });
  const bn = (prefix, e) => ({ gamma: get(`${prefix}.weight`), beta: get(`${prefix}.bias`), mean: get(`${prefix}.running_mean`), variance: get(`${prefix}.running_var`), eps: e });
  const weights = {
    conv1: { weight: get('features.0.weight'), bias: get('features.0.bias') },
    bn1: bn('features.1', eps[0]),
    conv2: { weight: get('features.4.weight'), bias: get('features.4.bias') },
    bn2: bn('features.5', eps[1]),
    fc1: { weight: get('classifier.1.weight'), bias: get('classifier.1.bias') },
    fc2: { weight: get('classifier.3.weight'), bias: get('classifier.3.bias') },
  };

  /** Kiln's eager logits for an NCHW input, as a flat Float32Array [N * 10]. */
  const reference = (x) => noGrad(() => model.forward(tensor(x.data, { shape: x.shape })).toArray());

  /** The model traced with a dynamic batch dimension N (the graph the Kiln rows compile). */
  const graph = () => jit.trace(model, [randn(seedInputShape(1))], { dynamicAxes: { 0: { 0: 'N' } }, warn: false, checkTrace: false }).graph;

  return { model, weights, reference, graph };
}

/** The benchmark input at batch `n`: seeded NCHW values [n, 3, 32, 32]. */
export function seedInput(n) {
  return { data: seededValues(n * 3 * 32 * 32, 7 + n), shape: seedInputShape(n), dtype: 'float32' };
}

/** Largest |a[i] - b[i]|; throws when the lengths differ. */
export function maxAbsDiff(a, b) {
  if (a.length !== b.length) throw new Error(`bench/peers: outputs of different lengths (${a.length} vs ${b.length})`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
