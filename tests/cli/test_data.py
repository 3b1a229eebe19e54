#!/usr/bin/env python3
"""cltrain on a user's own data: .npz archives and their directories,
--test-data, --layout and --label as the run record keeps them, CIFAR
directories, training without a test set, and a colour task that one
channel cannot solve trained to 95%. Every refusal names the option.
Exits 77 without numpy or an OpenCL device."""
import json
import os
import subprocess
import sys
import tempfile

CLTRAIN = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import COLOUR_NET as NET, COLOUR_OPTIONS as COMMON, check, colour_task, need_device, finish, need_numpy, runner  # noqa: E402

np = need_numpy()

need_device()

tmp = tempfile.mkdtemp(prefix='cltrain-data-')
cltrain = runner(CLTRAIN)

def epochs(r):
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith('{')]

images, labels = colour_task(np, 700, 3)
rng = np.random.default_rng(3)
train_npz, test_npz = os.path.join(tmp, 'train.npz'), os.path.join(tmp, 'test.npz')
np.savez(train_npz, images=images[:500], labels=labels[:500])
np.savez(test_npz, images=images[500:], labels=labels[500:])

# One archive of one pair: training runs and says there is no test set.
r = cltrain('train', '--data', train_npz, '--epochs', 2, '--json', *COMMON)
check(r.returncode == 0, f'one pair: exit {r.returncode}: {r.stderr}')
check(all(e['test_acc'] is None for e in epochs(r)) and len(epochs(r)) == 2, f'one pair: {r.stdout}')
ck0 = os.path.join(tmp, 'ck0.npz')
r = cltrain('train', '--data', train_npz, '--epochs', 1, '--save', ck0, *COMMON)
check('test acc - (no test set)' in r.stdout, f'one pair, text line: {r.stdout}')

# --test-data names the test set; the colour task reaches 95%; the record keeps the test set.
ck = os.path.join(tmp, 'ck.npz')
r = cltrain('train', '--data', train_npz, '--test-data', test_npz, '--epochs', 4, '--json', '--save', ck, *COMMON)
e = epochs(r)
check(r.returncode == 0 and e and e[-1]['test_acc'] >= 0.95, f'colour task: exit {r.returncode}: {r.stdout} {r.stderr}')
r = cltrain('eval', '--resume', ck, '--json', '--devices', 0)
check(r.returncode == 0 and json.loads(r.stdout)['samples'] == 200, f'eval --resume uses the recorded --test-data: {r.stdout} {r.stderr}')
r = cltrain('eval', '--resume', ck, '--data', train_npz, '--test-data', train_npz, '--json', '--devices', 0)
check(r.returncode == 0 and json.loads(r.stdout)['samples'] == 500, f'eval --test-data overrides: {r.stdout} {r.stderr}')

# A directory of train.npz and test.npz has its test split.
d = os.path.join(tmp, 'dir')
os.mkdir(d)
os.link(train_npz, os.path.join(d, 'train.npz'))
os.link(test_npz, os.path.join(d, 'test.npz'))
r = cltrain('train', '--data', d, '--epochs', 1, '--json', *COMMON)
check(r.returncode == 0 and epochs(r) and epochs(r)[0]['test_acc'] is not None, f'npz directory: {r.stdout} {r.stderr}')

# --layout: these images read as NCHW are 8 channels of 8 x 3, and the record keeps that.
ck2 = os.path.join(tmp, 'ck2.npz')
r = cltrain('train', '--data', train_npz, '--test-data', test_npz, '--layout', 'nchw', '--epochs', 1,
            '--save', ck2, '--model', 'flatten,dense:3', '--devices', 0)
check(r.returncode == 0, f'--layout nchw: exit {r.returncode}: {r.stderr}')
r = cltrain('eval', '--resume', ck2, '--json', '--devices', 0)
check(r.returncode == 0, f'eval --resume keeps --layout nchw: {r.stderr}')
r = cltrain('eval', '--resume', ck2, '--layout', 'auto', '--devices', 0)
check(r.returncode != 0 and '(3, 8, 8)' in r.stderr, f'eval --layout auto against an NCHW net: {r.returncode} {r.stderr}')

# CIFAR-100 directories: fine labels by default, coarse with --label.
c100 = os.path.join(tmp, 'cifar-100-binary')
os.mkdir(c100)
px = rng.integers(0, 256, (60, 3, 32, 32), dtype=np.uint8)
fine, coarse = rng.integers(0, 100, 60), rng.integers(0, 20, 60)
recs = np.concatenate([np.stack([coarse, fine], 1).astype(np.uint8), px.reshape(60, -1)], axis=1)
recs[:50].tofile(os.path.join(c100, 'train.bin'))
recs[50:].tofile(os.path.join(c100, 'test.bin'))
r = cltrain('train', '--data', c100, '--model', 'conv:4:3:2,relu,gap,flatten,dense:100', '--epochs', 1,
            '--batch-size', 25, '--devices', 0)
check(r.returncode == 0, f'CIFAR-100 fine: {r.stderr}')
r = cltrain('train', '--data', c100, '--model', 'conv:4:3:2,relu,gap,flatten,dense:20', '--epochs', 1,
            '--batch-size', 25, '--devices', 0)
check(r.returncode != 0 and 'label' in r.stderr, f'CIFAR-100 fine labels on 20 classes: {r.returncode} {r.stderr}')
r = cltrain('train', '--data', c100, '--label', 'coarse', '--model', 'conv:4:3:2,relu,gap,flatten,dense:20',
            '--epochs', 1, '--batch-size', 25, '--devices', 0)
check(r.returncode == 0, f'CIFAR-100 --label coarse: {r.stderr}')
# a builtin's last layer takes the data's class count (100, or 20 coarse), and the checkpoint keeps it
ck100 = os.path.join(tmp, 'c100.npz')
for label, k in (('fine', 100), ('coarse', 20)):
    r = cltrain('train', '--data', c100, '--label', label, '--model', 'lenet', '--epochs', 1, '--batch-size', 25,
                '--devices', 0, '--save', ck100)
    check(r.returncode == 0, f'lenet on CIFAR-100 {label}: {r.stderr}')
    e = cltrain('eval', '--resume', ck100, '--devices', 0, '--json')
    check(e.returncode == 0, f'eval --resume of lenet on CIFAR-100 {label}: {e.stderr}')
    spec = bytes(np.load(ck100)['__cltrain__/spec']).decode()
    check(spec.endswith(f'dense:{k}'), f'the checkpoint keeps {k} classes: {spec}')

# --val-split holds out a fraction of each class and evaluates on it; --normalize auto
# and --augment go into the record, so eval --resume sees the same held-out set, and
# a resumed run with augmentation ends bit for bit where one without a stop ends.
vs = os.path.join(tmp, 'vs.npz')
aug = ['--data', train_npz, '--val-split', '0.2', '--normalize', 'auto', '--augment', 'crop:2,flip', *COMMON]
r = cltrain('train', *aug, '--epochs', 3, '--save', vs, '--json')
e = epochs(r)
check(r.returncode == 0 and e and e[-1]['test_acc'] is not None, f'--val-split run: {r.stdout} {r.stderr}')
held = sum(round(0.2 * int(np.sum(labels[:500] == c))) for c in range(3))
r = cltrain('eval', '--resume', vs, '--json', '--devices', 0)
check(r.returncode == 0 and json.loads(r.stdout)['samples'] == held, f'eval --resume: the held-out {held}: {r.stdout} {r.stderr}')
whole, part = os.path.join(tmp, 'whole.npz'), os.path.join(tmp, 'part.npz')
r1 = cltrain('train', *aug, '--epochs', 3, '--export-npz', whole, '--quiet')
r2 = cltrain('train', *aug, '--epochs', 1, '--save', part, '--quiet')
r3 = cltrain('train', '--resume', part, '--epochs', 3, '--export-npz', part + '.out.npz', '--quiet', '--devices', 0)
same = all(x.returncode == 0 for x in (r1, r2, r3)) and open(whole, 'rb').read() == open(part + '.out.npz', 'rb').read()
check(same, f'augmented run resumed after epoch 1 equals the run without a stop: {r1.stderr} {r2.stderr} {r3.stderr}')
r = cltrain('eval', '--resume', vs, '--val-split', '0.3', '--devices', 0)
check(r.returncode == 2 and '--val-split' in r.stderr, f'eval --val-split against the record: {r.returncode} {r.stderr}')
# the held-out set eval sees is the one the run held out: the same accuracy as the run's last line
last = epochs(cltrain('train', *aug, '--epochs', 2, '--json', '--save', vs + '2'))[-1]
r = cltrain('eval', '--resume', vs + '2', '--json', '--devices', 0)
check(r.returncode == 0 and abs(json.loads(r.stdout)['test_acc'] - last['test_acc']) < 1e-9,
      f'eval --resume evaluates the held-out set of the run: {r.stdout} against {last}')
r = cltrain('train', '--data', train_npz, '--val-split', '0.2', '--test-data', test_npz, *COMMON)
check(r.returncode == 2 and '--val-split and --test-data' in r.stderr, f'--val-split with --test-data: {r.stderr}')
r = cltrain('train', '--resume', part, '--val-split', '0.3', '--epochs', 2)
check(r.returncode == 2 and '--val-split' in r.stderr, f'--val-split against the record: {r.returncode} {r.stderr}')
# the same batches on two devices: the same run within the sums' rounding
one_dev = cltrain('train', *aug, '--epochs', 2, '--json')
two = [x if x != '0' else '0,1' for x in aug]
two_dev = cltrain('train', *two, '--epochs', 2, '--json')
l1, l2 = epochs(one_dev), epochs(two_dev)
check(l1 and l2 and abs(l1[-1]['loss'] - l2[-1]['loss']) <= 1e-4 * max(1, abs(l1[-1]['loss'])),
      f'augmented, 1 device vs 2: {l1[-1:]} {l2[-1:]}')

# An image folder of the same colour task (Pillow writes it): train/val folders,
# classes by name, a file of another type skipped and said once.
try:
    from PIL import Image
except ImportError:
    Image = None
    print('note: Pillow missing: the image folder part is skipped')
if Image:
    folder = os.path.join(tmp, 'pics')
    for split, lo, hi_ in (('train', 0, 500), ('val', 500, 700)):
        for k, name in enumerate(('blue', 'green', 'red')):
            os.makedirs(os.path.join(folder, split, name))
        for i in range(lo, hi_):
            cls = ('red', 'green', 'blue')[labels[i]]  # channel 0 is red, sorted index 2
            Image.fromarray(images[i], 'RGB').save(os.path.join(folder, split, cls, f'{i}.png'))
    open(os.path.join(folder, 'train', 'red', 'notes.txt'), 'w').write('x')
    named = os.path.join(tmp, 'named.npz')
    r = cltrain('train', '--data', folder, '--epochs', 4, '--json', '--export-npz', named, *COMMON)
    e = epochs(r)
    check(r.returncode == 0 and e and e[-1]['test_acc'] >= 0.95, f'image folder: {r.stdout} {r.stderr}')
    check(r.stderr.count('1 file(s) that are not .png, .jpg or .jpeg skipped') == 1, f'skipped said once: {r.stderr}')
    # the class names travel into the net's file, eval and predict
    if os.path.exists(named):
        check(bytes(np.load(named)['__cltrain__/classes']) == b'blue\ngreen\nred\n', 'class names in the export')
    r = cltrain('eval', '--init-from', named, '--data', folder, '--json', '--devices', 0)
    check(r.returncode == 0 and json.loads(r.stdout)['classes'] == ['blue', 'green', 'red'], f'eval names: {r.stdout} {r.stderr}')
    r = cltrain('predict', '--init-from', named, '--data', folder, '--limit-test', 3)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == 4 and all(x.split(',')[2] in ('blue', 'green', 'red') for x in lines[1:]),
          f'predict names the classes: {r.stdout} {r.stderr}')
    # image files named on the command line: as the folder predicts them
    files = sorted(os.path.join(folder, 'val', c, f) for c in ('blue', 'green', 'red')
                   for f in os.listdir(os.path.join(folder, 'val', c)))[:3]
    r = cltrain('predict', '--init-from', named, *files)
    got = [x.split(',') for x in r.stdout.splitlines()]
    check(r.returncode == 0 and got[0][0] == 'file' and [g[0] for g in got[1:]] == files
          and all(g[1] == os.path.basename(os.path.dirname(g[0])) for g in got[1:]), f'predict FILE...: {r.stdout} {r.stderr}')
    r2 = cltrain('predict', '--init-from', named, '--data', folder, '--limit-test', 3)
    check([g[1:] for g in got[1:]] == [x.split(',')[2:] for x in r2.stdout.splitlines()[1:]],
          f'files predict as the folder does: {r.stdout} {r2.stdout}')
    big = os.path.join(tmp, 'big.png')
    Image.fromarray(np.repeat(np.repeat(images[0], 2, axis=0), 2, axis=1), 'RGB').save(big)
    r = cltrain('predict', '--init-from', named, big)
    check(r.returncode == 1 and 'big.png is 16x16' in r.stderr and '8x8' in r.stderr and '--image-size' in r.stderr,
          f'another size refused naming both: {r.stderr}')
    r = cltrain('predict', '--init-from', named, '--image-size', 8, big)
    check(r.returncode == 0 and r.stdout.splitlines()[1].split(',')[1] == ('red', 'green', 'blue')[labels[0]], f'--image-size resizes: {r.stdout} {r.stderr}')
    r = cltrain('predict', '--init-from', named, '--data', folder, big)
    check(r.returncode == 2 and '--data' in r.stderr, f'files and --data: {r.stderr}')
    r = cltrain('train', '--data', folder, '--channels', 1, '--epochs', 1, '--json', *COMMON)
    check(r.returncode == 0, f'--channels 1 builds a 1-channel net: {r.stderr}')

    # PNGs and JPEGs decoded batch by batch (lazy) train bit for bit as decoded at load (eager), with
    # a held-out part, auto normalisation and augmentation; two lazy devices as one; eval --resume.
    mix = os.path.join(tmp, 'mix')
    for i in range(120):
        cls = os.path.join(mix, ('red', 'green', 'blue')[labels[i]])
        os.makedirs(cls, exist_ok=True)
        Image.fromarray(images[i], 'RGB').save(os.path.join(cls, f'{i}.{"png" if i % 2 else "jpg"}'))
    run = ['--data', mix, '--val-split', '0.25', '--normalize', 'auto', '--augment', 'crop:2,flip', *COMMON]
    ran = {}
    for mode in ('eager', 'lazy'):
        out = os.path.join(tmp, f'mix-{mode}.npz')
        r = cltrain('train', *run, '--epochs', 2, '--export-npz', out, '--save', out + '.ck', '--json',
                    env={'CLTRAIN_DATA_DECODE': mode})
        check(r.returncode == 0, f'{mode} folder: {r.stderr}')
        said = r.stderr.count('decoded batch by batch as they are read')
        check(said == (mode == 'lazy'), f'{mode} folder: said lazy decoding {said} time(s): {r.stderr}')
        kept = [{k: e[k] for k in ('loss', 'train_acc', 'test_acc')} for e in epochs(r)]  # not the timings
        ran[mode] = (open(out, 'rb').read() if r.returncode == 0 else mode, kept)
    check(ran['eager'] == ran['lazy'], 'a lazy folder trains bit for bit as an eager one')
    two = [x if x != '0' else '0,1' for x in run]
    r = cltrain('train', *two, '--epochs', 2, '--json', env={'CLTRAIN_DATA_DECODE': 'lazy'})
    l1, l2 = ran['lazy'][1], epochs(r)
    check(r.returncode == 0 and l1 and l2 and abs(l1[-1]['loss'] - l2[-1]['loss']) <= 1e-4 * max(1, abs(l1[-1]['loss'])),
          f'lazy, 1 device vs 2: {l1[-1:]} {l2[-1:]} {r.stderr}')
    r = cltrain('eval', '--resume', os.path.join(tmp, 'mix-lazy.npz.ck'), '--json', '--devices', 0,
                env={'CLTRAIN_DATA_DECODE': 'lazy'})
    check(r.returncode == 0 and l1 and abs(json.loads(r.stdout)['test_acc'] - l1[-1]['test_acc']) < 1e-9,
          f'eval --resume of a lazy folder: the held-out part as the run saw it: {r.stdout} {r.stderr}')
    # a PNG cut after its header passes a lazy load; its batch stops the run naming it
    cut = os.path.join(mix, 'red', sorted(os.listdir(os.path.join(mix, 'red')))[0])
    open(cut, 'r+b').truncate(60)
    r = cltrain('train', *run, '--epochs', 1, env={'CLTRAIN_DATA_DECODE': 'lazy'})
    check(r.returncode == 1 and cut in r.stderr and 'PNG' in r.stderr and 'Traceback' not in r.stderr,
          f'a file spoilt for a lazy run: {r.returncode} {r.stderr}')
    r = cltrain('train', *run, '--epochs', 1, env={'CLTRAIN_DATA_DECODE': 'never'})
    check(r.returncode != 0 and 'CLTRAIN_DATA_DECODE=never' in r.stderr, f'a bad decoding mode: {r.stderr}')

# Refusals.
r = cltrain('train', '--data', train_npz, '--normalize', '0.5:0.2', *COMMON)
check(r.returncode == 2 and '--normalize 0.5:0.2' in r.stderr and '3 channel' in r.stderr, f'--normalize count: {r.stderr}')
r = cltrain('train', '--data', train_npz, '--normalize', '0,0,0:1,0,1', *COMMON)
check(r.returncode == 2 and 'std' in r.stderr, f'--normalize zero std: {r.returncode} {r.stderr}')
r = cltrain('train', '--data', train_npz, '--augment', 'crop:0', *COMMON)
check(r.returncode == 2 and '--augment crop:0' in r.stderr, f'bad --augment: {r.returncode} {r.stderr}')
r = cltrain('train', '--data', train_npz, '--val-split', '1.5', *COMMON)
check(r.returncode == 2 and '--val-split' in r.stderr, f'--val-split 1.5: {r.returncode} {r.stderr}')
r = cltrain('train', '--data', train_npz, '--layout', 'hwc', *COMMON)
check(r.returncode == 2 and '--layout hwc' in r.stderr, f'bad --layout: {r.returncode} {r.stderr}')
r = cltrain('train', '--data', train_npz, '--label', 'medium', *COMMON)
check(r.returncode == 2 and '--label medium' in r.stderr, f'bad --label: {r.returncode} {r.stderr}')
r = cltrain('eval', '--resume', ck0, '--devices', 0)
check(r.returncode == 2 and 'no test split' in r.stderr and '--test-data' in r.stderr, f'eval without a test set: {r.stderr}')
r = cltrain('train', '--data', train_npz, '--test-data', os.path.join(tmp, 'missing.npz'), *COMMON)
check(r.returncode == 1 and '--test-data' in r.stderr and 'missing.npz' in r.stderr, f'missing --test-data: {r.stderr}')

finish()
