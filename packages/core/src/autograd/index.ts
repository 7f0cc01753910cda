// The `autograd` namespace (torch.autograd).
export { grad, type BackwardOptions } from './engine.js';
export { Node } from './node.js';
export { noGrad, enableGrad, inferenceMode } from './grad-mode.js';

import { runBackward, seedFor } from './engine.js';
import type { Tensor } from '../tensor.js';

/** Backward from several outputs at once (torch.autograd.backward). */
export function backward(outputs: Tensor[], gradOutputs?: (Tensor | null)[], opts: { retainGraph?: boolean; createGraph?: boolean } = {}): void {
  runBackward(outputs, outputs.map((o, i) => seedFor(o, gradOutputs?.[i] ?? null, 'autograd.backward')), opts);
}
