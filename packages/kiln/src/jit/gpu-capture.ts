// Capturing a model whose tensors live on WebGPU: the scripter and the tracer read tensors' types
// and run ops on example values, which for GPU tensors would mean waiting for the GPU. For the
// length of the capture, every GPU parameter and buffer of the module reads as a CPU tensor of
// zeros (its storage swapped, the tensor object kept, so the graph's sources name the real
// tensors) and GPU arguments are passed as CPU zeros of the same shape, dtype and requiresGrad.
// Invariant: every swapped storage is put back before this returns or throws, and nothing
// captured depends on the stand-ins' values (a trace that branched on them warns, and is refused).

import { Tensor, zeros } from '@kiln/core';
import type { Target } from './compile-capture.js';

/** Runs `capture` on CPU stand-ins when `target` is given (a call on WebGPU), else on `args` as they are. */
export function onCpuPlaceholders<T>(target: Target | undefined, args: readonly unknown[], capture: (args: unknown[]) => T): T {
  if (!target) return capture([...args]);
  const swapped = new Map<Tensor, Tensor['_storage']>();
  if (target.kind === 'module') {
    for (const [, t] of [...target.module.namedParameters(), ...target.module.namedBuffers()]) {
      if (t.device !== 'webgpu' || swapped.has(t)) continue;
      swapped.set(t, t._storage);
      t._storage = { data: zeros(t.shape, { dtype: t.dtype }).data, version: t._storage.version };
    }
  }
  try {
    return capture(args.map((a) => (a instanceof Tensor && a.device === 'webgpu' ? standIn(a) : a)));
  } finally {
    for (const [t, s] of swapped) t._storage = s;
  }
}

function standIn(a: Tensor): Tensor {
  const z = zeros(a.shape, { dtype: a.dtype });
  return a.requiresGrad ? z.requiresGrad_(true) : z;
}
