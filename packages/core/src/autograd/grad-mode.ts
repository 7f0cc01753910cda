// Global autograd switches. Invariant: every mode change is scoped by a function call and
// restored in `finally`, so an exception never leaves grad mode flipped. The callbacks must be
// synchronous: a mode cannot follow an `await` (PyTorch's context managers have the same rule
// per thread).

let gradEnabled = true;
let inference = false;

export function isGradEnabled(): boolean { return gradEnabled; }
export function isInferenceMode(): boolean { return inference; }

function withMode<R>(grad: boolean, inf: boolean, fn: () => R): R {
  const [g, i] = [gradEnabled, inference];
  gradEnabled = grad;
  inference = inf;
  try {
    return fn();
  } finally {
    gradEnabled = g;
    inference = i;
  }
}

/** Runs `fn` without recording autograd history; returns what `fn` returns. */
export function noGrad<R>(fn: () => R): R { return withMode(false, inference, fn); }

/** Runs `fn` with autograd recording on, even inside `noGrad`. */
export function enableGrad<R>(fn: () => R): R { return withMode(true, inference, fn); }

/** Like `noGrad`, and tensors made inside are inference tensors: they can never join an
 * autograd graph later (an error says so), which lets kernels skip all bookkeeping. */
export function inferenceMode<R>(fn: () => R): R { return withMode(false, true, fn); }

/** Sets grad mode; returns the previous value (for frameworks that need unscoped control). */
export function setGradEnabled(on: boolean): boolean {
  const prev = gradEnabled;
  gradEnabled = on;
  return prev;
}
