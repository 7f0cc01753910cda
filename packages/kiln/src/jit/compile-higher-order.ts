// Higher-order gradients through a compiled graph (a backward with createGraph): the backward
// graph runs in the runtime, whose results carry no autograd history, so such a backward runs
// the forward again eagerly and differentiates that with autograd (createGraph), with one
// warning per model. The re-run draws from the generator state the compiled forward drew from
// (when the graph draws) and the module's buffers are put back after it, so it sees the forward's
// numbers and leaves nothing changed. Invariant: the gradients are eager autograd's for the same
// forward, given to the node's inputs once each (an input passed twice gets it at its first edge).

import { autograd, defaultGenerator, nn, Tensor, trace as tracer } from '@kiln/core';

const warned = new Set<string>();

/** What a compiled call keeps for an eager re-run of its forward. */
export interface EagerForward {
  /** Runs the module's (or function's) own forward on the call's arguments. */
  readonly run: () => unknown;
  /** The module, whose buffers are put back after the re-run (training-mode batch norms update them). */
  readonly module?: nn.Module;
  /** The generator's state when the compiled forward ran, when its graph draws. */
  readonly rng?: ReturnType<typeof defaultGenerator.getState>;
}

/**
 * The node's input gradients (one per `inputs` entry; null where `wanted` is false) for
 * `gradOutputs` of the compiled outputs `outs` (laid out in the call's result `result`),
 * computed through an eager re-run of the forward with createGraph.
 */
export function eagerHigherOrder(name: string, forward: EagerForward, result: unknown, outs: readonly Tensor[], gradOutputs: readonly (Tensor | null)[],
  inputs: readonly Tensor[], wanted: readonly boolean[]): (Tensor | null)[] {
  if (!warned.has(name)) {
    warned.add(name);
    console.warn(`jit.compile(${name}): higher-order gradients (createGraph) through a compiled graph run the forward again eagerly for that backward`);
  }
  const restore = tracer.snapshotState(forward.module); // the buffers and the generator as they are now
  let again: unknown;
  try {
    if (forward.rng) defaultGenerator.setState(forward.rng);
    again = forward.run();
  } finally {
    restore();
  }
  const eagerOuts: (Tensor | undefined)[] = outs.map(() => undefined);
  pair(result, again, outs, eagerOuts);
  const seeded = outs.flatMap((_, k) => (gradOutputs[k] && eagerOuts[k]?.requiresGrad ? [k] : []));
  const targets = inputs.flatMap((t, i) => (wanted[i] && t.requiresGrad && inputs.indexOf(t) === i ? [i] : []));
  const res: (Tensor | null)[] = inputs.map(() => null);
  if (!seeded.length || !targets.length) return res;
  const grads = autograd.grad(seeded.map((k) => eagerOuts[k]!), targets.map((i) => inputs[i]),
    { gradOutputs: seeded.map((k) => gradOutputs[k]), createGraph: true, allowUnused: true, stopAtInputs: true });
  targets.forEach((i, j) => { res[i] = grads[j]; });
  return res;
}

/** Fills `into[k]` with the eager result's tensor at the place the compiled result holds `outs[k]`. */
function pair(compiled: unknown, eager: unknown, outs: readonly Tensor[], into: (Tensor | undefined)[]): void {
  if (compiled instanceof Tensor) {
    const k = outs.indexOf(compiled);
    if (k >= 0 && eager instanceof Tensor && !into[k]) into[k] = eager;
  } else if (Array.isArray(compiled) && Array.isArray(eager)) {
    compiled.forEach((c, i) => pair(c, eager[i], outs, into));
  } else if (compiled && typeof compiled === 'object' && eager && typeof eager === 'object') {
    for (const key of Object.keys(compiled)) pair((compiled as Record<string, unknown>)[key], (eager as Record<string, unknown>)[key], outs, into);
  }
}
