// Op family 'norm': batch_norm in its normalizing form, y = (x − mean)/√(var + eps)·w + b per
// channel (dim 1). Statistics are inputs, not computed here: eval mode passes the running
// statistics, training mode passes batch statistics computed with ops — the gradient rule
// covers all five inputs, so gradients flow through those statistics back to x. Layer, group and
// instance norm are compositions of batch_norm over reshaped inputs (packages/core), and a
// compiler pass folds an eval-mode batch_norm into a preceding conv2d or linear.

import { z } from 'zod';
import { defineOp } from '../op-def.js';
import { fmtShape, OpError, type Dim, type TensorType } from '../shape.js';

const attrs = z.object({ eps: z.number().min(0).default(1e-5) }).strict();

function checkTypes(x: TensorType | null, rest: readonly (TensorType | null)[]): TensorType {
  if (!x) throw new OpError('batch_norm', "input 'input' is required");
  if (x.dtype !== 'float32') throw new OpError('batch_norm', `input must be float32, got ${x.dtype}`);
  if (x.shape.length < 2) throw new OpError('batch_norm', `input must have a channel dim 1, got ${fmtShape(x.shape)}`);
  const C = x.shape[1];
  ['mean', 'var', 'weight', 'bias'].forEach((name, i) => {
    const t = rest[i];
    if (!t) {
      if (i < 2) throw new OpError('batch_norm', `input '${name}' is required`);
      return;
    }
    if (t.dtype !== 'float32' || t.shape.length !== 1 || t.shape[0] !== C) {
      throw new OpError('batch_norm', `${name} must be float32 of shape [${C}] for input ${fmtShape(x.shape)}, got ${t.dtype}${fmtShape(t.shape)}`);
    }
  });
  return x;
}

export const batch_norm = defineOp({
  name: 'batch_norm',
  doc: 'y = (x − mean)/sqrt(var + eps)·weight + bias with per-channel (dim 1) mean, var, weight?, bias?',
  inputs: ['input', 'mean', 'var', 'weight?', 'bias?'], attrs,
  infer([x, ...rest]) { return [{ dtype: 'float32', shape: checkTypes(x, rest).shape }]; },
  cpu([x, mean, v, w, bias], { eps }) {
    checkTypes(x, [mean, v, w, bias]);
    const shape = x!.shape, C = shape[1], N = shape[0];
    let inner = 1;
    for (let i = 2; i < shape.length; i++) inner *= shape[i];
    const X = x!.data as Float32Array, out = new Float32Array(X.length);
    const M = mean!.data, V = v!.data, Wd = w?.data, Bd = bias?.data;
    // y = x·scale + shift with both folded per channel in double precision.
    const scale = new Float64Array(C), shift = new Float64Array(C);
    for (let c = 0; c < C; c++) {
      const s = (Wd ? Wd[c] : 1) / Math.sqrt(V[c] + eps);
      scale[c] = s;
      shift[c] = (Bd ? Bd[c] : 0) - M[c] * s;
    }
    for (let n = 0, o = 0; n < N; n++) {
      for (let c = 0; c < C; c++) {
        const s = scale[c], t = shift[c];
        for (let i = 0; i < inner; i++, o++) out[o] = X[o] * s + t;
      }
    }
    return [{ data: out, shape, dtype: 'float32' }];
  },
  grad: {
    saveInputs: [0, 1, 2, 3],
    rule: (b, { gradOutputs: [g], inputs: [x, mean, v, w], inputTypes: [tx], attrs: { eps }, needsInputGrad: [nx, nm, nv, nw, nb] }) => {
      if (!g) return [null, null, null, null, null];
      const r = tx!.shape.length, C = tx!.shape[1];
      // [C] → [C, 1, ..., 1] broadcasts against [N, C, ...]; the sums run over every other dim.
      const bshape: Dim[] = [C, ...Array<number>(r - 2).fill(1)];
      const perChannel = (t: Parameters<typeof b.reshape>[0]) => b.reshape(t, bshape);
      const others = [0, ...Array.from({ length: r - 2 }, (_, i) => i + 2)];
      const invstd = b.unary('rsqrt', b.addScalar(v!, eps));
      const gw = w ? b.mul(g, perChannel(w)) : g;
      const gx = nx ? b.mul(gw, perChannel(invstd)) : null;
      const gm = nm ? b.neg(b.mul(b.sum(gw, others), invstd)) : null;
      const xm = nv || nw ? b.sub(x!, perChannel(mean!)) : null;
      // d/dvar (var + eps)^(-1/2) = −½·invstd³.
      const gv = nv ? b.mul(b.sum(b.mul(gw, xm!), others), b.mulScalar(b.mul(invstd, b.mul(invstd, invstd)), -0.5)) : null;
      const gweight = nw ? b.mul(b.sum(b.mul(g, xm!), others), invstd) : null;
      const gbias = nb ? b.sum(g, others) : null;
      return [gx, gm, gv, gweight, gbias];
    },
  },
});
