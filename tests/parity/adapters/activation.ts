// Golden 'activation' cases → Kiln calls. See ../adapter.ts for the contract.
// attrs carry PyTorch's keyword arguments (snake_case); absent ones take F's defaults.
import { F } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

export const adapters: AdapterTable = {
  relu: ([x]) => F.relu(x),
  leaky_relu: ([x], a) => F.leakyRelu(x, a.negative_slope),
  sigmoid: ([x]) => F.sigmoid(x),
  tanh: ([x]) => F.tanh(x),
  gelu: ([x], a) => F.gelu(x, { approximate: a.approximate }),
  softplus: ([x], a) => F.softplus(x, { beta: a.beta, threshold: a.threshold }),
  silu: ([x]) => F.silu(x),
  elu: ([x], a) => F.elu(x, a.alpha),
  relu6: ([x]) => F.relu6(x),
  hardtanh: ([x], a) => F.hardtanh(x, a.min_val, a.max_val),
  hardsigmoid: ([x]) => F.hardsigmoid(x),
  hardswish: ([x]) => F.hardswish(x),
  mish: ([x]) => F.mish(x),
  logsigmoid: ([x]) => F.logsigmoid(x),
  softsign: ([x]) => F.softsign(x),
  prelu: ([x, w]) => F.prelu(x, w),
  dropout: ([x], a) => F.dropout(x, { p: a.p, training: a.training }),
};
