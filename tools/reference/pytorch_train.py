#!/usr/bin/env python3
"""Trains a builtin net in PyTorch the way `cltrain train` does (same net,
init scheme, plain SGD, shuffled epochs, test accuracy in inference mode
after each epoch) and prints cltrain's --json epoch lines: the side-by-side
reference for accuracy and speed figures. Needs torch and numpy.

  tools/reference/pytorch_train.py --model resnet18 --batch-size 128 --lr 0.1 --epochs 2 --seed 0

--data also takes an .npz of x_train, y_train, x_test, y_test (uint8 images,
NHWC when the last axis is 1, 3 or 4, else NCHW), as `cltrain train --data`
does: colour data such as CIFAR-10's shapes.
"""
import argparse
import json
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError:
    sys.exit('pytorch_train.py: needs PyTorch (pip install torch numpy in a virtual environment)')

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_twins import BUILTINS, idx  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument('--model', choices=sorted(BUILTINS), default='lenet')
ap.add_argument('--data', default=os.environ.get('CLTRAIN_DATA', '/usr/share/datasets/fashion-mnist'),
                help='directory of Fashion-MNIST IDX files, or an .npz of x_train, y_train, x_test, y_test')
ap.add_argument('--batch-size', type=int, default=256)
ap.add_argument('--lr', type=float, default=0.2)
ap.add_argument('--epochs', type=int, default=10)
ap.add_argument('--seed', type=int, default=0)
ap.add_argument('--init', choices=('normal', 'xavier'), help='default: xavier for resnet18, else normal')
ap.add_argument('--limit-train', type=int, help='use the first N training samples')
ap.add_argument('--limit-test', type=int, help='use the first N test samples')
ap.add_argument('--threads', type=int, default=os.cpu_count())
ap.add_argument('--device', default='cpu', help="torch device: cpu (default) or cuda (cuDNN's default algorithm choice)")
ap.add_argument('--fp32', action='store_true', help='no TF32 tensor cores on a GPU (PyTorch allows them in convolutions)')
a = ap.parse_args()
if min(a.batch_size, a.epochs, a.threads, a.limit_train or 1, a.limit_test or 1) < 1 or not a.lr > 0:
    ap.error('--batch-size, --epochs, --threads, --limit-* and --lr must be positive')

try:
    dev = torch.device(a.device)
    torch.empty(1, device=dev)
except (RuntimeError, AssertionError) as e:
    ap.error(f'--device {a.device}: {e}')
torch.backends.cudnn.allow_tf32 = not a.fp32
torch.manual_seed(a.seed)
torch.set_num_threads(a.threads)


def load_npz(path):
    """(x_train, y_train, x_test, y_test) from an .npz, images as float NCHW x/255."""
    with np.load(path) as z:
        out = []
        for split in ('train', 'test'):
            x = z[f'x_{split}']
            x = x[..., None] if x.ndim == 3 else x.transpose(0, 3, 1, 2) if x.shape[-1] in (1, 3, 4) else x
            out += [torch.tensor(x, dtype=torch.float32).div(255), torch.tensor(z[f'y_{split}'], dtype=torch.long)]
    return out


npz = load_npz(a.data) if a.data.endswith('.npz') else None
channels, classes = (npz[0].shape[1], int(npz[1].max()) + 1) if npz else (1, 10)
net = BUILTINS[a.model](channels, classes)
xavier = (a.init or ('xavier' if a.model == 'resnet18' else 'normal')) == 'xavier'
for m in net.modules():  # cltrain's schemes: weights Xavier-uniform or N(0, 0.01^2), biases 0
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        nn.init.xavier_uniform_(m.weight) if xavier else nn.init.normal_(m.weight, 0, 0.01)
        nn.init.zeros_(m.bias)


def load(split, limit):
    try:
        x = idx(a.data, f'{split}-images-idx3-ubyte.gz')
        y = idx(a.data, f'{split}-labels-idx1-ubyte.gz')
    except OSError as e:
        sys.exit(f'pytorch_train.py: --data {a.data}: {e}')
    x, y = x[:limit], y[:limit]
    return torch.tensor(x, dtype=torch.float32).div(255).unsqueeze(1), torch.tensor(y, dtype=torch.long)


if npz:
    xtr, ytr, xte, yte = npz[0][:a.limit_train], npz[1][:a.limit_train], npz[2][:a.limit_test], npz[3][:a.limit_test]
else:
    (xtr, ytr), (xte, yte) = load('train', a.limit_train), load('t10k', a.limit_test)
net, xtr, ytr, xte, yte = net.to(dev), xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)
opt = torch.optim.SGD(net.parameters(), lr=a.lr)
loss_fn = nn.CrossEntropyLoss()
steps = 0
for epoch in range(1, a.epochs + 1):
    net.train()
    t0, total, correct, seen = time.time(), 0.0, 0, 0
    perm = torch.randperm(len(xtr)).to(dev)
    for i in range(0, len(xtr), a.batch_size):
        b = perm[i:i + a.batch_size]
        out = net(xtr[b])
        loss = loss_fn(out, ytr[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        total += loss.item() * len(b)
        correct += (out.argmax(1) == ytr[b]).sum().item()
        seen += len(b)
    if dev.type == 'cuda':
        torch.cuda.synchronize()
    seconds = time.time() - t0
    net.eval()
    with torch.no_grad():
        right = sum((net(xte[i:i + 500]).argmax(1) == yte[i:i + 500]).sum().item() for i in range(0, len(xte), 500))
    print(json.dumps({'epoch': epoch, 'steps': steps, 'loss': round(total / seen, 6), 'train_acc': round(correct / seen, 6),
                      'test_acc': round(right / len(xte), 6), 'seconds': round(seconds, 4),
                      'samples_per_s': round(seen / seconds, 1), 'framework': f'pytorch {torch.__version__}',
                      'device': a.device, 'tf32': not a.fp32 and a.device != 'cpu', 'threads': a.threads}), flush=True)
