#!/usr/bin/env python3
"""Golden data for Kiln's nn layers, lr schedulers (issue #22, part B), from PyTorch 1.13.

Writes tests/golden-kiln/nn_api/:
  layers/<case>.safetensors  per layer case: the module's state_dict ('state.<key>') before and
                             ('after.<key>') after the forward, its inputs
                             ('in.<name>'), outputs ('out.<i>'), a fixed cotangent per output
                             ('cot.<i>'), and the gradients of loss = sum(out_i * cot_i) for the
                             float inputs ('gin.<name>') and parameters ('gparam.<name>').
  layers.json                the cases (name, input names, number of outputs), state dict keys
  schedulers.json            lr (and momentum/beta1) before and after each of 100 steps

Run: python3 scripts/golden/nn_api.py   (deterministic: seeded, CPU, float32)
"""
import json
import math
import os

import torch
import torch.nn as nn
try:
    from safetensors.torch import save_file
except ImportError:  # the same format, written by hand
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from st_write import save_file

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'tests', 'golden-kiln', 'nn_api')
torch.manual_seed(0)


def causal(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), 1)


def case_list():
    """(name, module factory, inputs dict (name -> tensor), forward(module, inputs) -> tuple of outputs)"""
    C = []

    def add(name, make, inputs, fwd, eval_no_grad=False):
        C.append((name, make, inputs, fwd, eval_no_grad))

    r = torch.randn
    add('transformer_encoder_layer_post_relu_batch_first',
        lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True),
        {'x': r(2, 5, 8), 'mask': causal(5)},
        lambda m, i: (m(i['x'], src_mask=i['mask']),))
    add('transformer_encoder_layer_pre_gelu',
        lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation='gelu', norm_first=True),
        {'x': r(5, 2, 8), 'kpm': torch.tensor([[False, False, False, True, True], [False] * 5])},
        lambda m, i: (m(i['x'], src_key_padding_mask=i['kpm']),))
    add('transformer_decoder_layer',
        lambda: nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0),
        {'tgt': r(4, 2, 8), 'memory': r(5, 2, 8), 'mask': causal(4)},
        lambda m, i: (m(i['tgt'], i['memory'], tgt_mask=i['mask']),))
    add('transformer_decoder_layer_pre_batch_first',
        lambda: nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True),
        {'tgt': r(2, 4, 8), 'memory': r(2, 3, 8)},
        lambda m, i: (m(i['tgt'], i['memory']),))
    add('transformer_encoder_stack',
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0), 2, norm=nn.LayerNorm(8)),
        {'x': r(5, 2, 8), 'mask': causal(5)},
        lambda m, i: (m(i['x'], mask=i['mask']),))
    add('transformer',
        lambda: nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, dropout=0.0),
        {'src': r(5, 2, 8), 'tgt': r(3, 2, 8), 'tgt_mask': causal(3)},
        lambda m, i: (m(i['src'], i['tgt'], tgt_mask=i['tgt_mask']),))
    add('gru_cell', lambda: nn.GRUCell(4, 6), {'x': r(3, 4), 'h': r(3, 6)}, lambda m, i: (m(i['x'], i['h']),))
    add('gru_cell_unbatched_no_state', lambda: nn.GRUCell(4, 6, bias=False), {'x': r(4)}, lambda m, i: (m(i['x']),))
    add('lstm_cell', lambda: nn.LSTMCell(4, 5), {'x': r(3, 4), 'h': r(3, 5), 'c': r(3, 5)}, lambda m, i: m(i['x'], (i['h'], i['c'])))
    add('rnn_cell_relu', lambda: nn.RNNCell(4, 5, nonlinearity='relu'), {'x': r(3, 4), 'h': r(3, 5)}, lambda m, i: (m(i['x'], i['h']),))
    add('rnn_tanh_2layer_bidirectional', lambda: nn.RNN(4, 5, num_layers=2, bidirectional=True), {'x': r(6, 2, 4)}, lambda m, i: m(i['x']))
    add('rnn_relu_batch_first', lambda: nn.RNN(4, 5, nonlinearity='relu', batch_first=True), {'x': r(2, 6, 4), 'h0': r(1, 2, 5)}, lambda m, i: m(i['x'], i['h0']))
    add('group_norm', lambda: nn.GroupNorm(2, 6), {'x': r(2, 6, 3, 3)}, lambda m, i: (m(i['x']),))
    add('conv1d', lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), {'x': r(2, 3, 9)}, lambda m, i: (m(i['x']),))
    add('conv_transpose1d', lambda: nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1), {'x': r(2, 3, 5)}, lambda m, i: (m(i['x']),))
    add('instance_norm2d_affine', lambda: nn.InstanceNorm2d(3, affine=True), {'x': r(2, 3, 4, 4)}, lambda m, i: (m(i['x']),))
    add('instance_norm2d_running', lambda: nn.InstanceNorm2d(3, track_running_stats=True), {'x': r(2, 3, 4, 4)}, lambda m, i: (m(i['x']),))
    add('prelu', lambda: nn.PReLU(3, 0.1), {'x': r(2, 3, 4)}, lambda m, i: (m(i['x']),))
    add('elu', lambda: nn.ELU(0.5), {'x': r(2, 7)}, lambda m, i: (m(i['x']),))
    add('softplus', lambda: nn.Softplus(beta=2, threshold=5), {'x': r(2, 7) * 3}, lambda m, i: (m(i['x']),))
    add('hardswish', lambda: nn.Hardswish(), {'x': r(2, 7) * 3}, lambda m, i: (m(i['x']),))
    add('mish', lambda: nn.Mish(), {'x': r(2, 7) * 3}, lambda m, i: (m(i['x']),))
    add('silu', lambda: nn.SiLU(), {'x': r(2, 7) * 3}, lambda m, i: (m(i['x']),))
    add('upsample_nearest_scale2', lambda: nn.Upsample(scale_factor=2, mode='nearest'), {'x': r(1, 2, 3, 3)}, lambda m, i: (m(i['x']),))
    add('upsample_nearest_size', lambda: nn.Upsample(size=(5, 7), mode='nearest'), {'x': r(1, 2, 3, 3)}, lambda m, i: (m(i['x']),))
    add('upsample_bilinear_size', lambda: nn.Upsample(size=(5, 7), mode='bilinear', align_corners=False), {'x': r(1, 2, 3, 4)}, lambda m, i: (m(i['x']),))
    add('upsample_bilinear_align', lambda: nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True), {'x': r(1, 2, 3, 4)}, lambda m, i: (m(i['x']),))
    add('upsample_linear_scale', lambda: nn.Upsample(scale_factor=2.5, mode='linear'), {'x': r(2, 2, 4)}, lambda m, i: (m(i['x']),))
    add('zero_pad2d', lambda: nn.ZeroPad2d((1, 0, 2, 1)), {'x': r(1, 2, 3, 3)}, lambda m, i: (m(i['x']),))
    add('constant_pad2d_crop', lambda: nn.ConstantPad2d((-1, 2, 0, 1), 1.5), {'x': r(1, 2, 3, 3)}, lambda m, i: (m(i['x']),))
    add('max_pool1d', lambda: nn.MaxPool1d(3, stride=2, padding=1), {'x': r(2, 3, 9)}, lambda m, i: (m(i['x']),))
    add('avg_pool1d', lambda: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), {'x': r(2, 3, 9)}, lambda m, i: (m(i['x']),))
    add('adaptive_max_pool2d', lambda: nn.AdaptiveMaxPool2d((2, 3)), {'x': r(1, 2, 5, 7)}, lambda m, i: (m(i['x']),))
    add('embedding_bag_mean_offsets', lambda: nn.EmbeddingBag(10, 3, mode='mean'),
        {'idx': torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), 'offsets': torch.tensor([0, 3, 3, 6])},
        lambda m, i: (m(i['idx'], i['offsets']),))
    add('embedding_bag_sum_weights', lambda: nn.EmbeddingBag(10, 3, mode='sum'),
        {'idx': torch.tensor([1, 2, 4, 5, 4, 3]), 'offsets': torch.tensor([0, 2]), 'psw': r(6)},
        lambda m, i: (m(i['idx'], i['offsets'], per_sample_weights=i['psw']),))
    add('embedding_bag_max_2d', lambda: nn.EmbeddingBag(10, 3, mode='max'),
        {'idx': torch.tensor([[1, 2, 4], [5, 4, 3]])}, lambda m, i: (m(i['idx']),))
    add('unflatten', lambda: nn.Unflatten(1, (2, 3)), {'x': r(2, 6, 2)}, lambda m, i: (m(i['x']),))
    add('identity', lambda: nn.Identity(54, unused_argument=0.1), {'x': r(2, 3)}, lambda m, i: (m(i['x']),))
    add('transformer_decoder_stack_gelu',
        lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation='gelu'), 2, norm=nn.LayerNorm(8)),
        {'tgt': r(3, 2, 8), 'memory': r(4, 2, 8), 'mask': causal(3), 'mkpm': torch.tensor([[False, False, True, True], [False] * 4])},
        lambda m, i: (m(i['tgt'], i['memory'], tgt_mask=i['mask'], memory_key_padding_mask=i['mkpm']),))
    # Eval mode under no_grad: PyTorch 1.13's nested-tensor fast path (zeros at padded positions,
    # output cut to the longest sequence), and the same stack pre-norm (no fast path).
    kpm = torch.tensor([[False, False, False, True, True], [False, False, True, True, True]])
    add('transformer_encoder_eval_nested',
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), 2, norm=nn.LayerNorm(8)),
        {'x': r(2, 5, 8), 'kpm': kpm}, lambda m, i: (m(i['x'], src_key_padding_mask=i['kpm']),), eval_no_grad=True)
    add('transformer_encoder_eval_pre_norm',
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True), 2),
        {'x': r(2, 5, 8), 'kpm': kpm}, lambda m, i: (m(i['x'], src_key_padding_mask=i['kpm']),), eval_no_grad=True)
    return C


def gen_layers():
    os.makedirs(os.path.join(OUT, 'layers'), exist_ok=True)
    index = []
    for name, make, inputs, fwd, eval_no_grad in case_list():
        torch.manual_seed(sum(map(ord, name)))
        m = make()
        m.train(not eval_no_grad)
        before = {f'state.{k}': v.detach().clone().contiguous() for k, v in m.state_dict().items()}
        ins = {k: (v.clone().requires_grad_(not eval_no_grad) if v.is_floating_point() else v) for k, v in inputs.items()}
        with torch.set_grad_enabled(not eval_no_grad):
            outs = fwd(m, ins)
        if not isinstance(outs, (tuple, list)):
            outs = (outs,)
        cots = [torch.randn_like(o) for o in outs]
        if not eval_no_grad:
            loss = sum((o * c).sum() for o, c in zip(outs, cots))
            loss.backward()
        t = dict(before)
        t.update({f'after.{k}': v.detach().clone().contiguous() for k, v in m.state_dict().items()})
        for k, v in ins.items():
            t[f'in.{k}'] = v.detach().clone().contiguous()
            if v.is_floating_point() and v.grad is not None:
                t[f'gin.{k}'] = v.grad.clone().contiguous()
        for j, (o, c) in enumerate(zip(outs, cots)):
            t[f'out.{j}'] = o.detach().clone().contiguous()
            t[f'cot.{j}'] = c.contiguous()
        for k, p in m.named_parameters():
            if p.grad is not None:
                t[f'gparam.{k}'] = p.grad.clone().contiguous()
        save_file(t, os.path.join(OUT, 'layers', f'{name}.safetensors'))
        index.append({'name': name, 'inputs': list(inputs.keys()), 'outputs': len(outs), 'stateKeys': list(m.state_dict().keys()), 'evalNoGrad': eval_no_grad})
    # ParameterList / ParameterDict state dict keys.
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = nn.ParameterList([nn.Parameter(torch.ones(2)), nn.Parameter(torch.zeros(3))])
            self.pdict = nn.ParameterDict({'alpha': nn.Parameter(torch.ones(1)), 'beta': nn.Parameter(torch.ones(2))})
    keys = {'parameterContainers': list(Holder().state_dict().keys())}
    with open(os.path.join(OUT, 'layers.json'), 'w') as f:
        json.dump({'torch': torch.__version__, 'cases': index, **keys}, f, indent=1)


def gen_schedulers():
    S = torch.optim.lr_scheduler
    p = lambda: [nn.Parameter(torch.zeros(1)), nn.Parameter(torch.zeros(1))]

    def sgd2():
        a, b = p()
        return torch.optim.SGD([{'params': [a]}, {'params': [b], 'lr': 0.01}], lr=0.1, momentum=0.9)

    def adam():
        return torch.optim.Adam(p(), lr=0.001)

    cases = {
        'StepLR': (sgd2, lambda o: S.StepLR(o, step_size=7, gamma=0.5)),
        'MultiStepLR': (sgd2, lambda o: S.MultiStepLR(o, milestones=[10, 30, 30, 80], gamma=0.3)),
        'ExponentialLR': (sgd2, lambda o: S.ExponentialLR(o, gamma=0.97)),
        'CosineAnnealingLR': (sgd2, lambda o: S.CosineAnnealingLR(o, T_max=30, eta_min=0.001)),
        'LinearLR': (sgd2, lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=20)),
        'LambdaLR': (sgd2, lambda o: S.LambdaLR(o, lr_lambda=lambda e: 1.0 / (1.0 + 0.1 * e))),
        'OneCycleLR_sgd': (sgd2, lambda o: S.OneCycleLR(o, max_lr=[0.1, 0.05], total_steps=100)),
        'OneCycleLR_adam_three_phase_linear': (adam, lambda o: S.OneCycleLR(o, max_lr=0.01, epochs=10, steps_per_epoch=10, pct_start=0.25, anneal_strategy='linear', three_phase=True)),
        'SequentialLR_linear_cosine': (sgd2, lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=10), S.CosineAnnealingLR(o, T_max=90)], milestones=[10])),
        'SequentialLR_constant_exp_step': (sgd2, lambda o: S.SequentialLR(o, [S.ExponentialLR(o, gamma=0.9), S.StepLR(o, step_size=5, gamma=0.5), S.ExponentialLR(o, gamma=0.99)], milestones=[20, 50])),
    }
    out = {}

    def snap(o):
        g = o.param_groups
        row = {'lr': [x['lr'] for x in g]}
        if 'momentum' in g[0]:
            row['momentum'] = [x['momentum'] for x in g]
        if 'betas' in g[0]:
            row['beta1'] = [x['betas'][0] for x in g]
        return row

    for name, (mk_opt, mk) in cases.items():
        o = mk_opt()
        s = mk(o)
        rows = [snap(o)]
        for _ in range(100):
            o.step()
            s.step()
            rows.append(snap(o))
        out[name] = rows
    # ReduceLROnPlateau over a fixed metric sequence.
    metrics = [1.0 / (1 + 0.3 * e) if e < 15 else 0.25 + 0.001 * math.sin(e) for e in range(100)]
    for name, kw in {'ReduceLROnPlateau_min_rel': dict(factor=0.5, patience=3, cooldown=2, threshold=0.01, min_lr=0.002),
                     'ReduceLROnPlateau_max_abs': dict(mode='max', factor=0.3, patience=2, threshold=0.001, threshold_mode='abs')}.items():
        o = sgd2()
        s = S.ReduceLROnPlateau(o, **kw)
        rows = [snap(o)]
        for e in range(100):
            o.step()
            s.step(metrics[e] if kw.get('mode') != 'max' else -metrics[e])
            rows.append(snap(o))
        out[name] = rows
    with open(os.path.join(OUT, 'schedulers.json'), 'w') as f:
        json.dump({'torch': torch.__version__, 'metrics': metrics, 'cases': out}, f)


if __name__ == '__main__':
    os.makedirs(OUT, exist_ok=True)
    gen_layers()
    gen_schedulers()
    print('wrote', os.path.abspath(OUT))
