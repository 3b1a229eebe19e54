#!/usr/bin/env python3
"""Numerics contract: cltrain's training steps equal PyTorch's on the same
weights and data (LeNet, and a net with batch norm, on one and two devices).
Needs PyTorch: runs under $CLTRAIN_TORCH_PYTHON (a python that has torch) or
the current python; skipped (exit 77) when neither has it."""
import os
import subprocess
import sys
import tempfile

CLTRAIN = sys.argv[1]
try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError:
    # A virtual environment's python resolves to the system one, so paths
    # cannot tell them apart: a marker keeps this to one re-exec.
    other = os.environ.get('CLTRAIN_TORCH_PYTHON')
    if other and not os.environ.get('CLTRAIN_TORCH_REEXEC'):
        os.environ['CLTRAIN_TORCH_REEXEC'] = '1'
        try:
            os.execv(other, [other, *sys.argv])
        except OSError as e:
            print(f'CLTRAIN_TORCH_PYTHON={other}: {e}', file=sys.stderr)
            sys.exit(1)
    print(f'skip: PyTorch not installed in {sys.executable} (set CLTRAIN_TORCH_PYTHON to a python that has it)')
    sys.exit(77)

DATA = '/usr/share/datasets/fashion-mnist'
if not os.path.isdir(DATA):
    print('skip: Fashion-MNIST not installed')
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish  # noqa: E402


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools', 'reference'))
from torch_twins import ResNet18, idx as read_idx, lenet  # noqa: E402


def idx(name):
    return read_idx(DATA, name)


B = 16
X = torch.tensor(idx('train-images-idx3-ubyte.gz')[:B], dtype=torch.float32).div(255).unsqueeze(1)
Y = torch.tensor(idx('train-labels-idx1-ubyte.gz')[:B], dtype=torch.long)

# model spec: (PyTorch twin, SGD steps). A deep net amplifies float
# rounding step after step, so resnet18 is compared after one step.
NETS = {
    'lenet': (lenet, 3),
    'conv:8:3:1:1,bn,relu,maxpool:2,conv:6:3:2:1,tanh,flatten,bn,dense:10':
        (lambda: nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(8, 6, 3, stride=2, padding=1), nn.Tanh(), nn.Flatten(), nn.BatchNorm1d(294),
                               nn.Linear(294, 10)), 3),
    'resnet18': (ResNet18, 1),
}

torch.manual_seed(0)
with tempfile.TemporaryDirectory() as tmp:
    for spec, (make, steps) in NETS.items():
        net = make()
        with torch.no_grad():  # non-trivial biases and scales
            for name, p in net.named_parameters():
                if p.dim() == 1:
                    p.uniform_(-0.2, 0.2) if name.endswith('bias') else p.uniform_(0.5, 1.5)
        state = {k: v.detach().numpy().copy() for k, v in net.state_dict().items() if 'num_batches' not in k}
        init = os.path.join(tmp, 'init.npz')
        np.savez(init, **state)
        # The reference: PyTorch in float64; PyTorch's own float32 run shows
        # how far float rounding alone moves the result.
        def train(dtype):
            twin = make().to(dtype)
            twin.load_state_dict({k: v.detach().clone().to(dtype) if v.is_floating_point() else v.detach().clone()
                                  for k, v in net.state_dict().items()}, strict=True)
            opt = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
            twin.train()
            for step in range(steps):
                opt.zero_grad()
                nn.CrossEntropyLoss()(twin(X.to(dtype)), Y).backward()
                opt.step()
            return {k: v.detach().double().numpy() for k, v in twin.state_dict().items() if 'num_batches' not in k}
        want, f32 = train(torch.float64), train(torch.float32)
        for devices in ('0', '0,1'):
            out = os.path.join(tmp, 'after.npz')
            p = subprocess.run([CLTRAIN, 'train', '--model', spec, '--devices', devices, '--sync-bn',
                                '--limit-train', str(B), '--limit-test', '16', '--batch-size', str(B), '--steps', str(steps),
                                '--no-shuffle', '--init-from', init, '--export-npz', out, '--lr', '0.1',
                                '--momentum', '0.9', '--weight-decay', '1e-3', '--quiet'],
                               capture_output=True, text=True)
            check(p.returncode == 0, f'{spec} on {devices}: {p.stderr}')
            if p.returncode:
                continue
            got = np.load(out)
            check(sorted(got.files) == sorted(want), f'{spec}: names {sorted(got.files)} vs {sorted(want)}')
            worst = 0
            for k in want:
                if k not in got.files:
                    continue
                # Error against float64 PyTorch, next to float32 PyTorch's own
                # error, both relative to how far the steps moved the tensor.
                moved = max(np.abs(want[k] - state[k]).max(), 1e-7 * np.abs(want[k]).max(), 1e-30)
                err = np.abs(got[k] - want[k]).max() / moved
                ref = np.abs(f32[k] - want[k]).max() / moved
                worst = max(worst, err / max(ref, 1e-5))
                check(err <= 10 * ref + 1e-4,
                      f'{spec} on devices {devices}: {k} is off by {err:.2e} of its change (PyTorch float32: {ref:.2e})')
            print(f'{spec} on devices {devices}: {len(want)} tensors match PyTorch after {steps} SGD steps '
                  f'(worst error {worst:.1f}x PyTorch float32\'s)')

finish()
