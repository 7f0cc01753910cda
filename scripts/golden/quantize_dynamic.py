#!/usr/bin/env python3
"""PyTorch 1.13 reference data for quantization.quantizeDynamic beyond tests/golden's per-tensor
Linear: per-channel Linear, LSTM (2 layers, bidirectional) and GRU, for each quantized engine
this PyTorch has (Debian's build has qnnpack and onednn, no fbgemm; onednn quantizes activations
with reduce_range as fbgemm does, qnnpack without).

Writes tests/golden-kiln/quantize_dynamic/cases.json; tests/quantization.test.ts runs the same
cases on Kiln. Each case: the float state dict, the input (and initial state), the quantized
model's outputs and the float model's. Run from the repository root:
    python3 scripts/golden/quantize_dynamic.py
Deterministic: every tensor comes from one seeded generator.
"""
import json
import os

import torch
import torch.nn as nn
from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig, quantize_dynamic

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'tests', 'golden-kiln', 'quantize_dynamic')
torch.manual_seed(21)
torch.set_num_threads(1)


def ser(t):
    t = t.detach()
    if t.dtype in (torch.int8, torch.int32, torch.int64, torch.uint8):
        return {'shape': list(t.shape), 'dtype': 'int64', 'data': [int(v) for v in t.flatten().tolist()]}
    return {'shape': list(t.shape), 'dtype': 'float32', 'data': [float('%.9g' % v) for v in t.float().flatten().tolist()]}


ENGINES = [e for e in ('onednn', 'qnnpack', 'fbgemm') if e in torch.backends.quantized.supported_engines]
REDUCE_RANGE = {'onednn': True, 'fbgemm': True, 'qnnpack': False}


def linear_case(engine, name, per_channel, shape_in, k, n):
    torch.backends.quantized.engine = engine
    m = nn.Sequential(nn.Linear(k, n), nn.ReLU(), nn.Linear(n, 5))
    x = torch.randn(*shape_in) * 2 + 0.3
    qc = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    q = quantize_dynamic(m, {nn.Linear: qc}, dtype=torch.qint8)
    with torch.no_grad():
        y, yf = q(x), m(x)
    w0 = q[0].weight()
    return {
        'name': f'{name}_{engine}', 'kind': 'linear', 'engine': engine, 'reduce_range': REDUCE_RANGE[engine],
        'qscheme': 'per_channel' if per_channel else 'per_tensor',
        'attrs': {'in_features': k, 'hidden': n, 'out_features': 5},
        'state_dict': {k2: ser(v) for k2, v in m.state_dict().items()},
        'weight0_int': ser(w0.int_repr()),
        'weight0_scale': ser(w0.q_per_channel_scales() if per_channel else torch.tensor([w0.q_scale()])),
        'input': ser(x), 'output': ser(y), 'output_float': ser(yf),
    }


class Holder(nn.Module):
    """quantize_dynamic swaps children only (a bare LSTM given as the model stays float)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, state):
        return self.rnn(x, state)


def rnn_case(engine, cls, name, **kw):
    torch.backends.quantized.engine = engine
    m = Holder(cls(6, 8, **kw))
    x = torch.randn(5, 3, 6)
    h0 = torch.randn(kw.get('num_layers', 1) * (2 if kw.get('bidirectional') else 1), 3, 8) * 0.5
    state = (h0, torch.randn_like(h0) * 0.5) if cls is nn.LSTM else h0
    q = quantize_dynamic(m, {cls}, dtype=torch.qint8)
    assert type(q.rnn).__module__.startswith('torch.ao.nn.quantized.dynamic'), type(q.rnn)
    with torch.no_grad():
        out, st = q(x, state)
        outf, stf = m(x, state)
    states = list(st) if cls is nn.LSTM else [st]
    statesf = list(stf) if cls is nn.LSTM else [stf]
    return {
        'name': f'{name}_{engine}', 'kind': cls.__name__, 'engine': engine, 'reduce_range': REDUCE_RANGE[engine],
        'qscheme': 'per_tensor', 'attrs': {'input_size': 6, 'hidden_size': 8, **kw},
        'state_dict': {k2: ser(v) for k2, v in m.rnn.state_dict().items()},
        'input': ser(x), 'state': [ser(s) for s in (state if cls is nn.LSTM else (state,))],
        'output': ser(out), 'states': [ser(s) for s in states],
        'output_float': ser(outf), 'states_float': [ser(s) for s in statesf],
    }


cases = []
for e in ENGINES:
    cases.append(linear_case(e, 'linear_per_tensor_3d', False, (2, 3, 16), 16, 12))
    cases.append(linear_case(e, 'linear_per_channel', True, (4, 16), 16, 12))
    cases.append(rnn_case(e, nn.LSTM, 'lstm_2layer_bidirectional', num_layers=2, bidirectional=True))
    cases.append(rnn_case(e, nn.GRU, 'gru_1layer'))
    cases.append(rnn_case(e, nn.LSTM, 'lstm_1layer'))

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, 'cases.json'), 'w') as f:
    json.dump({'torch_version': torch.__version__, 'generator': 'scripts/golden/quantize_dynamic.py', 'engines': ENGINES, 'cases': cases}, f)
print(f'{len(cases)} cases -> {OUT}/cases.json')
