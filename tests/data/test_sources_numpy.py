#!/usr/bin/env python3
"""Dataset sources against NumPy, the independent reader: .npz archives
(Keras' four arrays, one pair by name or by kind), a directory of .npy
files, every layout rule, and CIFAR-10/100 files written and parsed here
with NumPy; each must give the same floats (x/255 for bytes), labels and
class count; every refusal names the file and the problem.
Usage: test_sources_numpy.py DATASET_DUMP. Exits 77 without numpy."""
import json
import os
import subprocess
import sys
import tempfile

DUMP = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish, need_numpy  # noqa: E402

np = need_numpy()

def dump(*args):
    r = subprocess.run([DUMP, *map(str, args)], capture_output=True, text=True, timeout=120)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else r.stderr.strip())

def as_floats(images):
    """What cltrain should give: NCHW float32, x/255 for bytes."""
    a = np.asarray(images)
    f = a.astype(np.float32) / np.float32(255) if a.dtype == np.uint8 else a.astype(np.float32)
    return np.ascontiguousarray(f).view(np.uint32).ravel().tolist()

def same(what, args, images_nchw, labels, classes=None):
    rc, got = dump(*args)
    check(rc == 0, f'{what}: dataset_dump failed: {got}')
    if rc:
        return
    n, c, h, w = images_nchw.shape
    check(got['n'] == n and got['shape'] == [c, h, w], f'{what}: {got["n"]} x {got["shape"]}, want {n} x {[c, h, w]}')
    check(got['labels'] == [int(x) for x in labels], f'{what}: labels differ')
    want_classes = classes if classes is not None else int(np.max(labels)) + 1
    check(got['classes'] == want_classes, f'{what}: {got["classes"]} classes, want {want_classes}')
    check(got['bits'] == as_floats(images_nchw), f'{what}: pixel values differ')

def refused(what, args, *needles):
    rc, got = dump(*args)
    check(rc == 1 and all(s in got for s in needles), f'{what}: exit {rc}, message {got!r} lacks {needles}')

rng = np.random.default_rng(5)
tmp = tempfile.mkdtemp(prefix='cltrain-sources-')

# Keras' archive: x_train (N, H, W) uint8, y_train int64; the test pair too.
xtr, ytr = rng.integers(0, 256, (7, 4, 5), dtype=np.uint8), rng.integers(0, 10, 7)
xte, yte = rng.integers(0, 256, (3, 4, 5), dtype=np.uint8), rng.integers(0, 10, 3)
keras = os.path.join(tmp, 'mnist.npz')
np.savez(keras, x_train=xtr, y_train=ytr, x_test=xte, y_test=yte)
same('keras train', [keras, 'train'], xtr[:, None], ytr)
same('keras test', [keras, 'test'], xte[:, None], yte)

# One pair, NHWC float32 colour images with uint8 labels, by name.
im = rng.standard_normal((6, 4, 5, 3)).astype(np.float32)
lb = np.array([0, 2, 1, 2, 0, 1], np.uint8)
one = os.path.join(tmp, 'colour.npz')
np.savez_compressed(one, images=im, labels=lb)
same('one pair, NHWC by its last axis', [one, 'train'], im.transpose(0, 3, 1, 2), lb)
rc, got = dump(one, 'test')
check(rc == 0 and got == {'none': True}, f'one pair has no test split: {rc} {got}')
same('one pair given as test data', [one, 'test', 'auto', 'fine', 'any'], im.transpose(0, 3, 1, 2), lb)
same('one pair read as NCHW on request', [one, 'train', 'nchw'], im, lb)

# The only two arrays, unnamed; (N, C, H, W) kept as it is; int32 labels.
nchw = rng.integers(0, 256, (4, 2, 3, 6), dtype=np.uint8)
lab = np.array([3, 1, 0, 2], np.int32)
anon = os.path.join(tmp, 'anon.npz')
np.savez(anon, lab, nchw)  # arr_0 (labels), arr_1 (images)
same('two unnamed arrays, NCHW', [anon, 'train'], nchw, lab)
same('forced NHWC', [anon, 'train', 'nhwc'], nchw.transpose(0, 3, 1, 2), lab)

# A directory of .npy files, and one of train.npz/test.npz.
npyd = os.path.join(tmp, 'npy')
os.mkdir(npyd)
np.save(os.path.join(npyd, 'train_images.npy'), xtr)
np.save(os.path.join(npyd, 'train_labels.npy'), ytr.astype(np.int16))
same('npy directory, train', [npyd, 'train'], xtr[:, None], ytr)
rc, got = dump(npyd, 'test')
check(rc == 0 and got == {'none': True}, f'npy directory without test files: {rc} {got}')
np.save(os.path.join(npyd, 'test_images.npy'), xte)
refused('npy test images without labels', [npyd, 'test'], 'test_images.npy', 'test_labels.npy')
np.save(os.path.join(npyd, 'test_labels.npy'), yte)
same('npy directory, test', [npyd, 'test'], xte[:, None], yte)
npzd = os.path.join(tmp, 'npzdir')
os.mkdir(npzd)
np.savez(os.path.join(npzd, 'train.npz'), x=im, y=lb)
np.savez(os.path.join(npzd, 'test.npz'), x=im[:2], y=lb[:2])
same('npz directory, test', [npzd, 'test'], im[:2].transpose(0, 3, 1, 2), lb[:2])

# CIFAR-10 and CIFAR-100 files made with NumPy, parsed back with NumPy.
c10 = os.path.join(tmp, 'cifar-10-batches-bin')
os.mkdir(c10)
def cifar_records(labels, pixels):
    return np.concatenate([labels.reshape(len(pixels), -1).astype(np.uint8),
                           pixels.reshape(len(pixels), -1)], axis=1)
parts = []
for f in range(1, 6):
    px, lab10 = rng.integers(0, 256, (2, 3, 32, 32), dtype=np.uint8), rng.integers(0, 10, 2)
    cifar_records(lab10, px).tofile(os.path.join(c10, f'data_batch_{f}.bin'))
    parts.append((px, lab10))
cifar_records(np.array([4]), rng.integers(0, 256, (1, 3, 32, 32), dtype=np.uint8)).tofile(
    os.path.join(c10, 'test_batch.bin'))
raw = np.concatenate([np.fromfile(os.path.join(c10, f'data_batch_{f}.bin'), np.uint8).reshape(-1, 3073)
                      for f in range(1, 6)])
same('CIFAR-10 train', [c10, 'train'], raw[:, 1:].reshape(-1, 3, 32, 32), raw[:, 0], classes=10)
c100 = os.path.join(tmp, 'cifar-100-binary')
os.mkdir(c100)
px = rng.integers(0, 256, (5, 3, 32, 32), dtype=np.uint8)
coarse, fine = rng.integers(0, 20, 5), rng.integers(0, 100, 5)
cifar_records(np.stack([coarse, fine], 1), px).tofile(os.path.join(c100, 'train.bin'))
cifar_records(np.stack([coarse, fine], 1)[:2], px[:2]).tofile(os.path.join(c100, 'test.bin'))
same('CIFAR-100 fine', [c100, 'train'], px, fine, classes=100)
same('CIFAR-100 coarse', [c100, 'train', 'auto', 'coarse'], px, coarse, classes=20)

# Normalisation: auto takes NumPy's mean and (population) std per channel;
# the samples are then (x/255 - mean) / std in float32.
col = os.path.join(tmp, 'col.npz')
cim = rng.integers(0, 256, (9, 5, 6, 3), dtype=np.uint8)
clab = rng.integers(0, 4, 9)
np.savez(col, images=cim, labels=clab)
x = cim.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
rc, got = dump(col, 'train', 'auto', 'fine', 'one', 'norm=auto')
check(rc == 0, f'norm=auto: {got}')
if rc == 0:
    xm, xs = x.astype(np.float64).mean(axis=(0, 2, 3)), x.astype(np.float64).std(axis=(0, 2, 3))
    check(np.allclose(got['mean'], xm, rtol=1e-12, atol=0) and np.allclose(got['std'], xs, rtol=1e-12, atol=0),
          f'auto statistics {got["mean"]} {got["std"]} against NumPy {xm} {xs}')
    m32, s32 = np.array(got['mean'], np.float32), np.array(got['std'], np.float32)
    want = (x - m32[None, :, None, None]) / s32[None, :, None, None]
    check(got['bits'] == np.ascontiguousarray(want).view(np.uint32).ravel().tolist(), 'normalised values differ')
rc, got = dump(col, 'train', 'auto', 'fine', 'one', 'norm=0.5,0.25,0:2,4,0.5')
want = (x - np.array([0.5, 0.25, 0], np.float32)[None, :, None, None]) / np.array([2, 4, 0.5], np.float32)[None, :, None, None]
check(rc == 0 and got['bits'] == np.ascontiguousarray(want).view(np.uint32).ravel().tolist(), f'given normalisation: {rc}')
refused('zero std', [col, 'train', 'auto', 'fine', 'one', 'norm=0,0,0:1,0,1'], 'channel 1', 'std > 0')

# Augmentation: the batch equals NumPy's crop of the zero-padded sample at
# the library's draws, then the flip, then the normalisation.
for pad, flip, seed, epoch in ((2, 1, 7, 0), (1, 0, 7, 3), (0, 1, 11, 1), (3, 1, 5, 2)):
    rc, got = dump(col, 'train', 'auto', 'fine', 'one', 'norm=0.5,0.25,0:2,4,0.5', f'aug={pad},{flip},{seed},{epoch}')
    check(rc == 0, f'aug {pad},{flip}: {got}')
    if rc:
        continue
    draws = got['draws']
    check(len({tuple(d) for d in draws}) > 1 or pad == 0, f'aug {pad},{flip}: every draw alike {draws}')
    check(all(0 <= dx <= 2 * pad and 0 <= dy <= 2 * pad and f in (0, flip) for dx, dy, f in draws), f'draws {draws}')
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.stack([padded[i, :, dy:dy + 5, dx:dx + 6] for i, (dx, dy, f) in enumerate(draws)])
    out = np.stack([o[:, :, ::-1] if d[2] else o for o, d in zip(out, draws)])
    out = (out - np.array([0.5, 0.25, 0], np.float32)[None, :, None, None]) / np.array([2, 4, 0.5], np.float32)[None, :, None, None]
    check(got['bits'] == np.ascontiguousarray(out.astype(np.float32)).view(np.uint32).ravel().tolist(),
          f'aug {pad},{flip},{seed},{epoch}: batch differs from NumPy given the same draws')
    check(got['labels'] == clab.tolist(), 'augmentation keeps labels')
rc1, a1 = dump(col, 'train', 'auto', 'fine', 'one', 'aug=2,1,7,0')
rc2, a2 = dump(col, 'train', 'auto', 'fine', 'one', 'aug=2,1,7,1')
check(rc1 == 0 and rc2 == 0 and a1['draws'] != a2['draws'], 'another epoch draws anew')

# Held out: round(f x count) of every class, the rest kept, each in order.
hl = rng.integers(0, 3, 200)
him = np.arange(200, dtype=np.uint8).reshape(200, 1, 1)
hz = os.path.join(tmp, 'hold.npz')
np.savez(hz, images=him, labels=hl)
rc, kept = dump(hz, 'train', 'auto', 'fine', 'one', 'holdout=0.2,9,kept')
rc2, held = dump(hz, 'train', 'auto', 'fine', 'one', 'holdout=0.2,9,held')
check(rc == 0 and rc2 == 0, f'holdout: {kept} {held}')
if rc == 0 and rc2 == 0:
    ki = [round(np.frombuffer(np.array(b, np.uint32).tobytes(), np.float32)[0] * 255) for b in kept['bits']]
    hi_ = [round(np.frombuffer(np.array(b, np.uint32).tobytes(), np.float32)[0] * 255) for b in held['bits']]
    check(sorted(ki + hi_) == list(range(200)) and ki == sorted(ki) and hi_ == sorted(hi_), 'kept and held partition the samples in order')
    for c in range(3):
        check(sum(1 for i in hi_ if hl[i] == c) == round(0.2 * np.sum(hl == c)), f'class {c}: held {sum(1 for i in hi_ if hl[i] == c)}')
    rc3, again = dump(hz, 'train', 'auto', 'fine', 'one', 'holdout=0.2,9,held')
    rc4, other = dump(hz, 'train', 'auto', 'fine', 'one', 'holdout=0.2,10,held')
    check(again == held and other != held, 'the same seed holds out the same samples, another seed others')
refused('holdout of everything', [hz, 'train', 'auto', 'fine', 'one', 'holdout=0.999,9,kept'], 'nothing would be left')

# Refusals name the file and the problem.
bad = os.path.join(tmp, 'bad.npz')
np.savez(bad, images=np.zeros((2, 3, 3)), labels=np.array([0, 1]))
refused('float64 images', [bad, 'train'], bad, "'<f8'")
np.savez(bad, images=np.zeros((2, 3, 3), np.float32), labels=np.array([[0], [1]]))
refused('2-D labels', [bad, 'train'], bad, 'labels must be integers shaped (N,)')
np.savez(bad, images=np.zeros((2, 3, 3), np.uint8), labels=np.array([0, -1]))
refused('negative label', [bad, 'train'], bad, 'label -1 of sample 1')
np.savez(bad, images=np.zeros((2, 3, 3), np.uint8), labels=np.array([0, 1, 1]))
refused('count mismatch', [bad, 'train'], bad, '2 images but 3 labels')
np.savez(bad, a=np.zeros((2, 3, 3), np.float32), b=np.array([0, 1]), c=np.zeros(2, np.float32))
refused('three anonymous arrays', [bad, 'train'], bad, 'cannot tell the images from the labels')
np.savez(bad, images=np.full((1, 2, 2), np.nan, np.float32), labels=np.array([0]))
refused('NaN pixel', [bad, 'train'], bad, 'sample 0', 'finite')
np.savez(bad, images=np.zeros((2, 3), np.uint8), labels=np.array([0, 1]))
refused('2-D images', [bad, 'train'], bad, 'images of 2 dimensions')
np.savez(bad, x_train=xtr, y_train=ytr)
refused('Keras archive without its test pair', [bad, 'test'], bad, 'x_test and y_test')

finish()
