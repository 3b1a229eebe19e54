#!/usr/bin/env python3
"""Image folders against Pillow, the independent reader: class order,
file order (torchvision's sorted(os.walk)), links, skipped files, and
pixels of RGB, grey, alpha, palette and 16-bit PNGs and of JPEGs; the
channel rule both ways; --image-size against a NumPy reference of the
stated bilinear rule; train/val splits; progressive JPEGs and the scan
cap; every refusal. Folders decoded lazily (CLTRAIN_DATA_DECODE=lazy, as
meson's data-images-lazy runs this) give the same bytes as eager ones in
every read (batches, statistics, held-out parts), and a file that goes
bad after a lazy load fails the read naming it.
Usage: test_images.py DATASET_DUMP. Exits 77 without numpy or Pillow."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish, need_numpy  # noqa: E402

np = need_numpy()
try:
    from PIL import Image
except ImportError:
    print('skip: Pillow is not installed (Debian: apt-get install python3-pil; tools/setup does it)')
    sys.exit(77)
import json  # noqa: E402

DUMP = os.path.abspath(sys.argv[1])


LAZY = os.environ.get('CLTRAIN_DATA_DECODE') == 'lazy'


def dump(*args, mode=None):
    env = dict(os.environ, CLTRAIN_DATA_DECODE=mode) if mode else None
    r = subprocess.run([DUMP, *map(str, args)], capture_output=True, text=True, timeout=120, env=env)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else r.stderr.strip())


def pixels(got):
    n, (c, h, w) = got['n'], got['shape']
    f = np.array(got['bits'], np.uint32).view(np.float32).reshape(n, c, h, w)
    return np.rint(f * 255).astype(np.int64)


def rgb(im):
    """Pillow's pixels as the stated rule takes them: RGB (alpha dropped), grey copied."""
    if im.mode == 'I;16' or im.mode == 'I':
        a = np.array(im).astype(np.int64) >> 8
        return np.stack([a, a, a])
    return np.array(im.convert('RGB')).astype(np.int64).transpose(2, 0, 1)


def luma(a):
    return (a[0] * 19595 + a[1] * 38470 + a[2] * 7471 + 0x8000) >> 16


rng = np.random.default_rng(2)
tmp = tempfile.mkdtemp(prefix='cltrain-images-')
root = os.path.join(tmp, 'root')
for c in ('dog', 'ant', 'cat'):
    os.makedirs(os.path.join(root, c))
H, W = 6, 5
expected = {}  # path -> CHW ints (3 channels)


def save(path, im):
    im.save(path)
    expected[path] = rgb(Image.open(path))


save(os.path.join(root, 'ant', 'b.png'), Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8), 'RGB'))
save(os.path.join(root, 'ant', 'a.PNG'), Image.fromarray(rng.integers(0, 256, (H, W), dtype=np.uint8), 'L'))
save(os.path.join(root, 'cat', 'rgba.png'), Image.fromarray(rng.integers(0, 256, (H, W, 4), dtype=np.uint8), 'RGBA'))
pal = Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8), 'RGB').quantize(16)
save(os.path.join(root, 'cat', 'pal.png'), pal)
save(os.path.join(root, 'cat', 'la.png'), Image.fromarray(rng.integers(0, 256, (H, W, 2), dtype=np.uint8), 'LA'))
sixteen = Image.fromarray(rng.integers(0, 65536, (H, W), dtype=np.uint16))
save(os.path.join(root, 'dog', 'g16.png'), sixteen)
os.makedirs(os.path.join(root, 'dog', 'sub'))
save(os.path.join(root, 'dog', 'sub', 'x.jpg'), Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8), 'RGB'))
save(os.path.join(root, 'dog', 'z.jpeg'), Image.fromarray(rng.integers(0, 256, (H, W), dtype=np.uint8), 'L'))
os.symlink(os.path.join(root, 'ant', 'b.png'), os.path.join(root, 'dog', 'link.png'))
expected[os.path.join(root, 'dog', 'link.png')] = expected[os.path.join(root, 'ant', 'b.png')]
open(os.path.join(root, 'dog', 'notes.txt'), 'w').write('not an image')
open(os.path.join(root, 'README'), 'w').write('not a class')

order = []  # torchvision's: classes sorted; per class sorted(os.walk), files sorted
classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
for k, c in enumerate(classes):
    for dirpath, _, files in sorted(os.walk(os.path.join(root, c), followlinks=True)):
        for f in sorted(files):
            if f.lower().endswith(('.png', '.jpg', '.jpeg')):
                order.append((os.path.join(dirpath, f), k))

rc, got = dump(root, 'train')
check(rc == 0, f'image folder: {got}')
if rc == 0:
    check(got['names'] == classes and got['classes'] == 3, f'class names {got.get("names")}')
    check(got['labels'] == [k for _, k in order], f'labels {got["labels"]} want {[k for _, k in order]}')
    check(got['skipped'] == 2, f'skipped {got["skipped"]} (notes.txt, README)')
    check(got['shape'] == [3, H, W], f'shape {got["shape"]}')
    px = pixels(got)
    for i, (path, _) in enumerate(order):
        check(np.array_equal(px[i], expected[path]), f'{os.path.relpath(path, root)}: pixels differ from Pillow\'s')
rc, got = dump(root, 'train', 'auto', 'fine', 'one', 'channels=1')
if check(rc == 0, f'--channels 1: {got}'):
    px = pixels(got)
    for i, (path, _) in enumerate(order):
        im = Image.open(path)
        if im.mode in ('L', 'I;16', 'I', 'LA'):
            want = expected[path][0]
        else:
            want = np.array(im.convert('RGB').convert('L')).astype(np.int64)
            check(np.array_equal(want, luma(expected[path])), 'Pillow luma as stated')
        check(np.array_equal(px[i][0], want), f'{os.path.relpath(path, root)}: grey differs')
rc, got = dump(root, 'test')
check(rc == 0 and got == {'none': True}, f'one folder has no test split: {got}')

# --image-size: shorter side to S, bilinear (half-pixel centres, edges clamped), the centre.
def resized(a, s):
    c, h, w = a.shape
    rw, rh = (s, s * h // w) if w <= h else (s * w // h, s)
    left, top = (rw - s + 1) // 2, (rh - s + 1) // 2
    ys = np.clip((np.arange(s) + top + 0.5) * (h / rh) - 0.5, 0, h - 1)
    xs = np.clip((np.arange(s) + left + 0.5) * (w / rw) - 0.5, 0, w - 1)
    y0, x0 = ys.astype(int), xs.astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    out = []
    for ch in a.astype(np.float64):
        top_ = ch[y0][:, x0] * (1 - fx) + ch[y0][:, x1] * fx
        bot = ch[y1][:, x0] * (1 - fx) + ch[y1][:, x1] * fx
        out.append(((top_ * (1 - fy) + bot * fy) + 0.5).astype(np.int64))
    return np.stack(out)


mixed = os.path.join(tmp, 'mixed')
os.makedirs(os.path.join(mixed, 'a'))
os.makedirs(os.path.join(mixed, 'b'))
big = Image.fromarray(rng.integers(0, 256, (9, 14, 3), dtype=np.uint8), 'RGB')
tall = Image.fromarray(rng.integers(0, 256, (11, 4, 3), dtype=np.uint8), 'RGB')
big.save(os.path.join(mixed, 'a', 'big.png'))
tall.save(os.path.join(mixed, 'b', 'tall.png'))
rc, got = dump(mixed, 'train')
check(rc == 1 and 'big.png is 14x9' in got and 'tall.png is 4x11' in got and '--image-size' in got,
      f'mixed sizes refused naming two: {got}')
rc, got = dump(mixed, 'train', 'auto', 'fine', 'one', 'size=4')
if check(rc == 0, f'--image-size 4: {got}'):
    px = pixels(got)
    check(np.array_equal(px[0], resized(rgb(big), 4)) and np.array_equal(px[1], resized(rgb(tall), 4)),
          'resized pixels differ from the NumPy reference of the stated rule')

# ROOT/train with ROOT/val: the test split.
split = os.path.join(tmp, 'split')
for part, n in (('train', 3), ('val', 2)):
    for c in ('x', 'y'):
        os.makedirs(os.path.join(split, part, c))
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8), 'RGB').save(
                os.path.join(split, part, c, f'{i}.png'))
rc, got = dump(split, 'test')
check(rc == 0 and got['n'] == 4 and got['labels'] == [0, 0, 1, 1], f'val as the test split: {got}')

# Refusals: a truncated PNG and JPEG, an empty class, no class folders.
bad = os.path.join(tmp, 'bad')
os.makedirs(os.path.join(bad, 'a'))
data = open(os.path.join(root, 'ant', 'b.png'), 'rb').read()
open(os.path.join(bad, 'a', 'cut.png'), 'wb').write(data[:len(data) // 2])
rc, got = dump(bad, 'train')
check(rc == 1 and 'cut.png' in got and 'PNG' in got, f'truncated PNG: {got}')
os.remove(os.path.join(bad, 'a', 'cut.png'))
jdata = open(os.path.join(root, 'dog', 'sub', 'x.jpg'), 'rb').read()
open(os.path.join(bad, 'a', 'cut.jpg'), 'wb').write(jdata[:len(jdata) * 2 // 3])
rc, got = dump(bad, 'train')
check(rc == 1 and 'cut.jpg' in got and 'JPEG' in got, f'cut JPEG: {got}')
os.remove(os.path.join(bad, 'a', 'cut.jpg'))
# a larger one cut in its scan data: libjpeg would fill the rest with grey
Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), 'RGB').save(os.path.join(tmp, 'big.jpg'))
jbig = open(os.path.join(tmp, 'big.jpg'), 'rb').read()
open(os.path.join(bad, 'a', 'cut.jpg'), 'wb').write(jbig[:len(jbig) * 4 // 5])
rc, got = dump(bad, 'train')
check(rc == 1 and 'cut.jpg' in got and 'truncated' in got, f'truncated JPEG: {got}')
os.remove(os.path.join(bad, 'a', 'cut.jpg'))
open(os.path.join(bad, 'a', 'fake.png'), 'wb').write(b'GIF89a not a png')
rc, got = dump(bad, 'train')
check(rc == 1 and 'fake.png' in got and 'neither a PNG nor a JPEG' in got, f'a GIF named .png: {got}')
os.remove(os.path.join(bad, 'a', 'fake.png'))
os.makedirs(os.path.join(bad, 'b'))
Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8), 'RGB').save(os.path.join(bad, 'b', '0.png'))
rc, got = dump(bad, 'train')
check(rc == 1 and os.path.join(bad, 'a') in got and 'holds no .png' in got, f'empty class: {got}')
# a folder whose subfolders hold no image is not an image folder: the IDX search says what is missing
raw = os.path.join(tmp, 'MNIST')
os.makedirs(os.path.join(raw, 'raw'))
open(os.path.join(raw, 'raw', 'train-images-idx3-ubyte.gz'), 'wb').write(b'')
# Progressive JPEGs decode as Pillow decodes them; one of more than 500 scans
# (each scan passes over the image again: a decompression bomb) is refused.
prog = os.path.join(tmp, 'prog')
os.makedirs(os.path.join(prog, 'a'))
pj = os.path.join(prog, 'a', 'p.jpg')
Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8), 'RGB').save(pj, progressive=True)
pdata = open(pj, 'rb').read()
check(pdata.count(b'\xff\xda') > 1, 'Pillow wrote a progressive (multi-scan) JPEG')
rc, got = dump(prog, 'train')
check(rc == 0 and np.array_equal(pixels(got)[0], rgb(Image.open(pj))), f'progressive JPEG against Pillow: {got}')
last_scan = pdata.rindex(b'\xff\xda')
bombs = os.path.join(tmp, 'bombs')
os.makedirs(os.path.join(bombs, 'a'))
open(os.path.join(bombs, 'a', 'bomb.jpg'), 'wb').write(pdata[:-2] + pdata[last_scan:-2] * 600 + pdata[-2:])
rc, got = dump(bombs, 'train')  # the last scan 600 times more
check(rc == 1 and 'bomb.jpg' in got and 'more than 500 scans' in got, f'a JPEG of 610 scans: {got}')

# Eager and lazy decoding give the same bytes, whatever reads them.
for args in ((root, 'train'), (root, 'train', 'auto', 'fine', 'one', 'norm=auto', 'aug=2,1,5,1', 'prefetch'),
             (root, 'train', 'auto', 'fine', 'one', 'channels=1', 'holdout=0.4,7,held'),
             (root, 'train', 'auto', 'fine', 'one', 'holdout=0.4,7,kept', 'norm=auto'),
             (mixed, 'train', 'auto', 'fine', 'one', 'size=5'), (prog, 'train')):
    e, l_ = dump(*args, mode='eager'), dump(*args, mode='lazy')
    check(e[0] == 0 and e == l_, f'eager and lazy differ for {args[1:]}: {str(e)[:200]} {str(l_)[:200]}')
rc, got = dump(prog, 'train', mode='sometimes')
check(rc == 1 and 'CLTRAIN_DATA_DECODE=sometimes' in got, f'a bad decoding mode: {got}')
# auto statistics of a folder against NumPy's
rc, got = dump(root, 'train', 'auto', 'fine', 'one', 'norm=auto')
if check(rc == 0, f'norm=auto: {got}'):
    every = np.stack([expected[p] for p, _ in order]).astype(np.float32) / np.float32(255)
    want_mean = every.astype(np.float64).mean(axis=(0, 2, 3))
    want_std = every.astype(np.float64).std(axis=(0, 2, 3))
    check(np.allclose(got['mean'], want_mean, rtol=1e-12, atol=0) and np.allclose(got['std'], want_std, rtol=1e-12, atol=0),
          f'folder statistics {got["mean"]} {got["std"]} against NumPy {want_mean} {want_std}')

# A file that goes bad after the load: a lazy folder's batch fails naming it
# (through the prefetch thread); an eager one holds its pixels already.
for how, says in (('spoil', 'PNG'), ('remove', 'No such file')):
    gone = os.path.join(tmp, 'gone-' + how)
    for c in ('x', 'y'):
        os.makedirs(os.path.join(gone, c))
        for i in range(3):
            Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8), 'RGB').save(os.path.join(gone, c, f'{i}.png'))
    victim = os.path.join(gone, 'y', '1.png')
    rc, got = dump(gone, 'train', 'auto', 'fine', 'one', f'{how}={victim}', 'aug=0,1,1,0', 'prefetch')
    if LAZY:
        check(rc == 1 and victim in got and says in got and 'then: CLT_OK 0' in got, f'{how} after a lazy load: {got}')
    else:
        check(rc == 0, f'{how} after an eager load: {got}')
    if how == 'spoil':
        rc, got = dump(gone, 'train', mode='lazy')
        check(rc == 1 and victim in got, f'a lazy read of a spoilt file: {got}')

rc, got = dump(raw, 'train')
check(rc == 1 and 'not found' in got and 'train-images-idx3-ubyte' in got, f'subfolders without images: {got}')
rc, got = dump(raw, 'test')
check(rc == 1 and 'not found' in got, f'... nor for the test split: {got}')
# --test-data given a folder of one split (train only): that split
rc, got = dump(split, 'test', 'auto', 'fine', 'any')
check(rc == 0 and got['n'] == 4, f'any split of ROOT/train+val: {got}')
one_split = os.path.join(tmp, 'onesplit')
os.makedirs(os.path.join(one_split, 'train', 'x'))
Image.fromarray(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8), 'RGB').save(os.path.join(one_split, 'train', 'x', '0.png'))
rc, got = dump(one_split, 'test', 'auto', 'fine', 'any')
check(rc == 0 and got.get('n') == 1, f'ROOT/train alone given as the test set: {got}')
rc, got = dump(one_split, 'test')
check(rc == 0 and got == {'none': True}, f'ROOT/train alone has no test split: {got}')

finish()
