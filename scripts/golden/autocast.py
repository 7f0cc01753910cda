# Reference outputs for Kiln's autocast (tests/autocast-golden.test.ts), from PyTorch 1.13.
# Run: python3 scripts/golden/autocast.py > tests/golden-kiln/autocast.json
#
# bfloat16: torch.autocast('cpu', dtype=torch.bfloat16), PyTorch's own CPU autocast. The cases
# use only ops on which its CPU lists and the CUDA lists Kiln follows agree (conv2d, linear and
# matmul run in bfloat16; relu, max_pool2d, flatten, add run in their input's dtype).
# float16: CUDA-only in 1.13, so the reference is built by hand from the CUDA op list: each
# lower-precision op rounds its inputs to float16 (.half()), computes in float32 and rounds its
# result to float16 (what a float16 GPU kernel with float32 accumulation stores); ops on no list
# run on the float16 values; fp32-list ops (softmax, log_softmax, sum) take .float() inputs.
import json, torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
flat = lambda t: [float(v) for v in t.detach().float().reshape(-1).tolist()]
h = lambda t: t.half().float()  # round to float16, keep float32 math

def mlp_case():
    m = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    x = torch.randn(4, 6)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        bf = m(x)
    l1, l2 = m[0], m[2]
    a = h(F.linear(h(x), h(l1.weight), h(l1.bias))).relu()
    f16 = h(F.linear(h(a), h(l2.weight), h(l2.bias)))
    return {'name': 'mlp', 'x': flat(x), 'xShape': list(x.shape),
            'params': {k: flat(v) for k, v in m.state_dict().items()},
            'bfloat16': {'dtype': str(bf.dtype), 'y': flat(bf)},
            'float16': {'y': flat(f16), 'logSoftmax': flat(F.log_softmax(f16.float(), 1)), 'sum': float(f16.float().sum())},
            'yShape': list(bf.shape)}

def cnn_case():
    m = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(12, 4))
    x = torch.randn(2, 2, 4, 4)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        bf = m(x)
    c, l = m[0], m[4]
    a = h(F.conv2d(h(x), h(c.weight), h(c.bias), padding=1)).relu()
    a = F.max_pool2d(a, 2).flatten(1)
    f16 = h(F.linear(h(a), h(l.weight), h(l.bias)))
    return {'name': 'cnn', 'x': flat(x), 'xShape': list(x.shape),
            'params': {k: flat(v) for k, v in m.state_dict().items()},
            'bfloat16': {'dtype': str(bf.dtype), 'y': flat(bf)},
            'float16': {'y': flat(f16), 'logSoftmax': flat(F.log_softmax(f16.float(), 1)), 'sum': float(f16.float().sum())},
            'yShape': list(bf.shape)}

print(json.dumps({'torch': torch.__version__, 'cases': [mlp_case(), cnn_case()]}))
