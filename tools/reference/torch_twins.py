"""PyTorch twins of cltrain's builtin nets, with cltrain's parameter names,
and an IDX reader: shared by tests/cli/test_pytorch.py and pytorch_train.py."""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn


def idx(directory, name):
    """An IDX file (plain or .gz) as a NumPy array."""
    path = os.path.join(directory, name)
    b = (gzip.open if path.endswith('.gz') else open)(path, 'rb').read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], 'big') for i in range(nd)]
    return np.frombuffer(b, np.uint8, offset=4 + 4 * nd).reshape(dims)


class Residual(nn.Module):
    """The block cltrain's res:C[:S] computes, with its parameter names."""

    def __init__(self, cin, c, s):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c, 3, stride=s, padding=1)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c)
        self.shortcut = nn.Conv2d(cin, c, 1, stride=s) if s != 1 or cin != c else None

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class GapFlat(nn.Module):
    def forward(self, x):
        return x.mean((2, 3))


class ResNet18(nn.Module):
    """cltrain's `resnet18`: stem.*, stageS.B.*, head.1.*."""

    def __init__(self, channels=1, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(channels, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU())
        cin = 64
        for i, c in enumerate((64, 128, 256, 512)):
            s = 1 if i == 0 else 2
            setattr(self, f'stage{i + 1}', nn.Sequential(Residual(cin, c, s), Residual(c, c, 1)))
            cin = c
        self.head = nn.Sequential(GapFlat(), nn.Linear(512, classes))

    def forward(self, x):
        return self.head(self.stage4(self.stage3(self.stage2(self.stage1(self.stem(x))))))


def lenet(channels=1, classes=10):
    """cltrain's `lenet` (names 0.weight ... 9.bias), for 28x28 inputs."""
    return nn.Sequential(nn.Conv2d(channels, 20, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(20, 50, 5), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, classes))


BUILTINS = {'lenet': lenet, 'resnet18': ResNet18}
