#!/usr/bin/env python3
"""Writes the ONNX import test models: small PyTorch 1.13 models exported with torch.onnx.export
(opsets 13-17, constant folding on and off, dynamic batch), each as tests/golden-kiln/onnx/<name>.onnx
plus <name>.json holding inputs and PyTorch's outputs at two batch sizes.

Run from the repository root: python3 scripts/golden/onnx_import.py   (needs python3-torch, python3-onnx)
"""
import io, json, os
import torch
import torch.nn as nn
import torch.nn.functional as F
import onnx

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'tests', 'golden-kiln', 'onnx')


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 16), nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        return F.softmax(self.fc3(torch.tanh(h) * 2 - h.sigmoid() / 3 + h.pow(2).sqrt()), dim=-1)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = nn.BatchNorm2d(1)  # not after a conv: exported as BatchNormalization
        self.c1, self.b1 = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.c2, self.b2 = nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 2 * 2, 3)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.b1(self.c1(self.b0(x)))), 2)
        h = F.avg_pool2d(F.relu(self.b2(self.c2(h))), 3, stride=1, padding=1)
        return self.fc(torch.flatten(h, 1))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.down(x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.layers = nn.Sequential(Block(8, 8, 1), Block(8, 16, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc(self.pool(self.layers(self.stem(x))).reshape(x.shape[0], -1))


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 5, num_layers=2, batch_first=True)

    def forward(self, x):
        out, h = self.gru(x)
        return out + h[-1].unsqueeze(1)


class BiRnn(nn.Module):
    """Bidirectional LSTM then bidirectional GRU (direction='bidirectional' in ONNX)."""
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(8, 3, batch_first=True, bidirectional=True)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        y, g = self.gru(out)
        return y + (h.sum(0) + c.sum(0)).sum(-1, keepdim=True).unsqueeze(1) + g.sum(0).unsqueeze(1).repeat(1, 1, 2)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class Control(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if bool(y.sum() > 0):
            y = y * 2
        else:
            y = y - 1
        for i in range(x.size(0)):
            y = torch.tanh(y) + 0.5
        return y


class Arith(nn.Module):
    """Floor and Mod (fmod=1 from torch.fmod; torch.remainder exports through Floor), Clip, Where, Expand, Range."""
    def forward(self, x):
        y = torch.floor(x * 3) + torch.fmod(x * 5, 2) + torch.remainder(x * 7, 3)
        y = torch.where(x > 0, y.clamp(-1, 2), y.clamp(min=0.5)) + torch.arange(x.shape[1]).float()
        return y.expand(2, -1, -1).sum(0)


class Unsupported(nn.Module):
    """CELU exports as ONNX Celu, which Kiln does not import: the test checks the error."""
    def forward(self, x):
        return F.celu(x)


def tensor_json(t):
    return {'shape': list(t.shape), 'data': [round(float(v), 7) for v in t.detach().reshape(-1).tolist()]}


def write(name, model, shapes, opset, fold, dynamic, scripted=False):
    torch.manual_seed(0)
    model.eval()
    for m in model.modules():  # non-trivial BatchNorm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    examples = [torch.randn(*s) for s in shapes]
    target = torch.jit.script(model) if scripted else model
    buf = io.BytesIO()
    torch.onnx.export(target, (examples[0],), buf, opset_version=opset, do_constant_folding=fold,
                      input_names=['input'], output_names=['output'], dynamic_axes=dynamic)
    data = buf.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    with open(os.path.join(OUT, name + '.onnx'), 'wb') as f:
        f.write(data)
    with torch.no_grad():
        cases = [{'input': tensor_json(x), 'output': tensor_json(model(x))} for x in examples]
    ops = sorted({n.op_type for n in onnx.load_from_string(data).graph.node})
    with open(os.path.join(OUT, name + '.json'), 'w') as f:
        json.dump({'model': name, 'opset': opset, 'constant_folding': fold, 'onnx_ops': ops, 'cases': cases}, f)
    print(f'{name}: opset {opset}, folding {fold}, {len(data)} bytes, ops {ops}')


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    batch = {'input': {0: 'batch'}, 'output': {0: 'batch'}}
    write('mlp_opset13', Mlp(), [(2, 6), (5, 6)], 13, True, batch)
    write('convnet_opset17_nofold', ConvNet(), [(2, 1, 8, 8), (3, 1, 8, 8)], 17, False, batch)
    write('convnet_opset15_fold', ConvNet(), [(1, 1, 8, 8), (4, 1, 8, 8)], 15, True, batch)
    write('resnet_opset17', ResNet(), [(2, 3, 8, 8), (3, 3, 8, 8)], 17, True, batch)
    write('resnet_opset13_nofold', ResNet(), [(1, 3, 8, 8), (2, 3, 8, 8)], 13, False, batch)
    seq = {'input': {0: 'batch', 1: 'time'}, 'output': {0: 'batch'}}
    write('lstm_opset14', Lstm(), [(2, 5, 4), (3, 7, 4)], 14, True, seq)
    write('gru_opset17', Gru(), [(2, 4, 3), (3, 6, 3)], 17, True, {'input': {0: 'batch', 1: 'time'}, 'output': {0: 'batch', 1: 'time'}})
    write('birnn_opset15', BiRnn(), [(2, 4, 3), (1, 6, 3)], 15, True, {'input': {0: 'batch', 1: 'time'}, 'output': {0: 'batch', 1: 'time'}})
    enc = {'input': {0: 'batch', 1: 'time'}, 'output': {0: 'batch', 1: 'time'}}
    write('encoder_opset17', Encoder(), [(2, 5, 16), (3, 4, 16)], 17, True, enc)
    write('encoder_opset13_nofold', Encoder(), [(2, 5, 16), (1, 3, 16)], 13, False, enc)
    write('mlp_opset17_nofold', Mlp(), [(1, 6), (3, 6)], 17, False, batch)
    write('arith_opset17', Arith(), [(2, 5), (4, 5)], 17, False, batch)
    write('unsupported_celu_opset17', Unsupported(), [(2, 3), (1, 3)], 17, True, batch)
    write('control_opset16', Control(), [(2, 4), (3, 4)], 16, True, batch, scripted=True)


if __name__ == '__main__':
    main()
