// Models that use the Kiln ops the seed and sequence models do not, one table entry each, for
// the ONNX export (ONNX Runtime) and round-trip tests: pooling variants, transposed conv,
// reductions, indexing, comparisons, masks and the remaining elementwise ops.
import { F, cat, nn, tensor, type Tensor } from 'kiln';

/** Image ops on x [N, 2, 8, 8]; returns [N, 2*4*4*5 + ...] features concatenated. */
export class ImageZoo extends nn.Module {
  up = new nn.ConvTranspose2d(2, 3, 3, { stride: 2, padding: 1, outputPadding: 1 });
  grouped = new nn.Conv2d(2, 4, 3, { padding: [1, 2], groups: 2, dilation: [1, 2], bias: false });
  forward(x: Tensor): Tensor {
    const a = F.avgPool2d(x, 3, { stride: 1, padding: 1, countIncludePad: false });
    const b = F.avgPool2d(x, 2, { ceilMode: true });
    const c = F.maxPool2d(x, 3, { stride: 2, padding: 1, ceilMode: true });
    const d = F.adaptiveAvgPool2d(x, 4);
    const e = F.adaptiveMaxPool2d(x, [2, 2]);
    const f = F.adaptiveMaxPool2d(x, 1);
    const g = F.hardswish(this.up.forward(x));
    const h = this.grouped.forward(x);
    return [a, b, c, d, e, f, g, h].map((t) => t.flatten(1)).reduce((p, q) => p.add(q.sum(1, { keepdim: true })).abs().sqrt());
  }
}

/** Vector ops on x [N, 6]. */
export class VectorZoo extends nn.Module {
  idx = tensor([4, 0, 2, 2], { dtype: 'int32' });
  forward(x: Tensor): Tensor {
    const pos = x.gt(0);
    const clipped = x.clamp(-0.5, 0.7).add(x.clamp(null, 0.1)).add(x.clamp(0.2, null));
    const masked = x.where(pos, x.mul(-2)).add(pos.float()).add(pos.logicalNot().float().mul(3));
    const cmp = x.ge(0.1).float().add(x.le(-0.1).float()).add(x.eq(x).float()).add(x.ne(0).float()).add(x.lt(0.3).float());
    const red = x.amax(1, { keepdim: true }).add(x.amin(1, { keepdim: true })).add(x.prod(1, { keepdim: true })).add(x.sum());
    const arg = x.argmax(1, { keepdim: true }).float().add(x.argmin(1, { keepdim: true }).float()).add(x.argmax().float());
    const idx = x.indexSelect(1, this.idx).sum(1, { keepdim: true });
    const gath = x.gather(1, x.abs().argmax(1, { keepdim: true })).mul(2);
    const scat = x.mul(0).scatterAdd(1, x.argmin(1, { keepdim: true }), x.sin().slice(1, 0, 1));
    const seq = x.cumsum(1).add(x.flip([1])).add(x.exp().log()).add(x.cos()).add(x.sign()).add(x.abs().add(1).rsqrt());
    const mat = x.reshape([-1, 2, 3]);
    const tri = mat.matmul(mat.permute([0, 2, 1])).tril().add(mat.matmul(mat.permute([0, 2, 1])).triu(1).mul(2)).flatten(1);
    const mm = x.maximum(x.mul(0.5)).add(x.minimum(x.pow(2))).add(x.neg()).add(x.div(x.abs().add(1)));
    return cat([clipped, masked, cmp, red, arg, idx, gath, scat, seq, tri, mm], 1).tanh().sigmoid().logSoftmax(-1);
  }
}

/** The rounding and special-value ops and sort (values and indices), for the exporter's entries. */
export class RoundingZoo extends nn.Module {
  forward(x: Tensor): Tensor {
    const y = x.mul(3.3);
    const r = y.floor().add(y.ceil().mul(2)).add(y.round().mul(3)).add(y.trunc().mul(4));
    const small = x.abs().log1p().add(x.expm1());
    const special = x.log().isnan().float().add(x.div(x.add(x.abs())).isfinite().float().mul(2));
    const [v, i] = x.sort({ dim: 1 });
    const [vd, id] = x.sort({ dim: 1, descending: true });
    return cat([r, small, special, v, i.float(), vd.mul(2), id.float()], 1);
  }
}

/** Scalar arithmetic on an int argument (floordiv, mod, min/max) feeding a loop, for jit.script. */
export class IntMath extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    const q = Math.floor(n / 3);
    const r = n - Math.floor(n / 3) * 3;
    let y = x;
    for (let i = 0; i < Math.max(q + r, 1); i++) {
      y = y.mul(0.5).add(i - Math.floor(i / 2) * 2).add(x.mean().item() > 0 ? 1 : -1);
    }
    return y.add(q).sub(r * 2);
  }
}
