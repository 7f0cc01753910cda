// Test models for the issue #22 ops in compiled code: every composite and new primitive must be
// recorded by jit.trace and jit.script as graph ops (index tensors as constants) and give eager's
// numbers from a saved .tsgraph.
import { nn, F, sort, topk, cumprod, einsum, roll, diag, type Tensor } from 'kiln';

/** Image ops: pad (reflect, constant), interpolate (bilinear, nearest), unfold/fold, pixelShuffle. */
export class ImageOps extends nn.Module {
  forward(x: Tensor): Tensor {
    const p = F.pad(x, [1, 1, 2, 0], { mode: 'reflect' });
    const up = F.interpolate(p, { scaleFactor: 2, mode: 'bilinear', alignCorners: false });
    const near = F.interpolate(F.pad(x, [0, 1, 0, 1], { value: 0.5 }), { size: [6, 10] });
    const cols = F.unfold(up, 2, { stride: 2 });
    const back = F.fold(cols, [12, 14], 2, { stride: 2 });
    const shuffled = F.pixelShuffle(back.repeat(1, 4, 1, 1), 2);
    return shuffled.sum([2, 3]).add(near.mean([2, 3]).sum(1, { keepdim: true }));
  }
}

/** Sequence ops: SDPA (causal), normalize, glu, sort/topk, cumprod, einsum, roll, rounding, diag. */
export class SeqOps extends nn.Module {
  forward(x: Tensor): Tensor {
    const a = F.scaledDotProductAttention(x, x, x, { isCausal: true });
    const n = F.normalize(a, { dim: -1 });
    const g = F.glu(n.repeat(1, 1, 2));
    const [values] = sort(g, { dim: -1, descending: true });
    const [top] = topk(values, 2);
    const c = cumprod(top.add(1), -1);
    const e = einsum('bld,bmd->blm', g, g);
    const r = roll(e, 1, -1).floor().add(e.round()).add(e.log1p().expm1().trunc());
    return c.sum(-1).add(r.sum(-1)).add(diag(e.sum(0)).sum()).add(e.select(1, 0).sum(-1, { keepdim: true }));
  }
}

/** Causal attention over a sequence whose length is symbolic when traced. */
export class CausalAttention extends nn.Module {
  forward(x: Tensor): Tensor { return F.scaledDotProductAttention(x, x, x, { isCausal: true }); }
}
/** topk and sort along a static dim with a symbolic batch. */
export class TopSort extends nn.Module {
  forward(x: Tensor): Tensor { return topk(x, 2)[0].add(sort(x, { dim: 1 })[0].sum(1, { keepdim: true })); }
}
/** Replicate padding and bilinear resizing with a symbolic batch. */
export class PadResize extends nn.Module {
  forward(x: Tensor): Tensor { return F.interpolate(F.pad(x, [1, 1, 1, 1], { mode: 'replicate' }), { scaleFactor: 2, mode: 'bilinear' }); }
}
