// PyTorch 1.13 parity of the tensor ops and F functions of issue #22 (part A): every case of
// tests/golden-kiln/ops_api/*.json (written by scripts/golden/ops_api.py) runs here by name —
// outputs, and the input gradients of sum(output_i · grad_output_i). A case with no runner, or
// a runner with no case, fails. Tie order (sort, argsort, topk): stable, lower index first.

import { describe, it, expect } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  F, autograd, tensor, mul, floor, ceil, round, trunc, log1p, expm1, isnan, isfinite, isclose, allclose, cumprod,
  cumsum, any, all, sort, argsort, topk, roll, flip, narrow, select, diag, outer, repeatInterleave, scatter,
  scatterReduce, nonzero, einsum, linspace, eye, zerosLike, onesLike, fullLike, type Tensor,
} from '@kiln/core';
import { fromGolden, expectClose, type GoldenTensor, type Tol } from './parity/golden.js';

const DIR = fileURLToPath(new URL('./golden-kiln/ops_api/', import.meta.url));

interface Case {
  name: string;
  inputs: GoldenTensor[];
  outputs: GoldenTensor[];
  grad_outputs?: (GoldenTensor | null)[];
  grads?: (GoldenTensor | null)[];
  tol?: Tol;
}
interface File { group: string; torch_version: string; default_tol: Tol; masks: Record<string, GoldenTensor>; cases: Case[] }

type Out = Tensor | Tensor[] | boolean;
type Runner = (xs: Tensor[], file: File) => Out;
const i32 = (v: number[], shape?: number[]) => tensor(v, { dtype: 'int32', shape });

const RUNNERS: Record<string, Runner> = {
  // elementwise
  ...Object.fromEntries(['floor', 'ceil', 'round', 'trunc'].flatMap((n) => {
    const f = { floor, ceil, round: (x: Tensor) => round(x), trunc }[n]!;
    return [[`${n}_special`, ([x]: Tensor[]) => f(x)], [`${n}_grad`, ([x]: Tensor[]) => f(x)]];
  })),
  round_int: ([x]) => round(x),
  floor_int: ([x]) => floor(x),
  round_decimals: ([x]) => round(x, { decimals: 2 }),
  log1p_special: ([x]) => log1p(x),
  expm1_special: ([x]) => expm1(x),
  log1p_grad: ([x]) => x.log1p(),
  expm1_grad: ([x]) => x.expm1(),
  isnan: ([x]) => isnan(x),
  isfinite: ([x]) => isfinite(x),
  isfinite_int: ([x]) => x.isfinite(),
  isclose: ([a, b]) => isclose(a, b),
  isclose_tol: ([a, b]) => isclose(a, b, { rtol: 1e-2, atol: 1e-4 }),
  isclose_nan: ([a, b]) => isclose(a, b, { equalNan: true }),
  isclose_nan_default: ([a, b]) => a.isclose(b),
  allclose_true: ([a, b]) => allclose(a, b, { rtol: 1e-2 }),
  allclose_false: ([a, b]) => a.allclose(b),
  // reductions and scans
  cumprod_dim1_zeros: ([x]) => cumprod(x, 1),
  cumprod_dim0: ([x]) => x.cumprod(0),
  cumprod_negdim: ([x]) => cumprod(x, -1),
  cumprod_int: ([x]) => cumprod(x, 0),
  cumprod_empty: ([x]) => cumprod(x, 1),
  cumsum_negdim: ([x]) => cumsum(x, -2),
  any_all: ([x]) => any(x),
  all_all: ([x]) => x.all(),
  any_dim1: ([x]) => x.any(1),
  all_dim0: ([x]) => all(x, 0),
  all_negdim_keepdim: ([x]) => all(x, -1, { keepdim: true }),
  any_bool: ([x]) => any(x, 0),
  any_empty: ([x]) => any(x),
  all_empty: ([x]) => all(x),
  // sorting
  sort_ties_asc: ([x]) => sort(x, { dim: -1 }),
  sort_ties_desc: ([x]) => x.sort({ dim: 1, descending: true }),
  sort_dim0: ([x]) => sort(x, { dim: 0 }),
  sort_3d_mid: ([x]) => sort(x, { dim: 1, descending: true }),
  sort_nan: ([x]) => sort(x),
  sort_nan_desc: ([x]) => sort(x, { descending: true }),
  sort_int: ([x]) => sort(x),
  sort_empty: ([x]) => sort(x, { dim: 0 }),
  argsort_ties: ([x]) => argsort(x, { dim: -1 }),
  argsort_desc: ([x]) => x.argsort({ dim: 0, descending: true }),
  topk_largest: ([x]) => topk(x, 3),
  topk_smallest_dim0: ([x]) => x.topk(2, { dim: 0, largest: false }),
  topk_k0: ([x]) => topk(x, 0),
  topk_ties_values: ([x]) => topk(x, 4)[0],
  // shape and indexing
  roll_flat: ([x]) => roll(x, 5),
  roll_dims: ([x]) => x.roll([1, -2], [0, 1]),
  roll_negdim: ([x]) => roll(x, -7, -1),
  flip_dims: ([x]) => flip(x, [0, -1]),
  narrow: ([x]) => narrow(x, 1, 1, 2),
  narrow_neg: ([x]) => x.narrow(-1, -3, 3),
  select: ([x]) => select(x, 1, 2),
  select_neg: ([x]) => x.select(-1, -1),
  diag_vec: ([x]) => diag(x),
  diag_vec_k1: ([x]) => x.diag(1),
  diag_vec_km2: ([x]) => diag(x, -2),
  diag_mat: ([x]) => diag(x),
  diag_mat_k1: ([x]) => diag(x, 1),
  diag_mat_km1: ([x]) => diag(x, -1),
  outer: ([a, b]) => outer(a, b),
  repeat: ([x]) => x.repeat(2, 1, 3),
  repeat_interleave_int: ([x]) => repeatInterleave(x, 2, 1),
  repeat_interleave_list: ([x]) => x.repeatInterleave(i32([1, 0, 3]), 0),
  repeat_interleave_flat: ([x]) => repeatInterleave(x, 2),
  scatter_src: ([x, s]) => scatter(x, 1, i32([0, 2, 1, 2, 0, 3], [2, 3]), s),
  scatter_value: ([x]) => x.scatter(1, i32([0, 2, 1, 2, 0, 3], [2, 3]), 2.5),
  scatter_dim0: ([x, s]) => scatter(x, 0, i32([1, 0, 2, 1], [1, 4]), s),
  ...Object.fromEntries((['sum', 'mean', 'prod', 'amax', 'amin'] as const).flatMap((red) => [true, false].map((inc) => [
    `scatter_reduce_${red}_${inc ? 'self' : 'noself'}`,
    ([x, s]: Tensor[]) => scatterReduce(x, 1, i32([0, 2, 0, 1, 2, 2, 3, 3], [2, 4]), s, red, { includeSelf: inc }),
  ]))),
  scatter_reduce_add_arg: ([x, s]) => scatter(x, 1, i32([0, 2, 0, 1, 2, 2, 3, 3], [2, 4]), s, { reduce: 'add' }),
  scatter_reduce_multiply_arg: ([x]) => x.scatter(1, i32([0, 2, 0, 1, 2, 2, 3, 3], [2, 4]), 1.5, { reduce: 'multiply' }),
  scatter_reduce_amax_ties: ([x, s]) => x.scatterReduce(1, i32([0, 2, 0, 1, 2, 2, 3, 3], [2, 4]), s, 'amax'),
  scatter_reduce_prod_dim0: ([x, s]) => scatterReduce(x, 0, i32([1, 0, 1, 1, 2, 0], [2, 3]), s, 'prod', { includeSelf: false }),
  scatter_reduce_amin_int: ([x, s]) => scatterReduce(x, 1, i32([0, 2, 0, 1, 2, 2, 3, 3], [2, 4]), s, 'amin'),
  nonzero_2d: ([x]) => nonzero(x),
  nonzero_1d: ([x]) => x.nonzero(),
  nonzero_3d_bool: ([x]) => nonzero(x),
  nonzero_none: ([x]) => nonzero(x),
  // einsum
  einsum_mm: ([a, b]) => einsum('ij,jk->ik', a, b),
  einsum_bmm: ([a, b]) => einsum('bij,bjk->bik', a, b),
  einsum_attention: ([q, k]) => einsum('bhqd,bhkd->bhqk', q, k),
  einsum_trace: ([a]) => einsum('ii', a),
  einsum_diag: ([a]) => einsum('ii->i', a),
  einsum_outer: ([a, b]) => einsum('i,j->ij', [a, b]),
  einsum_transpose: ([a]) => einsum('ijk->kji', a),
  einsum_implicit: ([a, b]) => einsum('ij,jk', a, b),
  einsum_three: ([a, b, c]) => einsum('ij,jk,kl->il', a, b, c),
  einsum_sum_all: ([a]) => einsum('ij->', a),
  einsum_broadcast_batch: ([a, b]) => einsum('bij,bjk->bik', a, b),
  einsum_early_sum: ([a, b]) => einsum('ij,jk->i', a, b),
  einsum_mixed: ([a, b]) => einsum('abc,cad->bd', a, b),
  einsum_bilinear: ([a, w, b]) => einsum('bi,oij,bj->bo', a, w, b),
  // creation
  linspace_5: () => linspace(-1, 2, 5),
  linspace_7: () => linspace(0.1, 0.7, 7),
  linspace_1: () => linspace(3, 5, 1),
  linspace_0: () => linspace(3, 5, 0),
  eye_3: () => eye(3),
  eye_2x4: () => eye(2, 4),
  zeros_like: ([x]) => zerosLike(x),
  ones_like_int: ([x]) => onesLike(x),
  full_like: ([x]) => fullLike(x, 2.5),
  // F
  pad_constant_2d: ([x]) => F.pad(x, [1, 2, 0, 1], { value: 0.5 }),
  pad_constant_neg: ([x]) => F.pad(x, [-1, 2, 1, -2]),
  pad_constant_3dims: ([x]) => F.pad(x, [1, 0, 0, 1, 2, 0]),
  pad_reflect_1d: ([x]) => F.pad(x, [2, 3], { mode: 'reflect' }),
  pad_reflect_2d: ([x]) => F.pad(x, [1, 2, 3, 1], { mode: 'reflect' }),
  pad_replicate_1d: ([x]) => F.pad(x, [3, 1], { mode: 'replicate' }),
  pad_replicate_2d: ([x]) => F.pad(x, [2, 0, 1, 3], { mode: 'replicate' }),
  pad_circular_2d: ([x]) => F.pad(x, [1, 2, 2, 1], { mode: 'circular' }),
  interp_nearest_scale2: ([x]) => F.interpolate(x, { scaleFactor: 2, mode: 'nearest' }),
  interp_nearest_size: ([x]) => F.interpolate(x, { size: [5, 3] }),
  interp_nearest_scale_frac: ([x]) => F.interpolate(x, { scaleFactor: 1.7 }),
  interp_nearest_1d: ([x]) => F.interpolate(x, { size: 9 }),
  interp_bilinear_scale2: ([x]) => F.interpolate(x, { scaleFactor: 2, mode: 'bilinear', alignCorners: false }),
  interp_bilinear_size_ac: ([x]) => F.interpolate(x, { size: [5, 7], mode: 'bilinear', alignCorners: true }),
  interp_bilinear_down: ([x]) => F.interpolate(x, { size: [2, 3], mode: 'bilinear' }),
  interp_bilinear_scale_frac: ([x]) => F.interpolate(x, { scaleFactor: [1.5, 0.6], mode: 'bilinear' }),
  interp_linear_ac: ([x]) => F.interpolate(x, { size: 10, mode: 'linear', alignCorners: true }),
  interp_linear: ([x]) => F.interpolate(x, { scaleFactor: 1.5, mode: 'linear' }),
  interp_bicubic_scale2: ([x]) => F.interpolate(x, { scaleFactor: 2, mode: 'bicubic', alignCorners: false }),
  interp_bicubic_size_ac: ([x]) => F.interpolate(x, { size: [5, 7], mode: 'bicubic', alignCorners: true }),
  interp_bicubic_down: ([x]) => F.interpolate(x, { size: [3, 4], mode: 'bicubic' }),
  interp_nearest_exact: ([x]) => F.interpolate(x, { size: [5, 7], mode: 'nearest-exact' }),
  interp_nearest_exact_down: ([x]) => F.interpolate(x, { scaleFactor: 0.5, mode: 'nearest-exact' }),
  interp_area_down: ([x]) => F.interpolate(x, { size: [2, 3], mode: 'area' }),
  interp_area_1d: ([x]) => F.interpolate(x, { scaleFactor: 0.5, mode: 'area' }),
  interp_trilinear: ([x]) => F.interpolate(x, { size: [3, 4, 5], mode: 'trilinear' }),
  normalize_default: ([x]) => F.normalize(x),
  normalize_p1_dim: ([x]) => F.normalize(x, { p: 1, dim: -1 }),
  normalize_zero_row: ([x]) => F.normalize(x, { dim: 1 }),
  one_hot: ([x]) => F.oneHot(x),
  one_hot_classes: ([x]) => F.oneHot(x, 5),
  cosine_similarity: ([a, b]) => F.cosineSimilarity(a, b),
  cosine_similarity_bcast: ([a, b]) => F.cosineSimilarity(a, b, { dim: -1 }),
  glu: ([x]) => F.glu(x),
  glu_dim0: ([x]) => F.glu(x, 0),
  pixel_shuffle: ([x]) => F.pixelShuffle(x, 2),
  pixel_unshuffle: ([x]) => F.pixelUnshuffle(x, 2),
  unfold: ([x]) => F.unfold(x, 2),
  unfold_opts: ([x]) => F.unfold(x, [2, 3], { dilation: [1, 2], padding: 1, stride: [2, 1] }),
  fold: ([x]) => F.fold(x, [4, 5], 2),
  fold_opts: ([x]) => F.fold(x, [5, 6], [2, 3], { dilation: [1, 2], padding: 1, stride: [2, 1] }),
  embedding: ([w]) => F.embedding(i32([1, 3, 0, 3], [2, 2]), w),
  embedding_padding: ([w]) => F.embedding(i32([1, 3, 0, 2], [2, 2]), w, { paddingIdx: 3 }),
  group_norm: ([x, w, b]) => F.groupNorm(x, 2, { weight: w, bias: b }),
  instance_norm: ([x]) => F.instanceNorm(x),
  sdpa: ([q, k, v]) => F.scaledDotProductAttention(q, k, v),
  sdpa_causal: ([q, k, v]) => F.scaledDotProductAttention(q, k, v, { isCausal: true }),
  sdpa_bool_mask: ([q, k, v], f) => F.scaledDotProductAttention(q, k, v, { attnMask: fromGolden(f.masks.sdpa_bool_mask) }),
  sdpa_float_mask_scale: ([q, k, v], f) => F.scaledDotProductAttention(q, k, v, { attnMask: fromGolden(f.masks.sdpa_float_mask_scale), scale: 0.3 }),
};

const files: File[] = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort()
  .map((f) => JSON.parse(readFileSync(DIR + f, 'utf8')) as File);

describe('ops_api golden files (PyTorch 1.13)', () => {
  it('has a runner for every case and a case for every runner', () => {
    const names = files.flatMap((f) => f.cases.map((c) => c.name));
    expect(names.filter((n) => !(n in RUNNERS))).toEqual([]);
    expect(Object.keys(RUNNERS).filter((n) => !names.includes(n))).toEqual([]);
    expect(files.every((f) => f.torch_version.startsWith('1.13'))).toBe(true);
  });

  for (const file of files) {
    describe(file.group, () => {
      for (const c of file.cases) {
        it(c.name, () => {
          const tol = c.tol ?? file.default_tol;
          const wantGrads = c.grads ?? [];
          const xs = c.inputs.map((g, i) => fromGolden(g, { requiresGrad: !!wantGrads[i] }));
          const raw = RUNNERS[c.name](xs, file);
          const outs = typeof raw === 'boolean' ? [tensor(raw)] : Array.isArray(raw) ? raw : [raw];
          expect(outs.length, `${c.name}: number of outputs`).toBe(c.outputs.length);
          outs.forEach((o, j) => expectClose(o, c.outputs[j], tol, `${c.name} output ${j}`));
          if (!c.grad_outputs) return;
          const terms = outs.flatMap((o, j) => (c.grad_outputs![j] ? [mul(o, fromGolden(c.grad_outputs![j]!)).sum()] : []));
          const loss = terms.reduce((a, b) => a.add(b));
          const leaves = xs.filter((_, i) => wantGrads[i]);
          const grads = autograd.grad(loss, leaves, { allowUnused: true });
          let k = 0;
          xs.forEach((x, i) => {
            if (!wantGrads[i]) return;
            const g = grads[k++] ?? zerosLike(x);
            expectClose(g, wantGrads[i]!, tol, `${c.name} grad of input ${i}`);
          });
        });
      }
    });
  }
});
