#!/usr/bin/env python3
"""PyTorch 1.13 reference data for the tensor ops and F functions of issue #22 (part A).

Writes tests/golden-kiln/ops_api/<group>.json; tests/api-ops.test.ts runs the same cases on
Kiln by name. Each case: inputs, outputs, and for float inputs the gradients of
sum(output_i * grad_output_i) (grad_outputs are stored too). Run from the repository root:
    python3 scripts/golden/ops_api.py
Needs torch (Debian: python3-torch). Deterministic: every input comes from one seeded generator.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'tests', 'golden-kiln', 'ops_api')
torch.manual_seed(22)


def enc(v):
    if isinstance(v, float):
        if math.isnan(v):
            return 'NaN'
        if math.isinf(v):
            return 'Infinity' if v > 0 else '-Infinity'
        return float('%.9g' % v)  # 9 digits round-trip any float32
    return v


def ser(t):
    t = t.detach()
    if t.dtype == torch.bool:
        dt, data = 'bool', [int(v) for v in t.flatten().tolist()]
    elif t.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        dt, data = 'int64', [int(v) for v in t.flatten().tolist()]
    else:
        dt, data = 'float32', [enc(float(v)) for v in t.to(torch.float32).flatten().tolist()]
    return {'shape': list(t.shape), 'dtype': dt, 'data': data}


groups = {}


def case(group, name, fn, inputs, grad=True, tol=None, note=None):
    """Runs fn(*inputs); float inputs require grad when `grad`."""
    ins = [x.clone().requires_grad_(grad and x.dtype == torch.float32) if isinstance(x, torch.Tensor) else x for x in inputs]
    out = fn(*ins)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    outs = [o if isinstance(o, torch.Tensor) else torch.tensor(o) for o in outs]
    rec = {'name': name, 'inputs': [ser(x) for x in inputs], 'outputs': [ser(o) for o in outs]}
    diff = [o for o in outs if o.requires_grad]
    if grad and diff:
        gos = [torch.randn(o.shape) if o.requires_grad else None for o in outs]
        loss = sum((o * g).sum() for o, g in zip(outs, gos) if g is not None)
        leaves = [(i, x) for i, x in enumerate(ins) if isinstance(x, torch.Tensor) and x.requires_grad]
        gs = torch.autograd.grad(loss, [x for _, x in leaves], allow_unused=True)
        grads = [None] * len(ins)
        for (i, x), g in zip(leaves, gs):
            # allow_unused gives None for an input the loss does not depend on: zeros then.
            grads[i] = ser(g if g is not None else torch.zeros_like(x))
        rec['grad_outputs'] = [ser(g) if g is not None else None for g in gos]
        rec['grads'] = grads
    if tol:
        rec['tol'] = tol
    if note:
        rec['note'] = note
    groups.setdefault(group, []).append(rec)


def r(*shape):
    return torch.randn(*shape)


def ints(lo, hi, *shape):
    return torch.randint(lo, hi, shape)


# ---- elementwise -----------------------------------------------------------------------------
special = torch.tensor([-2.5, -1.5, -0.5, -0.49, 0.0, 0.5, 1.5, 2.5, 2.51, 3.7, -3.7, 1e-8, -1e-8, float('inf'), float('-inf'), float('nan')])
for fn in ['floor', 'ceil', 'round', 'trunc']:
    case('elementwise', f'{fn}_special', getattr(torch, fn), [special], grad=False)
    case('elementwise', f'{fn}_grad', getattr(torch, fn), [r(3, 4) * 3])
case('elementwise', 'round_int', torch.round, [ints(-5, 5, 6)], grad=False)
case('elementwise', 'floor_int', torch.floor, [ints(-5, 5, 6)], grad=False)
case('elementwise', 'round_decimals', lambda x: torch.round(x, decimals=2), [torch.tensor([1.2345, -2.345, 0.125, 10.0051])], grad=False)
small = torch.tensor([1e-10, -1e-10, 1e-6, -1e-6, 1e-3, 0.3, -0.3, 2.0, -0.9, 10.0, 0.0, float('inf')])
case('elementwise', 'log1p_special', torch.log1p, [small], grad=False)
case('elementwise', 'expm1_special', torch.expm1, [torch.tensor([1e-10, -1e-10, 1e-6, -1e-6, 1e-3, 0.3, -0.3, 2.0, -20.0, 10.0, 0.0, float('-inf')])], grad=False)
case('elementwise', 'log1p_grad', torch.log1p, [torch.rand(3, 4) * 3 - 0.5])
case('elementwise', 'expm1_grad', torch.expm1, [r(3, 4)])
nanny = torch.tensor([0.0, float('nan'), float('inf'), float('-inf'), -1.0, 3e38])
case('elementwise', 'isnan', torch.isnan, [nanny], grad=False)
case('elementwise', 'isfinite', torch.isfinite, [nanny], grad=False)
case('elementwise', 'isfinite_int', torch.isfinite, [ints(-3, 3, 4)], grad=False)
a = r(3, 4)
b = a + torch.tensor([0.0, 1e-6, 1e-3, 1.0]) * a.abs()
case('elementwise', 'isclose', torch.isclose, [a, b], grad=False)
case('elementwise', 'isclose_tol', lambda x, y: torch.isclose(x, y, rtol=1e-2, atol=1e-4), [a, b], grad=False)
case('elementwise', 'isclose_nan', lambda x, y: torch.isclose(x, y, equal_nan=True), [nanny, nanny.clone()], grad=False)
case('elementwise', 'isclose_nan_default', torch.isclose, [nanny, nanny.clone()], grad=False)
case('elementwise', 'allclose_true', lambda x, y: torch.allclose(x, y, rtol=1e-2), [a, b], grad=False)
case('elementwise', 'allclose_false', torch.allclose, [a, b], grad=False)

# ---- reductions and scans ------------------------------------------------------------------
z = r(3, 5)
z[0, 2] = 0.0
z[1, 1] = 0.0
z[1, 3] = 0.0
case('reduce', 'cumprod_dim1_zeros', lambda x: torch.cumprod(x, 1), [z])
case('reduce', 'cumprod_dim0', lambda x: torch.cumprod(x, 0), [r(4, 3)])
case('reduce', 'cumprod_negdim', lambda x: torch.cumprod(x, -1), [r(2, 3, 4)])
case('reduce', 'cumprod_int', lambda x: torch.cumprod(x, 0), [ints(-3, 4, 5)], grad=False)
case('reduce', 'cumprod_empty', lambda x: torch.cumprod(x, 1), [r(2, 0)])
case('reduce', 'cumsum_negdim', lambda x: torch.cumsum(x, -2), [r(3, 4)])
bo = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [2.0, -1.0, 3.0]])
case('reduce', 'any_all', lambda x: torch.any(x), [bo], grad=False)
case('reduce', 'all_all', lambda x: torch.all(x), [bo], grad=False)
case('reduce', 'any_dim1', lambda x: torch.any(x, 1), [bo], grad=False)
case('reduce', 'all_dim0', lambda x: torch.all(x, 0), [bo], grad=False)
case('reduce', 'all_negdim_keepdim', lambda x: torch.all(x, -1, keepdim=True), [bo], grad=False)
case('reduce', 'any_bool', lambda x: torch.any(x, 0), [bo > 0], grad=False)
case('reduce', 'any_empty', lambda x: torch.any(x), [r(0, 3)], grad=False)
case('reduce', 'all_empty', lambda x: torch.all(x), [r(0, 3)], grad=False)

# ---- sorting ------------------------------------------------------------------------------------
ties = torch.tensor([[3.0, 1.0, 2.0, 1.0, 3.0, 0.0, 2.0], [5.0, 5.0, 5.0, -1.0, 5.0, -1.0, 0.0]])
case('sort', 'sort_ties_asc', lambda x: torch.sort(x, dim=-1, stable=True), [ties])
case('sort', 'sort_ties_desc', lambda x: torch.sort(x, dim=1, descending=True, stable=True), [ties])
case('sort', 'sort_dim0', lambda x: torch.sort(x, dim=0, stable=True), [r(5, 3)])
case('sort', 'sort_3d_mid', lambda x: torch.sort(x, dim=1, descending=True, stable=True), [r(2, 4, 3)])
case('sort', 'sort_nan', lambda x: torch.sort(x, stable=True), [torch.tensor([1.0, float('nan'), -1.0, float('inf'), float('nan'), 0.0])], grad=False)
case('sort', 'sort_nan_desc', lambda x: torch.sort(x, descending=True, stable=True), [torch.tensor([1.0, float('nan'), -1.0, float('inf'), float('nan'), 0.0])], grad=False)
case('sort', 'sort_int', lambda x: torch.sort(x, stable=True), [ints(-4, 4, 3, 6)], grad=False)
case('sort', 'sort_empty', lambda x: torch.sort(x, dim=0, stable=True), [r(0, 3)])
case('sort', 'argsort_ties', lambda x: torch.argsort(x, dim=-1, stable=True), [ties], grad=False)
case('sort', 'argsort_desc', lambda x: torch.sort(x, dim=0, descending=True, stable=True)[1], [r(4, 3)], grad=False)
case('sort', 'topk_largest', lambda x: torch.topk(x, 3), [r(4, 6)])
case('sort', 'topk_smallest_dim0', lambda x: torch.topk(x, 2, dim=0, largest=False), [r(5, 3)])
case('sort', 'topk_k0', lambda x: torch.topk(x, 0), [r(2, 4)], grad=False)
# Ties: PyTorch's topk leaves the order of equal values unspecified (so which tied element gets
# the gradient too); its values are still exact.
case('sort', 'topk_ties_values', lambda x: torch.topk(x, 4).values, [ties], grad=False)

# ---- shape and indexing --------------------------------------------------------------------------
x34 = r(3, 4)
case('shape', 'roll_flat', lambda x: torch.roll(x, 5), [x34])
case('shape', 'roll_dims', lambda x: torch.roll(x, (1, -2), (0, 1)), [x34])
case('shape', 'roll_negdim', lambda x: torch.roll(x, -7, -1), [r(2, 3, 5)])
case('shape', 'flip_dims', lambda x: torch.flip(x, (0, -1)), [r(2, 3, 4)])
case('shape', 'narrow', lambda x: torch.narrow(x, 1, 1, 2), [x34])
case('shape', 'narrow_neg', lambda x: torch.narrow(x, -1, -3, 3), [x34])
case('shape', 'select', lambda x: torch.select(x, 1, 2), [r(2, 3, 4)])
case('shape', 'select_neg', lambda x: torch.select(x, -1, -1), [r(2, 3, 4)])
case('shape', 'diag_vec', lambda x: torch.diag(x), [r(4)])
case('shape', 'diag_vec_k1', lambda x: torch.diag(x, 1), [r(3)])
case('shape', 'diag_vec_km2', lambda x: torch.diag(x, -2), [r(3)])
case('shape', 'diag_mat', lambda x: torch.diag(x), [x34])
case('shape', 'diag_mat_k1', lambda x: torch.diag(x, 1), [x34])
case('shape', 'diag_mat_km1', lambda x: torch.diag(x, -1), [x34])
case('shape', 'outer', torch.outer, [r(3), r(4)])
case('shape', 'repeat', lambda x: x.repeat(2, 1, 3), [r(2, 3)])
case('shape', 'repeat_interleave_int', lambda x: torch.repeat_interleave(x, 2, dim=1), [x34])
case('shape', 'repeat_interleave_list', lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 3]), dim=0), [x34])
case('shape', 'repeat_interleave_flat', lambda x: torch.repeat_interleave(x, 2), [r(2, 2)])
idx = torch.tensor([[0, 2, 1], [2, 0, 3]])
case('indexing', 'scatter_src', lambda x, s: torch.scatter(x, 1, idx, s), [r(2, 5), r(2, 3)])
case('indexing', 'scatter_value', lambda x: torch.scatter(x, 1, idx, 2.5), [r(2, 5)])
case('indexing', 'scatter_dim0', lambda x, s: torch.scatter(x, 0, torch.tensor([[1, 0, 2, 1]]), s), [r(3, 4), r(1, 4)])
dup = torch.tensor([[0, 2, 0, 1], [2, 2, 3, 3]])
# reduce= on scatter has no gradient in PyTorch 1.13: values only.
case('indexing', 'scatter_reduce_add_arg', lambda x, s: torch.scatter(x, 1, dup, s, reduce='add'), [r(2, 5), r(2, 4)], grad=False)
case('indexing', 'scatter_reduce_multiply_arg', lambda x: torch.scatter(x, 1, dup, 1.5, reduce='multiply'), [r(2, 5)], grad=False)
for red in ['sum', 'mean', 'prod', 'amax', 'amin']:
    for inc in [True, False]:
        case('indexing', f'scatter_reduce_{red}_{"self" if inc else "noself"}',
             lambda x, s, red=red, inc=inc: torch.scatter_reduce(x, 1, dup, s, red, include_self=inc), [r(2, 5), r(2, 4)])
tie_src = torch.tensor([[1.0, 2.0, 1.0, 0.5], [3.0, 3.0, 3.0, -1.0]])
tie_x = torch.tensor([[0.0, 0.5, -1.0, 4.0, 1.0], [0.0, 0.0, 3.0, 0.0, 2.0]])
case('indexing', 'scatter_reduce_amax_ties', lambda x, s: torch.scatter_reduce(x, 1, dup, s, 'amax'), [tie_x, tie_src])
case('indexing', 'scatter_reduce_prod_dim0', lambda x, s: torch.scatter_reduce(x, 0, torch.tensor([[1, 0, 1], [1, 2, 0]]), s, 'prod', include_self=False), [r(3, 3), r(2, 3)])
case('indexing', 'scatter_reduce_amin_int', lambda x, s: torch.scatter_reduce(x, 1, dup, s, 'amin'), [ints(-5, 5, 2, 5), ints(-5, 5, 2, 4)], grad=False)
nz = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
case('indexing', 'nonzero_2d', torch.nonzero, [nz], grad=False)
case('indexing', 'nonzero_1d', torch.nonzero, [torch.tensor([0, 3, 0, 0, 2])], grad=False)
case('indexing', 'nonzero_3d_bool', torch.nonzero, [torch.rand(2, 3, 2) > 0.5], grad=False)
case('indexing', 'nonzero_none', torch.nonzero, [torch.zeros(2, 3)], grad=False)

# ---- einsum -------------------------------------------------------------------------------------
case('einsum', 'einsum_mm', lambda a, b: torch.einsum('ij,jk->ik', a, b), [r(3, 4), r(4, 5)])
case('einsum', 'einsum_bmm', lambda a, b: torch.einsum('bij,bjk->bik', a, b), [r(2, 3, 4), r(2, 4, 2)])
case('einsum', 'einsum_attention', lambda q, k: torch.einsum('bhqd,bhkd->bhqk', q, k), [r(2, 2, 3, 4), r(2, 2, 5, 4)])
case('einsum', 'einsum_trace', lambda a: torch.einsum('ii', a), [r(4, 4)])
case('einsum', 'einsum_diag', lambda a: torch.einsum('ii->i', a), [r(3, 3)])
case('einsum', 'einsum_outer', lambda a, b: torch.einsum('i,j->ij', a, b), [r(3), r(2)])
case('einsum', 'einsum_transpose', lambda a: torch.einsum('ijk->kji', a), [r(2, 3, 4)])
case('einsum', 'einsum_implicit', lambda a, b: torch.einsum('ij,jk', a, b), [r(2, 3), r(3, 2)])
case('einsum', 'einsum_three', lambda a, b, c: torch.einsum('ij,jk,kl->il', a, b, c), [r(2, 3), r(3, 4), r(4, 2)])
case('einsum', 'einsum_sum_all', lambda a: torch.einsum('ij->', a), [r(3, 4)])
case('einsum', 'einsum_broadcast_batch', lambda a, b: torch.einsum('bij,bjk->bik', a, b), [r(1, 3, 4), r(2, 4, 5)])
case('einsum', 'einsum_early_sum', lambda a, b: torch.einsum('ij,jk->i', a, b), [r(3, 4), r(4, 5)])
case('einsum', 'einsum_mixed', lambda a, b: torch.einsum('abc,cad->bd', a, b), [r(2, 3, 4), r(4, 2, 5)])
case('einsum', 'einsum_bilinear', lambda a, w, b: torch.einsum('bi,oij,bj->bo', a, w, b), [r(2, 3), r(4, 3, 5), r(2, 5)])

# ---- creation ----------------------------------------------------------------------------------
case('creation', 'linspace_5', lambda: torch.linspace(-1.0, 2.0, 5), [], grad=False)
case('creation', 'linspace_7', lambda: torch.linspace(0.1, 0.7, 7), [], grad=False)
case('creation', 'linspace_1', lambda: torch.linspace(3.0, 5.0, 1), [], grad=False)
case('creation', 'linspace_0', lambda: torch.linspace(3.0, 5.0, 0), [], grad=False)
case('creation', 'eye_3', lambda: torch.eye(3), [], grad=False)
case('creation', 'eye_2x4', lambda: torch.eye(2, 4), [], grad=False)
case('creation', 'zeros_like', torch.zeros_like, [r(2, 3)], grad=False)
case('creation', 'ones_like_int', torch.ones_like, [ints(0, 3, 4)], grad=False)
case('creation', 'full_like', lambda x: torch.full_like(x, 2.5), [r(3)], grad=False)

# ---- F -----------------------------------------------------------------------------------------
img = r(2, 3, 4, 5)
seq = r(2, 3, 6)
case('F', 'pad_constant_2d', lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [img])
case('F', 'pad_constant_neg', lambda x: F.pad(x, (-1, 2, 1, -2)), [img])
case('F', 'pad_constant_3dims', lambda x: F.pad(x, (1, 0, 0, 1, 2, 0)), [img])
case('F', 'pad_reflect_1d', lambda x: F.pad(x, (2, 3), mode='reflect'), [seq])
case('F', 'pad_reflect_2d', lambda x: F.pad(x, (1, 2, 3, 1), mode='reflect'), [img])
case('F', 'pad_replicate_1d', lambda x: F.pad(x, (3, 1), mode='replicate'), [seq])
case('F', 'pad_replicate_2d', lambda x: F.pad(x, (2, 0, 1, 3), mode='replicate'), [img])
case('F', 'pad_circular_2d', lambda x: F.pad(x, (1, 2, 2, 1), mode='circular'), [img])
small_img = r(1, 2, 3, 4)
case('F', 'interp_nearest_scale2', lambda x: F.interpolate(x, scale_factor=2, mode='nearest'), [small_img])
case('F', 'interp_nearest_size', lambda x: F.interpolate(x, size=(5, 3), mode='nearest'), [small_img])
case('F', 'interp_nearest_scale_frac', lambda x: F.interpolate(x, scale_factor=1.7, mode='nearest'), [small_img])
case('F', 'interp_nearest_1d', lambda x: F.interpolate(x, size=9, mode='nearest'), [seq])
case('F', 'interp_bilinear_scale2', lambda x: F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False), [small_img])
case('F', 'interp_bilinear_size_ac', lambda x: F.interpolate(x, size=(5, 7), mode='bilinear', align_corners=True), [small_img])
case('F', 'interp_bilinear_down', lambda x: F.interpolate(x, size=(2, 3), mode='bilinear', align_corners=False), [r(1, 2, 5, 7)])
case('F', 'interp_bilinear_scale_frac', lambda x: F.interpolate(x, scale_factor=(1.5, 0.6), mode='bilinear', align_corners=False), [r(1, 1, 4, 5)])
case('F', 'interp_linear_ac', lambda x: F.interpolate(x, size=10, mode='linear', align_corners=True), [seq])
case('F', 'interp_linear', lambda x: F.interpolate(x, scale_factor=1.5, mode='linear', align_corners=False), [seq])
case('F', 'interp_bicubic_scale2', lambda x: F.interpolate(x, scale_factor=2, mode='bicubic', align_corners=False), [small_img], tol={'rtol': 1e-5, 'atol': 1e-5})
case('F', 'interp_bicubic_size_ac', lambda x: F.interpolate(x, size=(5, 7), mode='bicubic', align_corners=True), [small_img], tol={'rtol': 1e-5, 'atol': 1e-5})
case('F', 'interp_bicubic_down', lambda x: F.interpolate(x, size=(3, 4), mode='bicubic', align_corners=False), [r(1, 2, 6, 9)], tol={'rtol': 1e-5, 'atol': 1e-5})
case('F', 'interp_nearest_exact', lambda x: F.interpolate(x, size=(5, 7), mode='nearest-exact'), [small_img])
case('F', 'interp_nearest_exact_down', lambda x: F.interpolate(x, scale_factor=0.5, mode='nearest-exact'), [r(1, 2, 6, 9)])
case('F', 'interp_area_down', lambda x: F.interpolate(x, size=(2, 3), mode='area'), [r(1, 2, 5, 7)])
case('F', 'interp_area_1d', lambda x: F.interpolate(x, scale_factor=0.5, mode='area'), [seq])
case('F', 'interp_trilinear', lambda x: F.interpolate(x, size=(3, 4, 5), mode='trilinear', align_corners=False), [r(1, 2, 2, 3, 3)])
case('F', 'normalize_default', lambda x: F.normalize(x), [r(3, 4)])
case('F', 'normalize_p1_dim', lambda x: F.normalize(x, p=1.0, dim=-1), [r(2, 3, 4)])
case('F', 'normalize_zero_row', lambda x: F.normalize(x, dim=1), [torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]])], grad=False)
case('F', 'one_hot', lambda x: F.one_hot(x), [torch.tensor([0, 3, 1, 3])], grad=False)
case('F', 'one_hot_classes', lambda x: F.one_hot(x, 5), [torch.tensor([[0, 2], [4, 1]])], grad=False)
case('F', 'cosine_similarity', lambda a, b: F.cosine_similarity(a, b), [r(3, 5), r(3, 5)])
case('F', 'cosine_similarity_bcast', lambda a, b: F.cosine_similarity(a, b, dim=-1), [r(2, 3, 4), r(3, 4)])
case('F', 'glu', lambda x: F.glu(x), [r(3, 6)])
case('F', 'glu_dim0', lambda x: F.glu(x, 0), [r(4, 3)])
case('F', 'pixel_shuffle', lambda x: F.pixel_shuffle(x, 2), [r(1, 8, 2, 3)])
case('F', 'pixel_unshuffle', lambda x: F.pixel_unshuffle(x, 2), [r(1, 2, 4, 6)])
case('F', 'unfold', lambda x: F.unfold(x, 2), [r(2, 2, 4, 5)])
case('F', 'unfold_opts', lambda x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [r(1, 2, 5, 6)])
case('F', 'fold', lambda x: F.fold(x, (4, 5), 2), [r(2, 8, 12)])
case('F', 'fold_opts', lambda x: F.fold(x, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [r(1, 12, 12)])
case('F', 'embedding', lambda w: F.embedding(torch.tensor([[1, 3], [0, 3]]), w), [r(5, 3)])
case('F', 'embedding_padding', lambda w: F.embedding(torch.tensor([[1, 3], [0, 2]]), w, padding_idx=3), [r(5, 3)])
case('F', 'group_norm', lambda x, w, b: F.group_norm(x, 2, w, b), [r(2, 4, 3, 3), r(4), r(4)], tol={'rtol': 1e-4, 'atol': 1e-5})
case('F', 'instance_norm', lambda x: F.instance_norm(x), [r(2, 3, 4, 4)], tol={'rtol': 1e-4, 'atol': 1e-5})


def sdpa(q, k, v, mask=None, causal=False, scale=None):
    """torch 2.x scaled_dot_product_attention written out (1.13 has no fused op)."""
    s = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1) * s
    if causal:
        L, S = q.shape[-2], k.shape[-2]
        mask = torch.ones(L, S, dtype=torch.bool).tril()
    if mask is not None:
        scores = scores.masked_fill(~mask, float('-inf')) if mask.dtype == torch.bool else scores + mask
    return torch.softmax(scores, -1) @ v


q, k, v = r(2, 2, 4, 8), r(2, 2, 5, 8), r(2, 2, 5, 6)
case('F', 'sdpa', lambda q, k, v: sdpa(q, k, v), [q, k, v], tol={'rtol': 1e-5, 'atol': 1e-6})
case('F', 'sdpa_causal', lambda q, k, v: sdpa(q, k, v, causal=True), [r(2, 5, 8), r(2, 5, 8), r(2, 5, 4)], tol={'rtol': 1e-5, 'atol': 1e-6})
bmask = torch.rand(4, 5) > 0.3
bmask[:, 0] = True
case('F', 'sdpa_bool_mask', lambda q, k, v: sdpa(q, k, v, mask=bmask), [q, k, v], tol={'rtol': 1e-5, 'atol': 1e-6})
fmask = r(4, 5)
case('F', 'sdpa_float_mask_scale', lambda q, k, v: sdpa(q, k, v, mask=fmask, scale=0.3), [q, k, v], tol={'rtol': 1e-5, 'atol': 1e-6})

os.makedirs(OUT, exist_ok=True)
for g, cases in groups.items():
    doc = {'format_version': 1, 'torch_version': torch.__version__, 'generator': 'scripts/golden/ops_api.py', 'group': g,
           'default_tol': {'rtol': 1e-5, 'atol': 1e-6}, 'masks': {'sdpa_bool_mask': ser(bmask), 'sdpa_float_mask_scale': ser(fmask)} if g == 'F' else {},
           'cases': cases}
    with open(os.path.join(OUT, f'{g}.json'), 'w') as fh:
        json.dump(doc, fh, separators=(',', ':'))
        fh.write('\n')
    print(f'{g}: {len(cases)} cases', file=sys.stderr)
