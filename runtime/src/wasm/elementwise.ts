// The WebAssembly elementwise primitives (kernels in runtime/wasm/elementwise.ts) behind
// ir-spec's MapBinaryFn/MapUnaryFn/MapTernaryFn: float32 add/sub/mul/div, the six comparisons and
// relu, with broadcasting over up to three coalesced dims, and where() over full-size or scalar
// operands. Anything else — other ops, int/bool inputs,
// broadcasts that coalesce to more dims, tensors below MIN_ELEMENTS (where copying in and out of
// the kernel memory costs more than the loop) — runs ir-spec's JavaScript loops.
// Invariant: results are bit-identical to ir-spec's loops (runtime/wasm/elementwise.ts says why).

import { broadcastStrides, numel, REFERENCE_PRIMITIVES, type CpuTensor, type MapBinaryFn, type MapTernaryFn, type MapUnaryFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';

/**
 * Below this many output elements the JavaScript loops run. Measured in Node 20 (µs, JS/wasm,
 * copies included; [16, n/16] operands): mul 2.2/2.9 at 1024, 4.0/3.6 at 2048, 7.6/5.2 at 4096;
 * add with a per-row bias 3.1/2.7, 5.2/3.1, 9.7/4.4; relu and last-dim sum alike — the kernels
 * win from about 1–2 K elements, and copying dominates below.
 */
export const MIN_ELEMENTS = 2048;

const ARITH = new Map([['add', 0], ['sub', 1], ['mul', 2], ['div', 3]]);
const COMPARE = new Map([['eq', 0], ['ne', 1], ['lt', 2], ['le', 3], ['gt', 4], ['ge', 5]]);

/** [d0, d1, d2] and each input's strides per dim after merging dims mapBinary would merge; null past 3 dims. */
function coalesce(a: readonly number[], b: readonly number[], out: readonly number[]): { dims: number[]; as: number[]; bs: number[] } | null {
  const sA = broadcastStrides(a, out), sB = broadcastStrides(b, out);
  const dims: number[] = [], as: number[] = [], bs: number[] = [];
  for (let d = 0; d < out.length; d++) {
    const size = out[d], k = dims.length - 1;
    if (size === 1) continue;
    if (k >= 0 && as[k] === sA[d] * size && bs[k] === sB[d] * size) { dims[k] *= size; as[k] = sA[d]; bs[k] = sB[d]; }
    else { dims.push(size); as.push(sA[d]); bs.push(sB[d]); }
  }
  if (dims.length > 3) return null;
  while (dims.length < 3) { dims.unshift(1); as.unshift(0); bs.unshift(0); }
  return { dims, as, bs };
}

export function wasmMapBinary(heap: WasmHeap): MapBinaryFn {
  return (op, a, b, outShape, outDtype, f, row, into) => {
    const arith = ARITH.get(op), cmp = COMPARE.get(op);
    const n = numel(outShape);
    const plan = (arith !== undefined || cmp !== undefined) && n >= MIN_ELEMENTS && a.dtype === 'float32' && b.dtype === 'float32'
      ? coalesce(a.shape, b.shape, outShape) : null;
    if (!plan) return REFERENCE_PRIMITIVES.mapBinary(op, a, b, outShape, outDtype, f, row, into);
    const A = a.data as Float32Array, B = b.data as Float32Array;
    const bool = cmp !== undefined;
    const io = new KernelIO(heap);
    try {
      const pa = io.in(A), pb = io.in(B);
      const { dims: [d0, d1, d2], as, bs } = plan;
      const args = [d0, d1, d2, pa, as[0], as[1], as[2], pb, bs[0], bs[1], bs[2]] as const;
      let data: Float32Array | Uint8Array;
      if (bool) {
        data = into instanceof Uint8Array ? into : new Uint8Array(n);
        const po = io.out(n, data);
        heap.k.compareF32(cmp, ...args, po);
        io.copyOut(po, data);
      } else {
        const out = into instanceof Float32Array ? into : undefined, po = io.out(n * 4, out);
        heap.k.binaryF32(arith!, ...args, po);
        data = io.f32(po, n, out);
      }
      return { data, shape: outShape, dtype: outDtype } satisfies CpuTensor;
    } finally {
      io.free();
    }
  };
}

export function wasmMapUnary(heap: WasmHeap): MapUnaryFn {
  return (op, x, outDtype, f, loop, into) => {
    if (op !== 'relu' || x.dtype !== 'float32' || x.data.length < MIN_ELEMENTS) return REFERENCE_PRIMITIVES.mapUnary(op, x, outDtype, f, loop, into);
    const n = x.data.length, io = new KernelIO(heap), out = into instanceof Float32Array ? into : undefined;
    try {
      const px = io.in(x.data as Float32Array), po = io.out(n * 4, out);
      heap.k.reluF32(n, px, po);
      return { data: io.f32(po, n, out), shape: x.shape, dtype: outDtype };
    } finally {
      io.free();
    }
  };
}

export function wasmMapTernary(heap: WasmHeap): MapTernaryFn {
  return (op, c, a, b, outShape, outDtype, f, into) => {
    const n = numel(outShape);
    const fits = (t: CpuTensor) => t.data.length === n || t.data.length === 1;
    if (op !== 'where' || n < MIN_ELEMENTS || c.dtype !== 'bool' || a.dtype !== 'float32' || b.dtype !== 'float32' || !fits(c) || !fits(a) || !fits(b)) {
      return REFERENCE_PRIMITIVES.mapTernary(op, c, a, b, outShape, outDtype, f, into);
    }
    const A = a.data as Float32Array, B = b.data as Float32Array, io = new KernelIO(heap), out = into instanceof Float32Array ? into : undefined;
    try {
      const pc = io.in(c.data as Uint8Array), pa = io.in(A), pb = io.in(B), po = io.out(n * 4, out);
      heap.k.whereF32(n, pc, c.data.length === n ? 1 : 0, pa, A.length === n ? 1 : 0, pb, B.length === n ? 1 : 0, po);
      return { data: io.f32(po, n, out), shape: outShape, dtype: outDtype };
    } finally {
      io.free();
    }
  };
}
