"""Writes the real-size benchmark's PyTorch models (bench/realsize/run.mjs) into a cache folder.

For each model: <name>.onnx (exported by torch.onnx with a dynamic batch axis) and
<name>.safetensors (the state_dict, PyTorch's keys, float32), plus manifest.json (parameter
counts, float32 weight bytes, versions). Invariant: the numbers depend only on the seed and the
PyTorch version (random initialization, then BatchNorm statistics and affine parameters drawn
non-trivially so folding them is tested), and nothing large is committed — run.mjs calls this at
benchmark time when the cache is missing or was written by another version of this file.

Usage: python3 bench/realsize/generate.py CACHE_DIR
Needs Debian's python3-torch, python3-torchvision and python3-onnx; python3-safetensors writes the
state dict when installed (else the writer below, same bytes layout).
"""

import json
import os
import sys

import struct

import torch
import torchvision

try:
    from safetensors.torch import save_file
except ImportError:  # python3-safetensors missing: the format is small enough to write here
    save_file = None

DTYPES = {torch.float32: ('F32', 4), torch.int64: ('I64', 8)}


def write_safetensors(sd, path):
    """safetensors.torch.save_file's output: u64 header length, JSON header, the raw little-endian data."""
    if save_file is not None:
        save_file(sd, path)
        return
    header, blobs, offset = {}, [], 0
    for key, t in sd.items():
        code, size = DTYPES[t.dtype]
        data = t.contiguous().numpy().astype(t.numpy().dtype.newbyteorder('<')).tobytes()
        assert len(data) == t.numel() * size
        header[key] = {'dtype': code, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)

SEED = 15
OPSET = 14


def resnet18():
    model = torchvision.models.resnet18()  # random weights (no download)
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.weight.copy_(torch.rand(c, generator=g) * 1.0 + 0.5)
                m.bias.copy_(torch.rand(c, generator=g) * 0.4 - 0.2)
                m.running_mean.copy_(torch.rand(c, generator=g) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 1.5 + 0.5)
    return model.eval(), torch.randn(1, 3, 224, 224, generator=g)


def transformer():
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, dropout=0.1, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
    g = torch.Generator().manual_seed(SEED + 2)
    with torch.no_grad():
        # TransformerEncoder deep-copies one layer: draw every layer's weights anew (equal layers
        # would let the ONNX exporter store one copy). Zero biases and LayerNorm's (1, 0) would
        # hide a swapped or missing tensor: draw them too.
        for m in model.modules():
            if isinstance(m, torch.nn.MultiheadAttention):
                m._reset_parameters()
                m.in_proj_bias.copy_(torch.rand(m.in_proj_bias.shape, generator=g) * 0.2 - 0.1)
            elif isinstance(m, torch.nn.Linear):
                m.reset_parameters()
            elif isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 1.0 + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) * 0.4 - 0.2)
    return model.eval(), torch.randn(1, 128, 512, generator=g)


MODELS = {'resnet18': resnet18, 'transformer': transformer}


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    manifest = {'torch': torch.__version__, 'torchvision': torchvision.__version__, 'opset': OPSET, 'models': {}}
    for name, build in MODELS.items():
        model, example = build()
        sd = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
        write_safetensors(sd, os.path.join(out, f'{name}.safetensors'))
        floats = sum(v.numel() for v in sd.values() if v.dtype == torch.float32)
        params = sum(p.numel() for p in model.parameters())
        path = os.path.join(out, f'{name}.onnx')
        # The exporter traces with gradients on, so TransformerEncoderLayer takes its plain
        # (exportable) path, not the fused inference kernel.
        torch.onnx.export(model, (example,), path, input_names=['x'], output_names=['y'],
                          dynamic_axes={'x': {0: 'N'}, 'y': {0: 'N'}}, opset_version=OPSET, do_constant_folding=True)
        manifest['models'][name] = {'parameters': params, 'float32WeightBytes': floats * 4, 'inputShape': list(example.shape)}
        print(f'bench/realsize/generate.py: {name}: {params} parameters, {os.path.getsize(path)} bytes of ONNX', file=sys.stderr)
    with open(os.path.join(out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=2)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: python3 bench/realsize/generate.py CACHE_DIR')
    main(sys.argv[1])
