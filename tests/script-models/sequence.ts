// Test models for symbolic dims beyond dim 0 (jit.script's and jit.trace's `dynamicAxes` over a
// sequence length T): an LSTM tagger (batchFirst) and a small attention block that multiplies
// over T, both written as ordinary eager modules.
import { cat, nn, type Tensor } from 'kiln';

/** LSTM (batchFirst, 2 layers) then a linear head on every step: [N, T, 6] → [N, T, 3]. */
export class LstmTagger extends nn.Module {
  lstm = new nn.LSTM(6, 8, { batchFirst: true, numLayers: 2 });
  head = new nn.Linear(8, 3);
  forward(x: Tensor): Tensor {
    const [out, state] = this.lstm.forward(x);
    const last = state[0].sum(0);
    return this.head.forward(out.add(last.unsqueeze(1)));
  }
}

/** Bidirectional GRU over sequence-first input [T, N, 5] with a given initial state. */
export class BiGru extends nn.Module {
  gru = new nn.GRU(5, 4, { bidirectional: true, numLayers: 2 });
  forward(x: Tensor, h0: Tensor): [Tensor, Tensor] {
    return this.gru.forward(x, h0);
  }
}

/**
 * A transformer-like block over [N, T, 16]: single-head self-attention written with matmul over
 * T (scores [N, T, T] scaled by √16, softmax over keys), a residual, LayerNorm and a feed-forward.
 */
export class TinyAttention extends nn.Module {
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

/** nn.MultiheadAttention (4 heads, batchFirst) self-attention over T, then a mean over T. */
export class MhaPool extends nn.Module {
  attn = new nn.MultiheadAttention(16, 4, { batchFirst: true });
  forward(x: Tensor): Tensor {
    const [y] = this.attn.forward(x, x, x, { needWeights: false });
    return y.add(x).mean(1);
  }
}

/** A loop of its own over T (x.shape[1] trips): the traced ops change with T, the scripted loop does not. */
export class DecayOverSteps extends nn.Module {
  forward(x: Tensor): Tensor {
    const step = x.sum(1);
    let acc = step.mul(0);
    for (let t = 0; t < x.shape[1]; t++) acc = acc.mul(0.5).add(step);
    return acc;
  }
}

/** A hand-written recurrence over T: step t read with x.slice(1, t, t + 1) in a loop up to x.shape[1]. */
export class HandRnn extends nn.Module {
  cell = new nn.Linear(12, 8);
  forward(x: Tensor): Tensor {
    let h = x.sum(1).slice(1, 0, 1).mul(0).expand([x.shape[0], 8]);
    for (let t = 0; t < x.shape[1]; t++) {
      const xt = x.slice(1, t, t + 1).squeeze(1);
      h = this.cell.forward(cat([xt, h], 1)).tanh();
    }
    return h;
  }
}

/** Reads two steps at a time (x.slice(1, t, t + 2)): a run-time slice length, which jit.script refuses. */
export class PairSteps extends nn.Module {
  forward(x: Tensor): Tensor {
    let acc = x.sum(1).mul(0);
    for (let t = 0; t < x.shape[1] - 1; t++) acc = acc.add(x.slice(1, t, t + 2).sum(1));
    return acc;
  }
}
