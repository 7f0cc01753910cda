// The WGSL kernel generator of every op that has one, keyed by op name (ONE entry per op; every
// elementwise entry gets the elementwise shell, derived from the registry). Ops whose entry
// says they are views (isViewOp) need no kernel on WebGPU. Invariant: no view op has a kernel
// here; tests/webgpu-ops.test.ts lists the registry ops with neither, so a new op without WGSL
// is visible.

import { avgPoolBackwardKernel, convWeightGradKernel, indexAddKernel, scatterAddKernel } from './backward.js';
import { conv2dKernel } from './conv.js';
import { convTransposeKernel } from './conv-transpose.js';
import { elementwiseKernel } from './elementwise.js';
import { fusedElementwiseKernel } from './epilogue.js';
import { argKernel, catKernel, cumsumKernel, expandKernel, flipKernel, gatherKernel, indexSelectKernel, permuteKernel, sliceBackwardKernel, sliceKernel, sortKernel, triangleKernel } from './layout.js';
import { FEW_ROWS, linearFewRowsKernel, matmulKernel } from './matmul.js';
import { batchNormBackwardKernel, batchNormKernel, batchNormStatsKernel } from './norm.js';
import { quantizedLinearKernel } from './quant.js';
import { maskedScatterKernel, maskedSelectKernel } from './masked.js';
import { avgPoolKernel, maxPoolKernel } from './pool.js';
import { REDUCERS, reduceKernel } from './reduce.js';
import type { KernelGen } from './shell.js';
import { elementwiseOps } from '@kiln/ir-spec';

export const KERNELS: Readonly<Record<string, KernelGen>> = {
  ...Object.fromEntries(elementwiseOps().map((d) => [d.name, elementwiseKernel])),
  ...Object.fromEntries(Object.keys(REDUCERS).map((op) => [op, reduceKernel])),
  matmul: matmulKernel,
  linear: matmulKernel,
  conv2d: conv2dKernel,
  max_pool2d: maxPoolKernel,
  adaptive_max_pool2d: maxPoolKernel,
  avg_pool2d: avgPoolKernel,
  adaptive_avg_pool2d: avgPoolKernel,
  batch_norm: batchNormKernel,
  fused_elementwise: fusedElementwiseKernel,
  fused_conv2d: conv2dKernel,
  fused_linear: matmulKernel,
  expand: expandKernel,
  permute: permuteKernel,
  flip: flipKernel,
  slice: sliceKernel,
  tril: triangleKernel,
  triu: triangleKernel,
  index_select: indexSelectKernel,
  gather: gatherKernel,
  cat: catKernel,
  argmax: argKernel,
  argmin: argKernel,
  cumsum: cumsumKernel,
  sort: sortKernel,
  slice_backward: sliceBackwardKernel,
  conv_transpose2d: convTransposeKernel,
  batch_norm_stats: batchNormStatsKernel,
  batch_norm_backward: batchNormBackwardKernel,
  index_add: indexAddKernel,
  scatter_add: scatterAddKernel,
  avg_pool2d_backward: avgPoolBackwardKernel,
  adaptive_avg_pool2d_backward: avgPoolBackwardKernel,
  conv2d_weight_grad: convWeightGradKernel,
  masked_scatter: maskedScatterKernel,
  masked_select: maskedSelectKernel,
  quantized_linear: quantizedLinearKernel,
};


/** Alternative kernels for few output rows (the runtime picks them per dispatch), by op. */
export const FEW_ROWS_KERNELS: Readonly<Record<string, { readonly maxRows: number; readonly gen: KernelGen }>> = {
  linear: { maxRows: FEW_ROWS, gen: linearFewRowsKernel },
  fused_linear: { maxRows: FEW_ROWS, gen: linearFewRowsKernel },
};
