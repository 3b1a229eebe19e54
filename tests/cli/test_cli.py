#!/usr/bin/env python3
"""cltrain: option checking, a short JSON run on two devices, NaN stop, bench."""
import json
import os
import resource
import struct
import subprocess
import sys
import zipfile

CLTRAIN = sys.argv[1]

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, device_count, finish  # noqa: E402


def run(*args, timeout=600, env=None):
    p = subprocess.run([CLTRAIN, *args], capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else {**os.environ, **env})
    return p.returncode, p.stdout, p.stderr


# Most checks train on two devices (POCL_DEVICES gives two on a CPU).
devices = device_count()
if devices < 2:
    print(f'skip: needs two OpenCL devices, {devices} visible')
    sys.exit(77)


# usage errors: exit 2 and one line naming the problem
for args, word in [(['train', '--batch-size', '0'], '--batch-size'),
                   (['train', '--lr', 'fast'], '--lr'),
                   (['train', '--momentum', '1.5'], '--momentum'),
                   (['train', '--bogus'], '--bogus'),
                   (['train', '--devices', '0,x'], '--devices'),
                   (['train', '--devices', '99'], 'device 99'),
                   (['train', '--init', 'zeros'], 'zeros'),
                   (['train', '--split', '1,2'], '--split'),
                   (['train', '--devices', '0,1', '--split', '1e39,1'], 'float32'),
                   (['train', '--devices', 'all', '--split', '1,1,1,1,1,1,1,1,1'], 'devices of --devices all'),
                   (['train', '--lr-schedule', 'multistep', '--lr-milestones', '1,,2'], 'empty entry'),
                   (['train', '--epochs'], '--epochs'),
                   (['train', '--model', 'conv:20,flatten,dense:10', '--limit-train', '10'], 'layer 0'),
                   (['train', 'extra'], 'extra'),
                   (['frobnicate'], 'frobnicate'),
                   (['train', '--precision', 'fp16'], '--precision'),
                   (['eval', '--init-from', 'x.npz', '--precision', 'half'], '--precision'),
                   (['bench'], 'train')]:
    rc, out, err = run(*args)
    check(rc == 2 and word in err and len(err.strip().splitlines()) == 1, f'{args}: rc {rc}, stderr {err!r}')

# a huge --model is quoted cut, in one short line
for cmd in (['train'], ['bench', 'train']):
    rc, out, err = run(*cmd, '--model', 'conv:4:3,' + 'x' * 100000)
    check(rc == 2 and len(err) < 600 and '...' in err, f'{cmd} huge --model: rc {rc}, {len(err)} bytes')

rc, out, err = run('train', '--help')
check(rc == 0 and '--batch-size' in out and 'default 256' in out, 'train --help documents defaults')

# eval and bench train take only the options they read: another one is refused
# by name, and their --help lists only their own
EVAL_ONLY = ['--init-from', '--resume', '--data', '--limit-test']
BENCH_ONLY = ['--steps', '--init', '--trace']
TRAIN_ONLY = ['--lr', '--momentum', '--weight-decay', '--epochs', '--seed', '--limit-train', '--no-shuffle',
              '--drop-last', '--log-csv', '--plot', '--export-npz', '--save', '--sync-bn', '--quiet']
FLAGS = {'--no-shuffle', '--drop-last', '--sync-bn', '--quiet'}
# eval takes --seed: the one --val-split holds out with
for cmd, refused in [(['eval'], [o for o in TRAIN_ONLY if o != '--seed'] + BENCH_ONLY),
                     (['bench', 'train'], TRAIN_ONLY + EVAL_ONLY)]:
    name = ' '.join(cmd)
    for opt in refused:
        args = [*cmd, '--init-from', 'x.npz'] if cmd == ['eval'] else [*cmd]
        args += [opt] if opt in FLAGS else [opt, '1']
        rc, out, err = run(*args)
        check(rc == 2 and f'{opt} does not apply to cltrain {name} (see cltrain {name} --help)' in err
              and len(err.strip().splitlines()) == 1, f'{args}: rc {rc}, stderr {err!r}')
    rc, out, err = run(*cmd, '--lr')  # its value missing: still refused by name
    check(rc == 2 and f'--lr does not apply to cltrain {name}' in err, f'{name} --lr: rc {rc}, stderr {err!r}')
    rc, out, err = run(*cmd, '--help')
    listed = {w.split('=')[0] for w in out.split() if w.startswith('--')}
    own = {'eval': ['--model', '--devices', '--split', '--batch-size', '--json', '--init-from', '--resume', '--data',
                    '--test-data', '--layout', '--label', '--normalize', '--val-split', '--seed', '--image-size',
                    '--channels',
                    '--limit-test', '--precision'],
           'bench train': ['--model', '--devices', '--split', '--batch-size', '--json', '--steps', '--init',
                           '--trace', '--precision']}[name]
    check(rc == 0 and listed == {*own, '--help'}, f'{name} --help lists {sorted(listed)}')
    check('default 256' in out and 'default equal' in out, f'{name} --help documents defaults')
rc, out, err = run('train', '--help')
listed = {w for w in out.split() if w.startswith('--')}
check(set(TRAIN_ONLY + EVAL_ONLY + BENCH_ONLY) <= listed, f'train --help lists every option: {sorted(listed)}')
rc, out, err = run('bench', 'train', '--devices', '0,1', '--split', '0,1', '--steps', '1')
check(rc == 2 and '--split' in err, f'bench train with no weight on the first device: rc {rc}, stderr {err!r}')
# their own options pass the parser: eval gets as far as the data (a
# checkpoint's run record is read before it), bench runs
for source, first in ((['--init-from', 'x.npz'], '/nonexistent-dir'), (['--resume', 'x.ck'], 'x.ck')):
    rc, out, err = run('eval', *source, '--model', 'lenet', '--data', '/nonexistent-dir', '--devices', '0,1',
                       '--split', '1,3', '--batch-size', '64', '--limit-test', '16', '--json')
    check(rc == 1 and first in err, f'eval {source[0]} with its options: rc {rc} {err!r}')
for split in ('3,1', 'auto'):
    rc, out, err = run('bench', 'train', '--model', 'lenet', '--devices', '0,1', '--split', split,
                       '--batch-size', '32', '--steps', '1', '--init', 'xavier', '--json')
    check(rc == 0 and [r['devices'] for r in json.loads(out)['runs']] == [1, 2],
          f'bench train --split {split} with its options: rc {rc} {err!r}')
rc, out, err = run('bench', 'train', '--model', 'lenet', '--devices', '0', '--batch-size', '32', '--steps', '1',
                   '--precision', 'fp32', '--json')
check(rc == 0 and json.loads(out)['runs'], f'bench train --precision fp32: rc {rc} {err!r}')

# output paths are checked before any training (here before the data is even
# looked at): what is not a regular file is never replaced, links are followed,
# two outputs on one file are refused; inputs that are not regular files never
# block
import stat
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    P = lambda name: os.path.join(tmp, name)
    os.mkfifo(P('fifo'))
    os.symlink('fifo', P('tofifo'))
    open(P('real.ck'), 'w').close()
    os.symlink('real.ck', P('link.ck'))
    os.mkdir(P('dir'))
    nodata = ['train', '--data', '/nonexistent-dir', '--limit-train', '10', '--quiet']
    for opt in ('--save', '--export-npz', '--plot', '--log-csv'):
        for path, word in [(P('fifo'), 'FIFO'), (P('tofifo'), 'FIFO'), ('/dev/null', 'character device'),
                           (P('dir'), 'directory'), (P('no/such/x'), 'does not exist'), ('', 'empty')]:
            rc, out, err = run(*nodata, opt, path, timeout=60)
            check(rc == 1 and opt in err and path in err and word in err and '/nonexistent-dir' not in err,
                  f'{opt} {path!r}: rc {rc}, stderr {err!r}')
    check(stat.S_ISFIFO(os.lstat(P('fifo')).st_mode) and stat.S_ISCHR(os.lstat('/dev/null').st_mode),
          'a refused output was left as it was')
    for a, b in [(P('x.npz'), P('x.npz')), (P('x.npz'), os.path.join(tmp, '.', 'x.npz')),
                 (P('real.ck'), P('link.ck'))]:
        rc, out, err = run(*nodata, '--save', a, '--export-npz', b, timeout=60)
        check(rc == 1 and 'same file' in err and '--save' in err and '--export-npz' in err,
              f'--save {a} --export-npz {b}: rc {rc}, stderr {err!r}')
    rc, out, err = run(*nodata, '--plot', P('real.ck'), '--log-csv', P('link.ck'), timeout=60)
    check(rc == 1 and 'same file' in err, f'--plot and --log-csv on one file: rc {rc}, stderr {err!r}')
    rc, out, err = run(*nodata, '--resume', P('link.ck'), '--export-npz', P('real.ck'), timeout=60)
    check(rc == 1 and 'same file' in err and 'destroy' in err, f'--export-npz over --resume: rc {rc} {err!r}')
    for cmd in (['train', '--resume'], ['eval', '--resume']):  # read before the data
        try:
            rc, out, err = run(*cmd, P('fifo'), '--limit-test', '16', timeout=60)
            check(rc == 1 and 'FIFO' in err and 'fifo' in err, f'{cmd} FIFO: rc {rc}, stderr {err!r}')
        except subprocess.TimeoutExpired:
            check(False, f'{cmd} FIFO blocks')



def write_idx(path, dims):
    """An IDX file of unsigned bytes (labels below 10 for 1-d files)."""
    import struct
    n = 1
    for d in dims:
        n *= d
    with open(path, 'wb') as f:
        f.write(struct.pack('>BBBB', 0, 0, 8, len(dims)) + b''.join(struct.pack('>I', d) for d in dims))
        f.write(bytes(i % 10 for i in range(n)))


def idx_dir(path, train_hw, test_hw, n_train=64, n_test=16):
    """A --data directory of square samples: train_hw for training, test_hw for test."""
    os.mkdir(path)
    for prefix, hw, n in (('train', train_hw, n_train), ('t10k', test_hw, n_test)):
        write_idx(os.path.join(path, f'{prefix}-images-idx3-ubyte'), (n, hw, hw))
        write_idx(os.path.join(path, f'{prefix}-labels-idx1-ubyte'), (n,))


# inputs checked before the first step: train and test samples of different
# shapes; a FIFO among the data files fails at once, named as a FIFO; devices
# all hidden by CLTRAIN_DEVICES="" are said to be hidden
with tempfile.TemporaryDirectory() as tmp:
    P = lambda name: os.path.join(tmp, name)
    idx_dir(P('mixed'), 28, 32)
    for cmd in (['train', '--epochs', '1'], ['train', '--model', 'conv:4:3,relu,gap,flatten,dense:10', '--epochs', '1']):
        rc, out, err = run(*cmd, '--data', P('mixed'), '--batch-size', '16', '--json', timeout=120)
        check(rc == 1 and out == '' and '1x28x28' in err and '1x32x32' in err and P('mixed') in err
              and len(err.strip().splitlines()) == 1, f'{cmd} on 28x28 train, 32x32 test: rc {rc} {out!r} {err!r}')
    idx_dir(P('fifo'), 28, 28)
    for name in ('train-images-idx3-ubyte', 't10k-labels-idx1-ubyte'):
        os.replace(P('fifo/' + name), P('keep'))
        os.mkfifo(P('fifo/' + name))
        for cmd in (['train'], ['eval', '--init-from', P('none.npz')])[:1 if name.startswith('train') else 2]:
            try:
                rc, out, err = run(*cmd, '--data', P('fifo'), '--steps' if cmd == ['train'] else '--limit-test', '1',
                                   timeout=60)
                check(rc == 1 and 'FIFO' in err and name in err, f'{cmd} --data with a FIFO {name}: rc {rc} {err!r}')
            except subprocess.TimeoutExpired:
                check(False, f'{cmd} --data with a FIFO {name} blocks')
        os.remove(P('fifo/' + name))
        os.replace(P('keep'), P('fifo/' + name))
    hidden = {**os.environ, 'CLTRAIN_DEVICES': ''}
    for cmd in (['train', '--steps', '1'], ['eval', '--init-from', P('none.npz')], ['bench', 'train', '--steps', '1']):
        p = subprocess.run([CLTRAIN, *cmd], capture_output=True, text=True, timeout=60, env=hidden)
        check(p.returncode == 1 and 'CLTRAIN_DEVICES=""' in p.stderr, f'{cmd} CLTRAIN_DEVICES="": {p.returncode} {p.stderr!r}')

data = os.environ.get('CLTRAIN_TEST_DATA', 'fashion-mnist')
rc, out, err = run('train', '--data', '/nonexistent-dir', '--limit-train', '10')
check(rc == 1 and '/nonexistent-dir' in err, f'missing data: rc {rc} {err!r}')

if not os.path.isdir('/usr/share/datasets/fashion-mnist') and data == 'fashion-mnist':
    print('skip: Fashion-MNIST not installed')
    sys.exit(77)

# a short run on two devices: JSON lines, loss falls, accuracy above chance
rc, out, err = run('train', '--devices', '0,1', '--limit-train', '2048', '--limit-test', '512',
                   '--epochs', '3', '--batch-size', '64', '--lr', '0.1', '--momentum', '0.9',
                   '--init', 'xavier', '--json', '--seed', '3')
check(rc == 0, f'short run rc {rc}: {err}')
lines = [json.loads(l) for l in out.splitlines() if l.strip()]
check(len(lines) == 3, f'{len(lines)} JSON lines for 3 epochs')
if len(lines) == 3:
    for key in ('epoch', 'loss', 'train_acc', 'test_acc', 'seconds', 'samples_per_s', 'devices'):
        check(key in lines[0], f'JSON lacks {key}')
    check(lines[2]['loss'] < lines[0]['loss'], f'loss falls: {[l["loss"] for l in lines]}')
    check(lines[2]['test_acc'] > 0.3, f'test accuracy above chance: {lines[2]["test_acc"]}')
    check([d['index'] for d in lines[0]['devices']] == [0, 1], 'devices listed')

# a tiny, slow run: its rate has 3 significant digits, never "0 samples/s" or "1 samples/s"
import re
rc, out, err = run('train', '--model', 'resnet18', '--limit-train', '2', '--batch-size', '2', '--limit-test', '2',
                   '--epochs', '1')
m = re.search(r', ([0-9.e+-]+) s/epoch, ([0-9.e+-]+) samples/s on', out)
check(rc == 0 and m, f'tiny run line: rc {rc} {out!r} {err!r}')
if m:
    rate = m.group(2)
    digits = rate.replace('.', '').lstrip('0')
    check(float(rate) > 0 and (float(rate) >= 1000 or ('.' in rate or float(rate) >= 100) and len(digits) <= 3),
          f'a rate of {rate} samples/s: 3 significant digits below 1000')

# --plot: a well-formed SVG with a path per curve
import math
import tempfile
import xml.etree.ElementTree as ET
with tempfile.TemporaryDirectory() as tmp:
    def plot_run(name, limit, epochs):
        """Trains with --plot; the SVG's root element, or None."""
        svg = os.path.join(tmp, name)
        rc, out, err = run('train', '--limit-train', str(limit), '--limit-test', '64', '--epochs', str(epochs),
                           '--batch-size', '64', '--plot', svg, '--quiet')
        check(rc == 0 and os.path.exists(svg), f'--plot {epochs} epochs rc {rc}: {err}')
        return ET.parse(svg).getroot() if os.path.exists(svg) else None

    root = plot_run('curves.svg', 256, 2)
    if root is not None:
        paths = [e for e in root.iter() if e.tag.endswith('path')]
        check(len(paths) == 3 and all(p.get('d', '').count('L') == 1 for p in paths),
              f'SVG has a 2-point path per curve: {[p.get("d") for p in paths]}')
    # ticks a person can read: x at whole epochs, y at 1-2-5 steps; both panels labelled, the legend
    # right of the data, the smoothed per-step loss under the per-epoch points
    root = plot_run('ticks.svg', 640, 3)
    if root is not None:
        texts = lambda cls: [e.text for e in root.iter() if e.tag.endswith('text') and e.get('class') == cls]
        check(texts('xtick') == ['0', '1', '2', '3'], f'x ticks at epochs: {texts("xtick")}')
        for cls in ('ytick-loss', 'ytick-acc'):
            v = [float(t) for t in texts(cls)]
            steps = {round(b - a, 9) for a, b in zip(v, v[1:])}
            ok = len(v) >= 3 and len(steps) == 1
            if ok:
                step = steps.pop()
                mant = step / 10 ** math.floor(math.log10(step))
                ok = any(abs(mant - m) < 1e-6 for m in (1, 2, 5)) and all(abs(x / step - round(x / step)) < 1e-6
                                                                          for x in v)
            check(ok, f'{cls} at a 1-2-5 step: {texts(cls)}')
        words = ' '.join(e.text or '' for e in root.iter() if e.tag.endswith('text'))
        check('loss' in words and 'accuracy' in words and 'epoch' in words, f'axis titles: {words}')
        frame = max(float(e.get('x')) + float(e.get('width')) for e in root.iter()
                    if e.tag.endswith('rect') and e.get('stroke'))
        legend = [float(e.get('x')) for e in root.iter() if e.tag.endswith('text') and (e.text or '').endswith(' accuracy')
                  and e.get('x')]
        check(legend and min(legend) > frame, f'the legend right of the panels (x {legend}, panels end at {frame})')
        steps_line = [e for e in root.iter() if e.tag.endswith('polyline') and e.get('class') == 'step_loss']
        check(len(steps_line) == 1 and len(steps_line[0].get('points', '').split()) == 30,
              'the per-step loss: 30 points for 3 epochs of 10 steps')
    rc, out, err = run('train', '--limit-train', '64', '--epochs', '1', '--plot', '/nonexistent-dir/x.svg', '--quiet')
    check(rc == 1 and '/nonexistent-dir/x.svg' in err, f'unwritable --plot: rc {rc} {err!r}')

# --steps stops early; a diverging run stops with a message naming epoch and step
rc, out, err = run('train', '--limit-train', '256', '--limit-test', '64', '--steps', '2', '--batch-size', '32',
                   '--json')
lines = [json.loads(l) for l in out.splitlines() if l.strip()]
check(rc == 0 and len(lines) == 1 and lines[0]['steps'] == 2, f'--steps 2: {out} {err}')
rc, out, err = run('train', '--limit-train', '512', '--limit-test', '64', '--lr', '1e5', '--epochs', '3',
                   '--batch-size', '32', '--quiet')
check(rc == 1 and 'epoch' in err and 'step' in err and ('NaN' in err or 'infinite' in err),
      f'NaN stop: rc {rc} {err!r}')
with tempfile.TemporaryDirectory() as tmp:
    ck = os.path.join(tmp, 'n.ck')
    rc, out, err = run('train', '--limit-train', '512', '--limit-test', '64', '--steps', '2', '--batch-size', '32',
                       '--quiet', '--save', ck)
    rc, out, err = run('train', '--resume', ck, '--lr', '1e5', '--epochs', '3', '--quiet', '--save', ck)
    check(rc == 1 and 'the last checkpoint, after step 2,' in err and 'n.ck' in err and '--lr 100000' in err,
          f'NaN stop names the checkpoint and the settings: {err!r}')

# .npz export / import, checkpoints and resume
import random
import signal
import time
with tempfile.TemporaryDirectory() as tmp:
    P = lambda name: os.path.join(tmp, name)
    common = ['--devices', '0,1', '--limit-train', '320', '--limit-test', '64', '--batch-size', '64',
              '--momentum', '0.9', '--lr', '0.05', '--init', 'xavier', '--quiet']
    rc, out, err = run('train', *common, '--steps', '8', '--export-npz', P('a.npz'), '--save', P('a.ck'))
    check(rc == 0 and os.path.exists(P('a.npz')) and os.path.exists(P('a.ck')), f'export and save: {rc} {err}')
    # resume after 3 steps, continue to 8: bit-identical parameters
    rc, out, err = run('train', *common, '--steps', '3', '--save', P('b.ck'))
    rc2, out, err2 = run('train', '--devices', '0,1', '--resume', P('b.ck'), '--steps', '8', '--limit-test', '64',
                         '--quiet', '--export-npz', P('b.npz'))
    check(rc == 0 and rc2 == 0, f'resume runs: {err} {err2}')
    check(open(P('a.npz'), 'rb').read() == open(P('b.npz'), 'rb').read(),
          'resumed run ends with the same parameters as the uninterrupted one')
    # --init-from the exported parameters, zero learning rate: exports the same bytes
    rc, out, err = run('train', *common, '--steps', '1', '--lr', '0', '--momentum', '0', '--init-from', P('a.npz'),
                       '--export-npz', P('c.npz'))
    check(rc == 0 and open(P('a.npz'), 'rb').read() == open(P('c.npz'), 'rb').read(),
          f'--export-npz then --init-from round trip: {err}')
    # eval of a checkpoint and of the npz agree
    rc, out1, err = run('eval', '--resume', P('a.ck'), '--limit-test', '200', '--json')
    rc2, out2, err2 = run('eval', '--init-from', P('a.npz'), '--limit-test', '200', '--json')
    check(rc == 0 and rc2 == 0 and json.loads(out1) == json.loads(out2), f'eval: {out1} {out2} {err} {err2}')
    # shared unevenly and in smaller batches: the same accuracy
    rc, out3, err = run('eval', '--resume', P('a.ck'), '--limit-test', '200', '--json', '--devices', '0,1',
                        '--split', '1,3', '--batch-size', '48')
    check(rc == 0 and json.loads(out3)['test_acc'] == json.loads(out1)['test_acc']
          and abs(json.loads(out3)['test_loss'] - json.loads(out1)['test_loss']) < 1e-4, f'eval --split: {out3} {err}')
    # a checkpoint of another model, a corrupt one, a wrong --init-from: clear refusals
    rc, out, err = run('train', '--init-from', P('a.ck'), '--steps', '9', '--quiet')
    check(rc == 1 and 'training checkpoint' in err and '--resume' in err, f'--init-from a checkpoint: {rc} {err!r}')
    rc, out, err = run('train', '--resume', P('a.ck'), '--model', 'lenet-max', '--steps', '9', '--quiet')
    check(rc == 1 and 'model' in err and 'avgpool' in err and 'maxpool' in err, f'other model refused: {rc} {err!r}')
    data = open(P('a.ck'), 'rb').read()
    open(P('bad.ck'), 'wb').write(data[:len(data) // 2])
    rc, out, err = run('eval', '--resume', P('bad.ck'))
    check(rc == 1 and 'bad.ck' in err, f'corrupt checkpoint refused: {rc} {err!r}')
    rc, out, err = run('train', '--init-from', P('a.npz'), '--model', 'conv:8:3,flatten,dense:10', '--steps', '1')
    check(rc == 1 and '0.weight' in err and '(8, 1, 3, 3)' in err, f'mismatched --init-from: {rc} {err!r}')
    # NaN or inf in loaded values: refused naming the entry and the index, never "lower the learning rate"
    def poisoned(src, dst, entry, value):
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w') as zout:
            for info in zin.infolist():
                b = zin.read(info)
                if info.filename == entry + '.npy':
                    b = b[:-4] + struct.pack('<f', value)
                zout.writestr(info.filename, b)
    poisoned(P('a.npz'), P('nan.npz'), '0.bias', float('nan'))
    rc, out, err = run('eval', '--init-from', P('nan.npz'), '--limit-test', '64')
    check(rc == 1 and '"0.bias"' in err and 'NaN at index (19,)' in err and 'learning rate' not in err,
          f'eval --init-from with NaN: {rc} {err!r}')
    # a zip bomb (256 MiB of zeros in about 250 KB) as a parameter of a checkpoint and of
    # --init-from: refused from its header, the peak memory no higher than a good file's
    def bombed(src, dst, entry):
        head = "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 1024), }"
        head = head + ' ' * (117 - len(head)) + '\n'
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w', zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                if info.filename != entry + '.npy':
                    zout.writestr(info.filename, zin.read(info))
                    continue
                with zout.open(entry + '.npy', 'w', force_zip64=True) as f:
                    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(head)) + head.encode())
                    zero = bytes(1 << 20)
                    for _ in range(256):
                        f.write(zero)

    for src, dst, args in ((P('a.ck'), P('bomb.ck'), ['eval', '--resume']),
                           (P('a.npz'), P('bomb.npz'), ['eval', '--init-from'])):
        bombed(src, dst, '7.weight')
        good = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        rc, out, err = run(*args, src, '--limit-test', '64')
        rc2, out, err2 = run(*args, dst, '--limit-test', '64')
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        check(rc == 0 and rc2 == 1 and '"7.weight"' in err2 and '(65536, 1024)' in err2,
              f'{args} zip bomb refused: {rc} {rc2} {err2!r}')
        check(os.path.getsize(dst) < 2 << 20 and peak - good < 128 * 1024,
              f'{args} zip bomb: {os.path.getsize(dst)} bytes raised the peak memory by {(peak - good) // 1024} MiB')
    poisoned(P('a.ck'), P('inf.ck'), 'momentum/7.bias', float('inf'))
    rc, out, err = run('train', '--resume', P('inf.ck'), '--steps', '9', '--quiet')
    check(rc == 1 and '"momentum/7.bias"' in err and '+inf at index (127,)' in err,
          f'--resume with inf: {rc} {err!r}')
    rc, out, err = run('train', '--resume', P('a.ck'), '--seed', '5', '--steps', '9')
    check(rc == 2 and '--seed' in err, f'conflicting --seed on resume: {rc} {err!r}')
    # killing a process while it saves leaves a loadable checkpoint
    ck = P('kill.ck')
    for attempt in range(4):
        p = subprocess.Popen([CLTRAIN, 'train', '--limit-train', '64', '--limit-test', '16', '--batch-size', '64',
                              '--epochs', '100000', '--save', ck, '--quiet'], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while not os.path.exists(ck) and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        time.sleep(random.uniform(0.05, 0.5))
        p.kill()
        p.wait()
        rc, out, err = run('eval', '--resume', ck, '--limit-test', '16')
        check(rc == 0, f'checkpoint after kill {attempt}: {rc} {err!r}')
    def stop_with(sig, ck, end=('--epochs', '100000')):
        """A long run saving to ck, sent sig once its first checkpoint exists: (exit status, stderr)."""
        p = subprocess.Popen([CLTRAIN, 'train', '--limit-train', '64', '--limit-test', '16', '--batch-size', '64',
                              *end, '--save', ck, '--quiet'], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not os.path.exists(ck) and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        p.send_signal(sig)
        err = p.communicate(timeout=60)[1]
        return p.returncode, err

    # Ctrl-C stops after the current step and saves; SIGTERM (schedulers,
    # timeout, kill) does the same with 143
    rc, err = stop_with(signal.SIGINT, P('int.ck'))
    check(rc == 130 and 'interrupted' in err and 'int.ck' in err, f'Ctrl-C: {rc} {err!r}')
    rc, err = stop_with(signal.SIGTERM, P('term.ck'))
    check(rc == 143 and 'SIGTERM' in err and 'term.ck' in err, f'SIGTERM: {rc} {err!r}')
    rc, out, err = run('eval', '--resume', P('term.ck'), '--limit-test', '16')
    check(rc == 0, f'checkpoint after SIGTERM: {rc} {err!r}')

    # resume means the same run: --resume alone goes on to the recorded end;
    # --epochs or --steps replaces it, saying so; a finished run says it is
    rc, err = stop_with(signal.SIGINT, P('end.ck'), ('--steps', '40'))
    check(rc == 130, f'a run to 40 steps stopped: {rc} {err!r}')
    rc, out, err = run('train', '--resume', P('end.ck'), '--limit-test', '16', '--json')
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    check(rc == 0 and lines and lines[-1]['steps'] == 40 and 'replaces' not in err,
          f'--resume alone ends at the recorded 40 steps: rc {rc} {[l["steps"] for l in lines]} {err!r}')
    rc, out, err = run('train', '--resume', P('end.ck'), '--limit-test', '16', '--json', '--epochs', '8',
                       '--save', P('end2.ck'))
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    check(rc == 0 and lines and lines[-1]['epoch'] == 8 and err.count('\n') == 1 and '--epochs 8 replaces' in err
          and '40 steps' in err and 'end.ck' in err,
          f'--epochs over a recorded end says so in one line: rc {rc} {err!r}')
    for ck, done in (('end2.ck', 'epochs'), ('end.ck', None)):
        args = ['--steps', '1'] if done is None else []  # at or below what is done: finished too
        rc, out, err = run('train', '--resume', P(ck), '--limit-test', '16', '--json', *args)
        check(rc == 0 and out == '' and 'complete' in err and ck in err,
              f'resuming finished {ck} {args}: rc {rc} {out!r} {err!r}')
    # the run record: a newer version is refused by train and eval, naming
    # both versions; a version 1 record (no end) still resumes, to the
    # command line's end or the default 10 epochs
    import zipfile

    def rewrite_entry(src, dst, name, edit):
        """Copies checkpoint src to dst with entry name's text (after the .npy header) edited."""
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w') as zout:
            for info in zin.infolist():
                data = zin.read(info)
                if info.filename == name + '.npy':
                    head, text = data.split(b'\n', 1)
                    text = edit(text.decode()).encode()
                    pad = 64 - (len(head) + 1) % 64 if (len(head) + 1) % 64 else 0
                    old_shape = head.split(b"'shape': (")[1].split(b',')[0]
                    head = head.replace(b"'shape': (" + old_shape + b",", b"'shape': (%d," % len(text))
                    head = head.rstrip(b' ')
                    head = head + b' ' * ((-(len(head) + 1)) % 64)
                    head = head[:8] + (len(head) + 1 - 10).to_bytes(2, 'little') + head[10:]
                    data = head + b'\n' + text
                zout.writestr(info, data)

    # --precision: recorded, taken back by a resume unless given; a bad value is the file's fault
    rc, out, err = run('train', '--limit-train', '64', '--limit-test', '16', '--batch-size', '64', '--steps', '2',
                       '--precision', 'fp32', '--save', P('fp32.ck'), '--quiet')
    check(rc == 0, f'train --precision fp32: {rc} {err!r}')
    with zipfile.ZipFile(P('fp32.ck')) as z:
        meta = z.read('__cltrain__/meta.npy').split(b'\n', 1)[1].decode()
    check('"precision": "fp32"' in meta, f'--precision fp32 in the run record: {meta[-80:]!r}')
    rewrite_entry(P('fp32.ck'), P('p16.ck'), '__cltrain__/meta', lambda t: t.replace('"fp32"', '"fp16"'))
    rc, out, err = run('train', '--resume', P('p16.ck'), '--limit-test', '16', '--steps', '3')
    check(rc == 1 and 'p16.ck' in err and 'precision' in err, f'a bad recorded precision: {rc} {err!r}')
    rewrite_entry(P('end.ck'), P('v99.ck'), '__cltrain__/meta', lambda t: t.replace('"version": 4', '"version": 99'))
    for cmd in (['train', '--resume', P('v99.ck')], ['eval', '--resume', P('v99.ck')]):
        rc, out, err = run(*cmd, '--limit-test', '16')
        check(rc == 1 and 'v99.ck' in err and '99' in err and 'version 4' in err, f'{cmd[0]} newer record: {rc} {err!r}')
    import re as _re
    v1 = lambda t: _re.sub(r', "target_epochs": \d+, "target_steps": \d+', '', t.replace('"version": 4', '"version": 1'))
    # version 3, before --test-data, --layout and --label: the defaults
    v3 = lambda t: _re.sub(r'"layout": \d+, "coarse": \d+, "test_data": "[^"]*", ', '', t.replace('"version": 4', '"version": 3'))
    rewrite_entry(P('end.ck'), P('v3.ck'), '__cltrain__/meta', v3)
    rc, out, err = run('train', '--resume', P('v3.ck'), '--limit-test', '16', '--json', '--steps', '42')
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    check(rc == 0 and lines and lines[-1]['steps'] == 42 and 'replaces the end' in err, f'a version 3 record resumes: {rc} {err!r}')
    rewrite_entry(P('end.ck'), P('v1.ck'), '__cltrain__/meta', v1)
    rc, out, err = run('train', '--resume', P('v1.ck'), '--limit-test', '16', '--json', '--steps', '42')
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    check(rc == 0 and lines and lines[-1]['steps'] == 42 and err == '', f'a version 1 record resumes: {rc} {err!r}')
    # a model read from a checkpoint that does not parse is the file's fault
    rewrite_entry(P('end.ck'), P('spec.ck'), '__cltrain__/spec', lambda t: 'conv:bogus')
    for cmd in ('train', 'eval'):
        rc, out, err = run(cmd, '--resume', P('spec.ck'), '--limit-test', '16')
        check(rc == 1 and 'spec.ck' in err and 'conv:bogus' in err and not err.startswith('cltrain: --model'),
              f'{cmd}: a bad model in a checkpoint: {rc} {err!r}')
    # a position beyond the data: both are said
    idx_dir(P('small'), 28, 28, n_train=64)
    rc, out, err = run('train', *common, '--steps', '3', '--save', P('pos.ck'))
    rc, out, err = run('train', '--resume', P('pos.ck'), '--data', P('small'), '--quiet', '--steps', '5')
    check(rc == 1 and 'batch 3 of epoch 1' in err and '1 batch per epoch' in err and '64 training samples' in err,
          f'a position beyond the data: {rc} {err!r}')
    # eval --resume evaluates on the run's own data (its record names it) unless --data says otherwise
    rc, out, err = run('train', '--data', P('small'), '--devices', '0', '--steps', '1', '--save', P('own-data.ck'),
                       '--quiet')
    rc, out, err = run('eval', '--resume', P('own-data.ck'), '--json')
    check(rc == 0 and json.loads(out)['samples'] == 16, f'eval --resume on the recorded data: {rc} {out!r} {err!r}')

    # outputs through links: the files behind them are written, the links
    # stay; a dead writer's temporary (unlocked, untouched for minutes)
    # beside the target goes
    for name in ('k.ck', 'k.npz', 'k.svg', 'k.csv'):
        open(P('real-' + name), 'w').close()
        os.symlink('real-' + name, P(name))
    stale = P('real-k.ck.tmp.999999999.7f.1.0')
    open(stale, 'w').close()
    os.utime(stale, (time.time() - 600, time.time() - 600))
    rc, out, err = run('train', '--limit-train', '64', '--limit-test', '16', '--batch-size', '64', '--steps', '1',
                       '--quiet', '--save', P('k.ck'), '--export-npz', P('k.npz'), '--plot', P('k.svg'),
                       '--log-csv', P('k.csv'))
    check(rc == 0, f'outputs through links: rc {rc} {err!r}')
    for name in ('k.ck', 'k.npz', 'k.svg', 'k.csv'):
        check(os.path.islink(P(name)) and os.path.getsize(P('real-' + name)) > 0, f'{name}: link kept, target written')
    check(not os.path.exists(stale), 'a dead writer\'s temporary was cleaned')
    # a FIFO among the kernel sources fails at once too
    kdir = P('kernels')
    os.mkdir(kdir)
    src = os.path.join(os.environ.get('CLTRAIN_SOURCE_ROOT', '.'), 'kernels')
    names = sorted(n for n in os.listdir(src) if n.endswith('.cl')) if os.path.isdir(src) else []
    fifo = 'loss.cl'  # a program device warm-up builds (every net has a loss)
    for n in names:
        if n == fifo:
            os.mkfifo(os.path.join(kdir, n))
        else:
            open(os.path.join(kdir, n), 'wb').write(open(os.path.join(src, n), 'rb').read())
    if fifo in names:
        try:
            p = subprocess.run([CLTRAIN, 'train', '--limit-train', '64', '--limit-test', '16', '--steps', '1', '--quiet'],
                               capture_output=True, text=True, timeout=60,
                               env={**os.environ, 'CLTRAIN_KERNEL_DIR': kdir, 'CLTRAIN_CACHE': '0'})
            check(p.returncode == 1 and 'FIFO' in p.stderr and fifo in p.stderr,
                  f'CLTRAIN_KERNEL_DIR with a FIFO: rc {p.returncode}, stderr {p.stderr!r}')
        except subprocess.TimeoutExpired:
            check(False, 'a FIFO in CLTRAIN_KERNEL_DIR blocks')
    # --init-from a FIFO fails at once
    os.mkfifo(P('fifo'))
    try:
        rc, out, err = run('train', '--init-from', P('fifo'), '--limit-train', '64', '--limit-test',
                           '16', '--steps', '1', timeout=60)
        check(rc == 1 and 'FIFO' in err, f'--init-from FIFO: rc {rc}, stderr {err!r}')
    except subprocess.TimeoutExpired:
        check(False, '--init-from FIFO blocks')

# bench: JSON with a run per device count
rc, out, err = run('bench', 'train', '--devices', '0,1', '--batch-size', '32', '--steps', '2', '--json')
check(rc == 0, f'bench rc {rc}: {err}')
if rc == 0:
    b = json.loads(out)
    check([r['devices'] for r in b['runs']] == [1, 2] and b['runs'][0]['scaling'] == 1.0, f'bench: {b}')
    check(b.get('efficiency', 0) > 0 and all('hidden_s' in r and 'exposed_s' in r for r in b['runs']), f'bench efficiency: {b}')

# --trace: Chrome trace-event JSON with a compute-queue, transfer-queue and
# host-thread track per device, layers by pass and buckets on them; host sums
# and write-backs where gradients are copied (CLTRAIN_SHARED_GRADS=0). PoCL's
# devices share them and read each other's: no host sum to show, the
# optimizer sums.
def trace_ok(path, what, copies):
    try:
        ev = json.load(open(path))['traceEvents']
    except (OSError, ValueError, KeyError) as e:
        check(False, f'{what}: trace not valid JSON: {e}')
        return
    names = {(e['pid'], e['args']['name']) for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
    cats = {(e['pid'], e['tid'], e['cat']) for e in ev if e['ph'] == 'X'}
    for d in (0, 1):
        check({(d, 'compute queue'), (d, 'transfer queue'), (d, 'host thread')} <= names, f'{what}: tracks {names}')
        want = {(d, 0, 'forward'), (d, 0, 'backward'), (d, 0, 'optimizer'), (d, 1, 'read')}
        check(want | ({(d, 1, 'write'), (d, 2, 'sum')} if copies else set()) <= cats,
              f'{what}: device {d} events {sorted(cats)}')
    check(all(e['dur'] >= 0 and e['ts'] >= 0 for e in ev if e['ph'] == 'X'), f'{what}: times on one clock')


with tempfile.TemporaryDirectory() as tmp:
    tr = os.path.join(tmp, 'bench.json')
    rc, out, err = run('bench', 'train', '--devices', '0,1', '--batch-size', '32', '--steps', '2', '--trace', tr)
    check(rc == 0, f'bench --trace: {rc} {err}')
    trace_ok(tr, 'bench train --trace', False)
    tr = os.path.join(tmp, 'train.json')
    rc, out, err = run('train', '--devices', '0,1', '--limit-train', '64', '--limit-test', '32', '--batch-size', '32',
                       '--epochs', '1', '--quiet', '--trace', tr, env={'CLTRAIN_SHARED_GRADS': '0'})
    check(rc == 0, f'train --trace: {rc} {err}')
    trace_ok(tr, 'train --trace, gradients copied', True)

# optimizers and schedules: usage errors name the option; Adam with a
# warmup + cosine schedule resumes mid-warmup bit for bit on two devices; the
# lr is in the JSON and CSV; eval loads an Adam checkpoint
for args, word in [(['train', '--optimizer', 'rmsprop'], 'rmsprop'),
                   (['train', '--betas', '0.9'], 'two values'),
                   (['train', '--optimizer', 'adam', '--betas', '0.9,1'], '[0, 1)'),
                   (['train', '--betas', '0.9,0.99'], 'adam or adamw'),
                   (['train', '--optimizer', 'adamw', '--momentum', '0.9'], '--momentum applies to --optimizer sgd'),
                   (['train', '--nesterov'], '--nesterov needs --momentum'),
                   (['train', '--eps', '-1', '--optimizer', 'adam'], '--eps'),
                   (['train', '--clip-grad-norm', '0'], '--clip-grad-norm'),
                   (['train', '--label-smoothing', '1'], '--label-smoothing'),
                   (['train', '--model', 'conv:4:3,flatten,dropout:1.5,dense:10'], 'dropout probability 1.5'),
                   (['train', '--model', 'conv:4:3,flatten,dropout:x,dense:10'], 'not a number'),
                   (['train', '--lr-schedule', 'linear'], 'linear'),
                   (['train', '--lr-schedule', 'step'], 'needs --lr-step'),
                   (['train', '--lr-milestones', '2,1', '--lr-schedule', 'multistep'], 'must increase'),
                   (['train', '--lr-min', '0.1'], 'applies to --lr-schedule cosine'),
                   (['train', '--lr-gamma', '0.5', '--lr-schedule', 'cosine'], '--lr-gamma'),
                   (['train', '--lr-schedule', 'cosine', '--lr', '0.1', '--lr-min', '0.2'], 'above --lr'),
                   (['train', '--warmup-steps', '2', '--warmup-epochs', '1'], 'exclude each other')]:
    rc, out, err = run(*args)
    check(rc == 2 and word in err and len(err.strip().splitlines()) == 1, f'{args}: rc {rc}, stderr {err!r}')
with tempfile.TemporaryDirectory() as tmp:
    P = lambda name: os.path.join(tmp, name)
    common = ['--devices', '0,1', '--limit-train', '320', '--limit-test', '64', '--batch-size', '64',
              '--optimizer', 'adam', '--lr', '0.002', '--weight-decay', '1e-3', '--lr-schedule', 'cosine',
              '--warmup-steps', '6', '--lr-min', '1e-4', '--clip-grad-norm', '5', '--init', 'xavier']
    rc, out, err = run('train', *common, '--steps', '10', '--export-npz', P('a.npz'), '--json', '--log-csv', P('a.csv'))
    lines = [json.loads(x) for x in out.splitlines()] if rc == 0 else []
    check(rc == 0 and len(lines) == 2 and abs(lines[0]['lr'] - 0.002 * 5 / 6) < 1e-9, f'adam run, lr in JSON: {rc} {out} {err}')
    csv = open(P('a.csv')).read().splitlines() if rc == 0 else []
    check(len(csv) == 3 and csv[0].endswith(',lr') and abs(float(csv[1].split(',')[-1]) - 0.002 * 5 / 6) < 1e-9,
          f'lr in the CSV: {csv}')
    rc, out, err = run('train', *common, '--steps', '3', '--save', P('b.ck'), '--quiet')
    rc2, out, err2 = run('train', '--devices', '0,1', '--resume', P('b.ck'), '--steps', '10', '--limit-test', '64',
                         '--quiet', '--export-npz', P('b.npz'))
    check(rc == 0 and rc2 == 0 and open(P('a.npz'), 'rb').read() == open(P('b.npz'), 'rb').read(),
          f'Adam + warmup + cosine resumed mid-warmup ends bit-identical: {err} {err2}')
    # --scale-lr: the rate times the devices; --warmup-epochs 2 of 5 steps each
    rc, out, err = run('train', '--devices', '0,1', '--limit-train', '320', '--limit-test', '64', '--batch-size', '64',
                       '--lr', '0.01', '--scale-lr', '--warmup-epochs', '2', '--epochs', '1', '--json')
    check(rc == 0 and abs(json.loads(out)['lr'] - 0.02 * 5 / 10) < 1e-9, f'--scale-lr with warmup: {rc} {out} {err}')
    rc, out, err = run('eval', '--resume', P('b.ck'), '--limit-test', '64', '--json')
    check(rc == 0 and 'test_acc' in out, f'eval of an Adam checkpoint: {rc} {err}')
    rc, out, err = run('train', '--resume', P('b.ck'), '--optimizer', 'sgd', '--steps', '4', '--quiet', '--limit-test', '64')
    check(rc == 1 and 'holds adam state' in err, f'resuming Adam state with sgd refused: {rc} {err!r}')

finish()
