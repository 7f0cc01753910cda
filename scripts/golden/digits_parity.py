#!/usr/bin/env python3
"""Training parity data for the digits CNN (issue #22 part B), from PyTorch 1.13.

The README recipe's CNN with dropout 0, started from one seeded initial state_dict, trained on
the first 1437 rows of examples/digits/digits.csv in batches of 32 taken in a stored order
(a torch.randperm per epoch). Writes tests/golden-kiln/nn_api/digits/:
  init.safetensors   the initial state_dict
  parity.json        the batch order (2 epochs) and, per optimizer, the loss of every step
                     (10 steps each; Adam: 2 epochs = 90 steps)

Run: python3 scripts/golden/digits_parity.py
"""
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
try:
    from safetensors.torch import save_file
except ImportError:  # the same format, written by hand
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from st_write import save_file

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
OUT = os.path.join(ROOT, 'tests', 'golden-kiln', 'nn_api', 'digits')
TRAIN_ROWS, BATCH = 1437, 32
torch.set_num_threads(1)


def model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.0),
        nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))


OPTIMIZERS = {
    'Adam': (lambda p: torch.optim.Adam(p, lr=1e-3), 90),
    'AdamW': (lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01), 10),
    'SGD_momentum': (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), 10),
    'SGD_nesterov_wd': (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4), 10),
    'RMSprop': (lambda p: torch.optim.RMSprop(p, lr=1e-3), 10),
    'Adagrad': (lambda p: torch.optim.Adagrad(p, lr=0.01), 10),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    data = np.loadtxt(os.path.join(ROOT, 'examples', 'digits', 'digits.csv'), delimiter=',', skiprows=1, dtype=np.float64)
    x = torch.tensor(data[:TRAIN_ROWS, 1:] / 16, dtype=torch.float32).reshape(-1, 1, 8, 8)
    y = torch.tensor(data[:TRAIN_ROWS, 0], dtype=torch.int64)
    torch.manual_seed(0)
    init = model().state_dict()
    save_file({k: v.contiguous() for k, v in init.items()}, os.path.join(OUT, 'init.safetensors'))
    g = torch.Generator().manual_seed(0)
    order = [torch.randperm(TRAIN_ROWS, generator=g).tolist() for _ in range(2)]
    batches = []
    for ep in order:
        for s in range(0, TRAIN_ROWS, BATCH):
            batches.append(ep[s:s + BATCH])
    losses = {}
    for name, (make, steps) in OPTIMIZERS.items():
        m = model()
        m.load_state_dict(init)
        m.train()
        opt = make(m.parameters())
        ls = []
        for b in batches[:steps]:
            idx = torch.tensor(b)
            opt.zero_grad()
            loss = F.cross_entropy(m(x[idx]), y[idx])
            loss.backward()
            opt.step()
            ls.append(loss.item())
        losses[name] = ls
    with open(os.path.join(OUT, 'parity.json'), 'w') as f:
        json.dump({'torch': torch.__version__, 'batchSize': BATCH, 'order': order, 'losses': losses}, f)
    print('wrote', os.path.abspath(OUT))


if __name__ == '__main__':
    main()
