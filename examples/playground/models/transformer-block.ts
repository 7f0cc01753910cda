// A transformer block written out: single-head self-attention (scores over T scaled by √d,
// softmax over the keys), a residual and LayerNorm, then a GELU feed-forward with its residual.
import { nn, type Tensor } from 'kiln';

export class TransformerBlock extends nn.Module {
  q = new nn.Linear(16, 16);
  k = new nn.Linear(16, 16);
  v = new nn.Linear(16, 16);
  norm = new nn.LayerNorm(16);
  ff = new nn.Sequential(new nn.Linear(16, 32), new nn.GELU(), new nn.Linear(32, 16));

  forward(x: Tensor): Tensor {
    const scores = this.q.forward(x).matmul(this.k.forward(x).transpose(1, 2)).div(4);
    const attended = scores.softmax(-1).matmul(this.v.forward(x));
    const h = this.norm.forward(x.add(attended));
    return h.add(this.ff.forward(h));
  }
}

export const inputs = { x: 'f32[N,T,16]' };

export default new TransformerBlock();
