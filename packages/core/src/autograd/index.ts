// The `autograd` namespace (torch.autograd).
export { grad, type BackwardOptions } from './engine.js';
export { Node } from './node.js';
export { noGrad, enableGrad, inferenceMode } from './grad-mode.js';

import { runBackward, seedFor } from './engine.js';
import type { Tensor } from '../tensor.js';
import type { Node as GraphNode } from './node.js';

/** Backward from several outputs at once (torch.autograd.backward). */
export function backward(outputs: Tensor[], gradOutputs?: (Tensor | null)[], opts: { retainGraph?: boolean; createGraph?: boolean } = {}): void {
  runBackward(outputs, outputs.map((o, i) => seedFor(o, gradOutputs?.[i] ?? null, 'autograd.backward')), opts);
}

/**
 * How many distinct tensors the graph behind `outputs` keeps for backward — a debugging aid to
 * see what a model costs in activation memory (e.g. with and without utils.checkpoint).
 * @example autograd.savedTensorCount(model.forward(x).sum())
 */
export function savedTensorCount(...outputs: Tensor[]): number {
  const seen = new Set<GraphNode>(), saved = new Set<Tensor>();
  const stack = outputs.flatMap((o) => (o.gradFn ? [o.gradFn] : []));
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    for (const t of n.savedTensors()) saved.add(t);
    for (const e of n.edges) if (e && 'node' in e) stack.push(e.node);
  }
  return saved.size;
}
