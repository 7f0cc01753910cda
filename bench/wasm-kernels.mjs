// The CPU device's WebAssembly kernels against ir-spec's JavaScript kernels, side by side in one
// process, through the op entries (the same call the runtime and eager dispatch make, with and
// without the device's primitives): depthwise conv2d (MobileNet-like layers), e^x/sigmoid/tanh,
// softmax and logSoftmax as eager mode composes them (amax, sub, exp, sum, div/log) along the last
// and a middle dim, layer norm (batch_norm_stats + batch_norm over [1, rows, D]) and its backward
// (batch_norm_backward, also batch norm's training gradient), and an LSTM and a
// GRU cell's gate math after the GEMMs (eager ops, and the fused_elementwise body a graph runs).
// Each row prints the median CPU ms per call of both, timed in interleaved pairs, and the median
// of the pairs' ratios JS/wasm (> 1: the WebAssembly kernel is faster). Run `npm run build` first, then `node bench/wasm-kernels.mjs [--quick]`.

import os from 'node:os';
import { getOp, programToBody } from '@kiln/ir-spec';
import { fastPrimitives } from '@kiln/runtime';
import { isMain, seededValues, summarize } from './stats.mjs';

const t = (shape, seed, scale = 1) => {
  const data = seededValues(shape.reduce((a, d) => a * d, 1), seed);
  if (scale !== 1) for (let i = 0; i < data.length; i++) data[i] *= scale;
  return { data, shape, dtype: 'float32' };
};
const op = (name, inputs, attrs, prims, regions) => getOp(name).cpu(inputs, attrs, { ...(prims ? { prims } : {}), ...(regions ? { regions } : {}) })[0];

/** softmax / logSoftmax as packages/core composes them (max subtracted, detached). */
function softmax(x, dim, log, prims) {
  const m = op('amax', [x], { dim: [dim], keepdim: true }, prims);
  const s = op('sub', [x, m], {}, prims);
  const e = op('exp', [s], {}, prims);
  const z = op('sum', [e], { dim: [dim], keepdim: true }, prims);
  return log ? op('sub', [s, op('log', [z], {}, prims)], {}, prims) : op('div', [e, z], {}, prims);
}

function layerNorm(x, prims) {
  const [mean, variance] = getOp('batch_norm_stats').cpu([x], {}, prims ? { prims } : undefined);
  return op('batch_norm', [x, mean, variance, null, null], { eps: 1e-5 }, prims);
}

/** An LSTM cell's gates after the GEMMs (gates [B, 4H] already split into four [B, H]). */
function lstmGates([i, f, g, o, c], prims) {
  const c2 = op('add', [op('mul', [op('sigmoid', [f], {}, prims), c], {}, prims), op('mul', [op('sigmoid', [i], {}, prims), op('tanh', [g], {}, prims)], {}, prims)], {}, prims);
  return op('mul', [op('sigmoid', [o], {}, prims), op('tanh', [c2], {}, prims)], {}, prims);
}
/** A GRU cell's gates after the GEMMs (x·W_ih and h·W_hh split into r, z, n parts). */
function gruGates([xr, xz, xn, hr, hz, hn, h], prims) {
  const r = op('sigmoid', [op('add', [xr, hr], {}, prims)], {}, prims);
  const z = op('sigmoid', [op('add', [xz, hz], {}, prims)], {}, prims);
  const n = op('tanh', [op('add', [xn, op('mul', [r, hn], {}, prims)], {}, prims)], {}, prims);
  return op('add', [n, op('mul', [z, op('sub', [h, n], {}, prims)], {}, prims)], {}, prims);
}
// The same LSTM cell state update as one fused_elementwise body (what -O2's fusion makes of it): c2 from i, f, g, c.
const LSTM_C_BODY = programToBody([['sigmoid', 'x1'], ['mul', 't0', 'x3'], ['sigmoid', 'x0'], ['tanh', 'x2'], ['mul', 't2', 't3'], ['add', 't1', 't4']], 4);

/**
 * CPU time of one call in ms (this process, user + system): on a machine shared with other jobs,
 * wall time mostly measures waiting for a core. Every kernel here runs on the calling thread.
 */
function cpuMs(fn) {
  const t0 = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

function rows(quick) {
  const prims = fastPrimitives();
  const dw = (N, C, H, s, M = 1) => {
    const x = t([N, C, H, H], 1), w = t([C * M, 1, 3, 3], 2), b = t([C * M], 3);
    return [`depthwise conv2d 3×3 [${N},${C},${H},${H}]${M > 1 ? ` ×${M}` : ''} s${s} p1 +bias`, (p) => op('conv2d', [x, w, b], { stride: [s, s], padding: [1, 1, 1, 1], dilation: [1, 1], groups: C }, p)];
  };
  const x1 = t([64, 1000], 4, 8), x3 = t([8, 1000, 16], 5, 8), ln = t([1, 256, 768], 6);
  const gates = (B, H, k, seed) => Array.from({ length: k }, (_, j) => t([B, H], seed + j, 3));
  const lstm = gates(32, 256, 5, 10), gru = gates(32, 256, 7, 20);
  const [lnMean, lnVar] = getOp('batch_norm_stats').cpu([ln], {});
  const lnGrad = t([1, 256, 768], 7), bn = t([32, 16, 32, 32], 8), bnGrad = t([32, 16, 32, 32], 9), [bnMean, bnVar] = getOp('batch_norm_stats').cpu([bn], {});
  const bnBackward = (x, g, m, v, w, p) => getOp('batch_norm_backward').cpu([g, x, m, v, w, null], { eps: 1e-5 }, p ? { prims: p } : undefined)[0];
  return [
    dw(1, 32, 112, 1), dw(1, 64, 112, 2), dw(1, 128, 56, 1), dw(1, 256, 28, 2), dw(8, 64, 32, 1), dw(1, 32, 56, 1, 2),
    ['exp [64, 1000]', (p) => op('exp', [x1], {}, p)],
    ['sigmoid [32, 1024]', (p) => op('sigmoid', [lstm[0]], {}, p)],
    ['tanh [32, 1024]', (p) => op('tanh', [lstm[1]], {}, p)],
    ['softmax [64, 1000] dim -1', (p) => softmax(x1, 1, false, p)],
    ['logSoftmax [64, 1000] dim -1', (p) => softmax(x1, 1, true, p)],
    ['softmax [8, 1000, 16] dim 1', (p) => softmax(x3, 1, false, p)],
    ['amax [64, 1000] dim -1', (p) => op('amax', [x1], { dim: [1], keepdim: true }, p)],
    ['layer norm [256, 768] (stats + normalize)', (p) => layerNorm(ln, p)],
    ['layer norm backward [256, 768] (batch_norm_backward)', (p) => bnBackward(ln, lnGrad, lnMean, lnVar, null, p)],
    ['batch norm backward [32, 16, 32, 32]', (p) => bnBackward(bn, bnGrad, bnMean, bnVar, t([16], 10), p)],
    ['LSTM cell gates [32, 256] (eager ops)', (p) => lstmGates(lstm, p)],
    ['LSTM cell state as one fused_elementwise [32, 256]', (p) => op('fused_elementwise', [lstm[0], lstm[1], lstm[2], lstm[4]], {}, p, [LSTM_C_BODY])],
    ['GRU cell gates [32, 256] (eager ops)', (p) => gruGates(gru, p)],
  ].map(([name, run]) => {
    // Interleaved pairs (JS, wasm, JS, wasm, …) after warm-up, so a change of load hits both alike;
    // the ratio is the median of the per-pair ratios.
    for (let i = 0; i < (quick ? 1 : 3); i++) { run(undefined); run(prims); }
    const js = [], wasm = [], ratio = [];
    const pairs = quick ? 3 : 25;
    for (let r = 0; r < pairs; r++) {
      const a = cpuMs(() => run(undefined)), b = cpuMs(() => run(prims));
      js.push(a); wasm.push(b); ratio.push(a / b);
    }
    return { name, js: summarize(js).median, wasm: summarize(wasm).median, ratio: summarize(ratio).median };
  });
}

if (isMain(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  console.log(`CPU kernels: ${fastPrimitives().kind}; node ${process.version}; ${os.availableParallelism()} cores; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log('| kernel | JS CPU ms | wasm CPU ms | JS/wasm |\n| --- | ---: | ---: | ---: |');
  for (const r of rows(quick)) console.log(`| ${r.name} | ${r.js.toFixed(3)} | ${r.wasm.toFixed(3)} | ${r.ratio.toFixed(2)}× |`);
}
