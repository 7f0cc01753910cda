// The WebAssembly Adam/AdamW update (kernel in runtime/wasm/optim.ts) behind ir-spec's adamStep,
// for parameters of at least MIN_ELEMENTS; smaller ones run the reference loop (copying the
// state in and out costs more there).
// Invariant: bit-identical to ir-spec's adamStep.

import { REFERENCE_PRIMITIVES, type CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { MIN_ELEMENTS } from './elementwise.js';

export function wasmAdamStep(heap: WasmHeap): CpuPrimitives['adamStep'] {
  return (p, g, m, v, vmax, s) => {
    const n = p.length;
    if (n < MIN_ELEMENTS) { REFERENCE_PRIMITIVES.adamStep(p, g, m, v, vmax, s); return; }
    const at = heap.alloc(n * 4 * (vmax ? 5 : 4));
    const [pp, pg, pm, pv] = [0, 1, 2, 3].map((i) => at + i * n * 4), pvm = vmax ? at + 4 * n * 4 : 0;
    try {
      const f = heap.f32();
      f.set(p, pp >> 2); f.set(g, pg >> 2); f.set(m, pm >> 2); f.set(v, pv >> 2);
      if (vmax) f.set(vmax, pvm >> 2);
      heap.k.adamStep(n, pp, pg, pm, pv, pvm, s.shrink, s.sign, s.l2, s.beta1, s.beta2, s.stepSize, s.bc2Sqrt, s.eps);
      const out = heap.f32();
      p.set(out.subarray(pp >> 2, (pp >> 2) + n));
      m.set(out.subarray(pm >> 2, (pm >> 2) + n));
      v.set(out.subarray(pv >> 2, (pv >> 2) + n));
      if (vmax) vmax.set(out.subarray(pvm >> 2, (pvm >> 2) + n));
    } finally {
      heap.free(at);
    }
  };
}
