// Op family 'random': `uniform` (samples in [0, 1)) and `normal` (standard normal), float32,
// shaped by a `shape` attribute (dims may be symbolic) or like an input `like` (only its shape
// is read). Invariant: the kernels draw from the generator in the kernel context, one value per
// element in row-major order, exactly as eager `rand`/`randn` do — so a graph run on kiln's
// default generator reproduces eager's numbers for the same seed. Both entries are marked
// `random`: passes never merge, fold or drop them, and every run draws anew. Training-mode
// dropout is a composite over `uniform` (packages/core F.dropout). Codegen has no WGSL for them:
// the WebGPU device draws them on the host from the run's generator and uploads the sample.

import * as z from 'zod';
import { defineOp, outputBuffer, type CpuTensor, type KernelContext } from '../op-def.js';
import { fmtShape, numel, OpError, type Dim, type TensorType } from '../shape.js';
import { canonicalDim, DimError } from '../ir/dims.js';
import type { RandomSource } from '../random.js';

const attrs = z.object({ shape: z.array(z.union([z.number().int(), z.string()])).optional() }).strict();

function outType(op: string, like: TensorType | null, shape: readonly Dim[] | undefined): TensorType {
  if (like && shape) throw new OpError(op, `give either an input 'like' or a shape attribute, not both (shape ${fmtShape(shape)}, like ${fmtShape(like.shape)})`);
  if (like) return { dtype: 'float32', shape: like.shape };
  if (!shape) throw new OpError(op, "needs a shape attribute or an input 'like' whose shape it takes");
  const dims = shape.map((d) => {
    if (typeof d === 'number') {
      if (d < 0) throw new OpError(op, `invalid shape ${fmtShape(shape)}: sizes must be >= 0`);
      return d;
    }
    try {
      return canonicalDim(d);
    } catch (e) {
      if (e instanceof DimError) throw new OpError(op, `invalid dim in shape ${fmtShape(shape)}: ${e.message}`);
      throw e;
    }
  });
  return { dtype: 'float32', shape: dims };
}

function sample(op: string, like: CpuTensor | null, shape: readonly Dim[] | undefined, ctx: KernelContext | undefined, draw: (g: RandomSource) => number): CpuTensor[] {
  const t = outType(op, like, shape);
  if (!t.shape.every((d): d is number => typeof d === 'number')) throw new OpError(op, `the shape ${fmtShape(t.shape)} must be concrete when the kernel runs`);
  const g = ctx?.generator;
  if (!g) throw new OpError(op, 'a random op needs a generator to draw from; run it through the dispatch (eager) or a runtime Model, which pass one');
  const data = outputBuffer(ctx, 0, 'float32', numel(t.shape)) as Float32Array;
  for (let i = 0; i < data.length; i++) data[i] = draw(g);
  return [{ data, shape: t.shape, dtype: 'float32' }];
}

const HOST_DRAWN = 'no WGSL kernel: the WebGPU device draws the sample on the host from the same generator and uploads it';

export const uniform = defineOp({
  name: 'uniform',
  doc: `float32 samples uniform in [0, 1) (torch.rand), of shape attr 'shape' or of input 'like', drawn from the generator at run time; random: never folded or merged; ${HOST_DRAWN}`,
  inputs: ['like?'], attrs, random: true,
  infer([like], { shape }) { return [outType('uniform', like, shape)]; },
  cpu([like], { shape }, ctx) { return sample('uniform', like, shape, ctx, (g) => g.random()); },
  grad: null,
});

export const normal = defineOp({
  name: 'normal',
  doc: `float32 standard normal samples (torch.randn), of shape attr 'shape' or of input 'like', drawn from the generator at run time; random: never folded or merged; ${HOST_DRAWN}`,
  inputs: ['like?'], attrs, random: true,
  infer([like], { shape }) { return [outType('normal', like, shape)]; },
  cpu([like], { shape }, ctx) { return sample('normal', like, shape, ctx, (g) => g.normal()); },
  grad: null,
});
