// An LSTM tagger: a two-layer LSTM (batch first) over a sequence, its last hidden state added to
// every step, then a linear head per step. The sequence length T is symbolic like the batch N.
import { nn, type Tensor } from 'kiln';

export class LstmTagger extends nn.Module {
  lstm = new nn.LSTM(6, 8, { batchFirst: true, numLayers: 2 });
  head = new nn.Linear(8, 3);

  forward(x: Tensor): Tensor {
    const [out, state] = this.lstm.forward(x);
    const last = state[0].sum(0);
    return this.head.forward(out.add(last.unsqueeze(1)));
  }
}

export const inputs = { x: 'f32[N,T,6]' };

export default new LstmTagger();
