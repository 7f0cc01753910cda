// CLI fixture: an LSTM tagger over [N, T, 6] whose input type names both N and T, so the
// compiled graph (scripted or traced) has a symbolic sequence length and loops over it.
import { nn, type Tensor } from 'kiln';

export class SequenceTagger extends nn.Module {
  lstm = new nn.LSTM(6, 8, { batchFirst: true });
  head = new nn.Linear(8, 3);
  forward(x: Tensor): Tensor {
    const [out] = this.lstm.forward(x);
    return this.head.forward(out);
  }
}

export const inputs = ['x:f32[N,T,6]'];
