// The WebAssembly primitives beyond the forward products (gemm, conv2d): elementwise maps (exp,
// sigmoid and tanh among them), sums, max/min reductions, batch norm (forward and backward), max
// pool, the Adam update, conv2d's Winograd weight gradient and the int8 quantized linear, one factory per
// file beside this one. fastPrimitives() (primitives.ts) spreads them into the CpuPrimitives.
// Invariant: each takes its fallback from ir-spec's REFERENCE_PRIMITIVES, so adding one here never
// changes what the JavaScript-only build computes.

import type { CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { wasmMapBinary, wasmMapTernary, wasmMapUnary } from './elementwise.js';
import { wasmBatchNormAffine, wasmBatchNormStats, wasmSum } from './reduce.js';
import { wasmMaxPool } from './pool.js';
import { wasmAdamStep } from './optim.js';
import { wasmConv2dWeightGrad } from './winograd-grad.js';
import { wasmQuantizedLinear } from './qlinear.js';
import { wasmMapMath } from './math.js';
import { wasmBatchNormBackward } from './norm-backward.js';
import { wasmExtreme } from './extreme.js';

export function wasmOps(heap: WasmHeap): Omit<CpuPrimitives, 'gemm' | 'conv2d'> {
  return {
    mapBinary: wasmMapBinary(heap), mapUnary: wasmMapMath(heap, wasmMapUnary(heap)), mapTernary: wasmMapTernary(heap),
    sum: wasmSum(heap), extreme: wasmExtreme(heap), batchNormStats: wasmBatchNormStats(heap), batchNormAffine: wasmBatchNormAffine(heap),
    batchNormBackward: wasmBatchNormBackward(heap),
    maxPool: wasmMaxPool(heap), adamStep: wasmAdamStep(heap), conv2dWeightGrad: wasmConv2dWeightGrad(heap),
    quantizedLinear: wasmQuantizedLinear(heap),
  };
}
