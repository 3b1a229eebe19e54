#!/usr/bin/env python3
"""cltrain export --onnx against ONNX Runtime: onnx.checker passes on every
model, and ONNX Runtime's scores equal cltrain's (net_logits:
clt_net_predict on the same file) within 1e-5 relative (1e-4 for
resnet18) on 64 test images, for lenet, resnet18, a spec with sigmoid,
tanh, dropout and batch norm after dense (--model over the file), lenet-max
from a checkpoint, and a colour net with --normalize auto (Sub and Div in
front, the training set's values); a state_dict alone with --model; the
metadata (version, spec, class names as JSON), the symbolic batch, the C
call writing the CLI's bytes; the refusals and atomicity (a write cut off
leaves the old file). In a build without protobuf-c: the refusal. Exits 77
without onnx, onnxruntime, numpy, an OpenCL device or Fashion-MNIST."""
import gzip
import json
import os
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

CLTRAIN, NET_LOGITS, PROTOBUF = sys.argv[1], sys.argv[2], sys.argv[3] == 'protobuf'  # meson's feature
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, need_device, finish, need_modules  # noqa: E402

tmp = tempfile.mkdtemp(prefix='cltrain-onnx-')
P = lambda name: os.path.join(tmp, name)


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600, **kw)


def cltrain(*args, **kw):
    return run(CLTRAIN, *args, **kw)


need_device()
FASHION = '/usr/share/datasets/fashion-mnist'
if not os.path.exists(os.path.join(FASHION, 't10k-images-idx3-ubyte.gz')):
    print(f'skip: Fashion-MNIST is not in {FASHION} (tools/setup installs it)')
    sys.exit(77)

if not PROTOBUF:  # a build without protobuf-c refuses, saying why, and writes nothing
    r = cltrain('train', '--limit-train', '64', '--epochs', '1', '--batch-size', '32', '--quiet',
                '--export-npz', P('p.npz'))
    if check(r.returncode == 0, f'train: {r.stderr}'):
        r = cltrain('export', '--onnx', P('p.onnx'), '--init-from', P('p.npz'))
        check(r.returncode == 1 and 'built without protobuf-c' in r.stderr and not os.path.exists(P('p.onnx')),
              f'export without protobuf-c: {r.returncode} {r.stderr}')
    finish()

onnx, ort, np = need_modules('onnx', 'onnxruntime', 'numpy')
from onnx import numpy_helper  # noqa: E402



def inputs(name, images):
    """images (N, C, H, W) uint8 as cltrain reads them, x/255 in float32,
    into NAME.npz for net_logits; returned for ONNX Runtime."""
    x = images.astype(np.float32) / np.float32(255)
    np.savez(P(name), x=x)
    return x


with gzip.open(os.path.join(FASHION, 't10k-images-idx3-ubyte.gz')) as f:
    fashion = inputs('fashion.npz', np.frombuffer(f.read(), np.uint8, offset=16)[:64 * 784].reshape(64, 1, 28, 28))

# Xavier weights: scores that depend on the image, not the last bias alone
QUICK = ['--limit-train', '64', '--limit-test', '16', '--epochs', '1', '--batch-size', '32', '--init', 'xavier',
         '--quiet']
MIXED = ('conv:8:3:1:1,bn,tanh,maxpool:2:2,conv:8:3,sigmoid,avgpool:3:2,flatten,'
         'dense:32,bn,relu,dropout:0.3,dense:16,sigmoid,dense:10')
version = cltrain('--version').stdout.split()[-1]


def ours(net, x_npz):
    """cltrain's scores (clt_net_predict) from the net file, and its
    expanded spec; the net exported by the C call into api.onnx."""
    r = run(NET_LOGITS, net, P(x_npz), P('ours.npz'), P('api.onnx'))
    check(r.returncode == 0, f'net_logits {net}: {r.stderr}')
    return (np.load(P('ours.npz'))['logits'], r.stdout.strip()) if r.returncode == 0 else (None, None)


def runtime(path, x):
    s = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    return s.run(['logits'], {'input': x})[0]


def compare(name, net, model, x, x_npz, bound):
    """The model checks, and ONNX Runtime's scores against cltrain's for
    the net file; returns the model."""
    m = onnx.load(model)
    try:
        onnx.checker.check_model(m, full_check=True)
        check(True, '')
    except onnx.checker.ValidationError as e:
        check(False, f'{name}: onnx.checker: {e}')
    got, (want, expanded) = runtime(model, x), ours(net, x_npz)
    if want is None:
        return m
    with open(model, 'rb') as a, open(P('api.onnx'), 'rb') as b:
        check(a.read() == b.read(), f'{name}: the CLI and clt_net_export_onnx write the same bytes')
    meta = {p.key: p.value for p in m.metadata_props}
    check(m.producer_name == 'cltrain' and meta.get('cltrain_version') == version, f'{name}: producer {meta}')
    check(meta.get('cltrain_spec') == expanded, f'{name}: spec {meta.get("cltrain_spec")!r}, not {expanded!r}')
    check([o.version for o in m.opset_import if o.domain in ('', 'ai.onnx')][0] >= 17, f'{name}: opset')
    for v in (m.graph.input[0], m.graph.output[0]):
        check(v.type.tensor_type.shape.dim[0].dim_param == 'N', f'{name}: {v.name} has a symbolic batch')
    spread = float((want - want.mean(axis=0)).std() / np.abs(want).max())
    check(spread > 0.01, f'{name}: the scores hardly depend on the image (spread {spread:.3g}): a weak comparison')
    err = float(np.abs(got - want).max() / np.abs(want).max())
    print(f'{name}: max |onnxruntime - cltrain| / max |cltrain| = {err:.3g} (bound {bound:g}), spread {spread:.3g}')
    check(got.shape == want.shape and err <= bound, f'{name}: relative difference {err:.3g} > {bound:g}')
    # any batch size: one image alone gives its row
    check(np.abs(runtime(model, x[5:6]) - got[5:6]).max() <= bound * np.abs(want).max(), f'{name}: batch of one')
    return m


def export(name, *args):
    model = P(f'{name}.onnx')
    r = cltrain('export', '--onnx', model, *args, '--devices', '0')
    ok = check(r.returncode == 0 and model in r.stdout, f'export {name}: {r.returncode} {r.stdout} {r.stderr}')
    return model if ok else None


# Files that name their model (--export-npz, --save), and parameters alone with --model
for name, bound in (('lenet', 1e-5), ('resnet18', 1e-4), ('mixed', 1e-5)):
    spec, params = MIXED if name == 'mixed' else name, P(f'{name}.npz')
    r = cltrain('train', '--model', spec, *QUICK, '--export-npz', params)
    if not check(r.returncode == 0, f'train {name}: {r.stderr}'):
        continue
    model = export(name, '--init-from', params, *(['--model', spec] if name == 'mixed' else []))
    if model:
        compare(name, params, model, fashion, 'fashion.npz', bound)
ck = P('max.ck')
r = cltrain('train', '--model', 'lenet-max', *QUICK, '--save', ck)
model = check(r.returncode == 0, f'train lenet-max: {r.stderr}') and export('lenet-max', '--resume', ck)
if model:
    ops = {n.op_type for n in compare('lenet-max', ck, model, fashion, 'fashion.npz', 1e-5).graph.node}
    check('MaxPool' in ops and 'AveragePool' not in ops, f'lenet-max ops {ops}')
z = dict(np.load(P('lenet.npz')))  # a state_dict alone, as NumPy writes one from PyTorch
np.savez(P('plain.npz'), **{k: v for k, v in z.items() if not k.startswith('__cltrain__/')})
model = export('plain', '--init-from', P('plain.npz'), '--model', 'lenet')
if model:
    check(open(model, 'rb').read() == open(P('lenet.onnx'), 'rb').read(), 'a state_dict with --model: the same model')

# A colour net with --normalize auto: Sub and Div in front, the training set's statistics
rng = np.random.default_rng(5)
images, labels = rng.integers(0, 256, (264, 3, 16, 16), dtype=np.uint8), rng.integers(0, 4, 264)
images[:, 1] //= 2  # channels of other means and spreads
np.savez(P('colour-data.npz'), x_train=images[:200], y_train=labels[:200], x_test=images[200:], y_test=labels[200:])
colour = inputs('colour.npz', images[200:])
r = cltrain('train', '--data', P('colour-data.npz'), '--normalize', 'auto', '--model',
            'conv:8:3:1:1,bn,relu,maxpool:2,conv:16:3,relu,gap,dense:4', '--epochs', '1', '--batch-size', '50',
            '--init', 'xavier', '--quiet', '--export-npz', P('colour-net.npz'))
model = check(r.returncode == 0, f'train colour: {r.stderr}') and export('colour', '--init-from', P('colour-net.npz'))
if model:
    m = compare('colour', P('colour-net.npz'), model, colour, 'colour.npz', 1e-5)
    check([n.op_type for n in m.graph.node][:2] == ['Sub', 'Div'] and m.graph.node[0].input[0] == 'input',
          f'normalisation in front: {[n.op_type for n in m.graph.node][:3]}')
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    unit = images[:200].astype(np.float64) / 255
    for key, want in (('input_mean', unit.mean(axis=(0, 2, 3))), ('input_std', unit.std(axis=(0, 2, 3)))):
        got = init.get(key, np.zeros(0))
        check(got.shape == (1, 3, 1, 1) and np.abs(got.ravel() - want).max() < 1e-6, f'{key} {got.ravel()} {want}')


# Class names (an image folder's, one with a quote) in the metadata as a JSON list
def png(path, rgb):
    """rgb (H, W, 3) uint8 as a PNG (zlib, no Pillow)."""
    h, w, _ = rgb.shape
    chunk = lambda kind, data: (struct.pack('>I', len(data)) + kind + data +
                                struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))
    rows = b''.join(b'\0' + rgb[y].tobytes() for y in range(h))
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))


names = ['ant', 'bee "b"', 'cicada']
for split in ('train', 'val'):
    for k, cls in enumerate(names):
        os.makedirs(P(f'pics/{split}/{cls}'))
        for i in range(4):
            png(P(f'pics/{split}/{cls}/{i}.png'), images[12 * k + i].transpose(1, 2, 0).copy())
r = cltrain('train', '--data', P('pics'), '--model', 'conv:4:3,relu,gap,dense:3', '--epochs', '1', '--batch-size', '6',
            '--quiet', '--export-npz', P('named.npz'))
model = check(r.returncode == 0, f'train on an image folder: {r.stderr}') and export('named', '--init-from',
                                                                                     P('named.npz'))
if model:
    meta = {p.key: p.value for p in onnx.load(model).metadata_props}
    try:
        listed = json.loads(meta.get('class_names', 'null'))
    except ValueError:
        listed = None
    check(listed == names, f'class_names {meta.get("class_names")!r}')

# Refusals, before any work, naming the option and the path; the old file stays
old = b'an older model'
with open(P('keep.onnx'), 'wb') as f:
    f.write(old)
os.mkdir(P('dir.onnx'))
for target, word in ((P('dir.onnx'), 'directory'), (P('no/such.onnx'), 'does not exist'),
                     (P('lenet.npz'), 'same file')):
    r = cltrain('export', '--onnx', target, '--init-from', P('lenet.npz'))
    check(r.returncode == 1 and '--onnx' in r.stderr and word in r.stderr,
          f'--onnx {target}: {r.returncode} {r.stderr}')
for args, word in ((['--init-from', P('lenet.npz')], '--onnx'), ([], '--init-from'),
                   (['--init-from', P('plain.npz')], '--model'), (['--resume', ck, '--model', 'lenet'], '--model'),
                   (['--init-from', P('plain.npz'), '--model', 'lenet-max,dense:3'], '--model')):
    r = cltrain('export', *(['--onnx', P('keep.onnx')] if word != '--onnx' else []), *args)
    check(r.returncode == 2 and word in r.stderr, f'export {args}: {r.returncode} {r.stderr}')
r = cltrain('export', '--onnx', P('keep.onnx'), '--init-from', P('resnet18.npz'), '--model', 'lenet')
check(r.returncode == 1 and 'resnet18.npz' in r.stderr, f'export of parameters of another net: {r.stderr}')


# a write cut off (a file-size limit smaller than the model) leaves the old file and no temporary
def small_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write fails with EFBIG instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (100000, 100000))


r = cltrain('export', '--onnx', P('keep.onnx'), '--init-from', P('lenet.npz'), preexec_fn=small_files)
with open(P('keep.onnx'), 'rb') as f:
    kept = f.read()
check(r.returncode == 1 and 'write failed' in r.stderr and kept == old,
      f'a failed write: rc {r.returncode}, file {kept[:20]!r}, {r.stderr}')
check(not [n for n in os.listdir(tmp) if '.tmp.' in n], f'temporaries left: {os.listdir(tmp)}')
finish()
