#!/usr/bin/env python3
"""PyTorch 1.13 reference data for the runtime's Winograd F(4x4, 3x3) conv (runtime/wasm/winograd.ts):
small stacks of 3x3 stride-1 convolutions (with BatchNorm in eval mode, which -O2 folds into the
weights, bias and ReLU), channel counts at and above the F(4x4) rule's bounds, output sizes that
are not multiples of 4 (ragged tiles), padding 0 and 1, batch 1 to 3.

Writes tests/golden-kiln/winograd_conv/cases.json; tests/winograd-golden.test.ts
compiles the same models with Kiln at -O2 and runs them on the CPU runtime. Run from the
repository root:
    python3 scripts/golden/winograd_conv.py
Deterministic: every tensor comes from one seeded generator; inputs and conv weights are rounded
to multiples of 1/16 and 1/512 (exact in float32 and short in JSON).
"""
import json
import os

import torch
import torch.nn as nn

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'tests', 'golden-kiln', 'winograd_conv')
torch.manual_seed(14)
torch.set_num_threads(1)


def ser(t):
    return {'shape': list(t.shape), 'data': [float('%.9g' % v) for v in t.detach().float().flatten().tolist()]}


def model(layers):
    """layers: (cin, cout, padding, bn) per conv; each conv is followed by ReLU."""
    mods = []
    for cin, cout, pad, bn in layers:
        conv = nn.Conv2d(cin, cout, 3, padding=pad, bias=not bn)
        with torch.no_grad():
            # Multiples of 1/512 (short in JSON, exact in float32), scaled like PyTorch's init.
            conv.weight.copy_(torch.round(conv.weight * 512) / 512)
        mods.append(conv)
        if bn:
            b = nn.BatchNorm2d(cout)
            with torch.no_grad():
                b.weight.uniform_(0.5, 1.5)
                b.bias.uniform_(-0.2, 0.2)
                b.running_mean.uniform_(-0.1, 0.1)
                b.running_var.uniform_(0.5, 2)
            mods.append(b)
        mods.append(nn.ReLU())
    return nn.Sequential(*mods).eval()


CASES = [
    ('c16_b1_13x14', [(16, 16, 1, True), (16, 20, 0, False)], (1, 16, 13, 14)),
    ('c64_b2_7x13', [(64, 16, 1, True)], (2, 64, 7, 13)),
    ('c24_b2_14x13', [(24, 16, 1, False)], (2, 24, 14, 13)),
]

cases = []
for name, layers, shape in CASES:
    m = model(layers)
    x = torch.round(torch.randn(*shape) * 16) / 16
    with torch.no_grad():
        y = m(x)
    cases.append({
        'name': name, 'layers': [{'cin': a, 'cout': b, 'padding': p, 'bn': bn} for a, b, p, bn in layers],
        'state_dict': {k: ser(v) for k, v in m.state_dict().items() if not k.endswith('num_batches_tracked')},
        'input': ser(x), 'output': ser(y),
    })

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, 'cases.json'), 'w') as f:
    json.dump({'generator': 'scripts/golden/winograd_conv.py', 'torch': torch.__version__, 'cases': cases}, f)
print('wrote', os.path.join(OUT, 'cases.json'))
