"""A minimal safetensors writer (used when the `safetensors` package is not installed): an
8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the
raw little-endian tensor bytes in header order."""
import json
import struct

import torch

_DT = {torch.float32: ('F32', 4), torch.int64: ('I64', 8), torch.int32: ('I32', 4), torch.bool: ('BOOL', 1), torch.float64: ('F64', 8)}


def save_file(tensors, path):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        dt, _ = _DT[t.dtype]
        raw = t.numpy().tobytes()
        header[name] = {'dtype': dt, 'shape': list(t.shape), 'data_offsets': [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
