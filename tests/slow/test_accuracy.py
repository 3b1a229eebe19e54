#!/usr/bin/env python3
"""Accuracy regressions (suite `slow`, minutes): the README's LeNet run and
ResNet-18 on a subset of Fashion-MNIST, on one and two devices. The bounds
sit below what these runs reach (LeNet 0.843, the tutorial's 0.84; ResNet-18
subset 0.78-0.82 after two epochs) so that noise between seeds and vendors
passes and a training bug does not."""
import json
import os
import subprocess
import sys

CLTRAIN = sys.argv[1]

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish  # noqa: E402


def epochs(name, *args):
    p = subprocess.run([CLTRAIN, 'train', '--json', '--quiet', *args], capture_output=True, text=True, timeout=1500)
    if p.returncode != 0:
        check(False, f'{name}: exit {p.returncode}: {p.stderr.strip()}')
        return []
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    for e in lines:
        print(f"{name}: epoch {e['epoch']} loss {e['loss']:.4f} test acc {e['test_acc']:.4f} "
              f"{e['samples_per_s']:.0f} samples/s", flush=True)
    return lines


if not os.path.isdir(os.environ.get('CLTRAIN_DATA', '/usr/share/datasets/fashion-mnist')):
    print('skip: Fashion-MNIST not installed')
    sys.exit(77)

# The README's command: LeNet, 10 epochs, batch 256, lr 0.2, all devices.
# Its late epochs swing by a few points (0.77-0.84 here), so the best of the
# last three is held to the bound.
e = epochs('lenet')
check(len(e) == 10 and max(x['test_acc'] for x in e[-3:]) >= 0.83, f'lenet: last three epochs {e[-3:]}')

# ResNet-18 (Xavier, batch 128, lr 0.1: the tutorial's settings) on 4096
# training samples for two epochs; per-device batch norm on two devices.
for devices in ('0', '0,1'):
    name = f'resnet18 on devices {devices}'
    e = epochs(name, '--model', 'resnet18', '--devices', devices, '--batch-size', '128', '--lr', '0.1',
               '--epochs', '2', '--limit-train', '4096', '--limit-test', '2000')
    check(len(e) == 2 and e[1]['loss'] < min(0.8, e[0]['loss']) and e[1]['test_acc'] >= 0.7, f'{name}: {e}')

# The large-batch recipe on all of Fashion-MNIST (CLTRAIN_ACCURACY_FULL=1:
# minutes on a GPU, hours on a CPU): two devices at batch 256 with the rate
# scaled to 0.2, one epoch of warmup and a cosine schedule must reach the
# one-device batch-128 constant-rate run of the same seed after two epochs.
# On an H100 (seeds 0 and 1): 0.9110 / 0.9114 against 0.9090 / 0.9016;
# without the cosine schedule the two-device run stays at 0.87-0.89. The
# 0.003 allowance is below the spread between seeds (0.007).
if os.environ.get('CLTRAIN_ACCURACY_FULL') == '1':
    base = ['--model', 'resnet18', '--epochs', '2', '--seed', '0']
    one = epochs('resnet18 1 device batch 128', *base, '--devices', '0', '--batch-size', '128', '--lr', '0.1')
    two = epochs('resnet18 2 devices batch 256 recipe', *base, '--devices', '0,1', '--batch-size', '256',
                 '--lr', '0.1', '--scale-lr', '--warmup-epochs', '1', '--lr-schedule', 'cosine')
    check(len(one) == 2 and len(two) == 2 and two[1]['test_acc'] >= one[1]['test_acc'] - 0.003,
          f'large-batch recipe: two devices {two[-1:]} against one {one[-1:]}')

finish()
