#!/usr/bin/env python3
"""NumPy interop of cltrain's .npz: numpy.load reads what cltrain writes
(stored and deflate), cltrain reads what numpy.savez / savez_compressed
write (also to a stream that cannot seek, which gives data descriptors),
refuses the dtypes and layouts it does not take with a message naming the
entry, and a PyTorch-style state_dict saved by NumPy loads into lenet (when
an OpenCL device exists). Exits 77 when numpy is missing."""
import json
import os
import subprocess
import sys
import tempfile
import zipfile

TOOL = os.path.abspath(sys.argv[1])

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish, need_numpy  # noqa: E402

np = need_numpy()


def tool(*args):
    return subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=240)


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).ravel()


def f32(n, kind):
    i = np.arange(n, dtype=np.float64)
    v = {0: i * 0.5 - 1.25, 1: i * 0.25 + 1, 2: (i % 17) - 8, 3: i * 0.125, 4: i + 1,
         5: ((np.arange(n, dtype=np.int64) * 7919) % 1000) * 0.125 - 60}[kind]
    return v.astype(np.float32)


tmp = tempfile.mkdtemp(prefix='clt-npz-py-')

# ---- (a) cltrain writes, NumPy reads ---------------------------------------
special = np.array([0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                    0x7fc00001, 0x00000001, 0x7f7fffff, 0x3f800001], dtype=np.uint32).view(np.float32)
expected = {
    'scalar': np.array(3.5, np.float32),
    'one': np.array([-2.25], np.float32),
    'special': special,
    'vec': f32(7, 0),
    'mat': f32(12, 1).reshape(3, 4),
    't4': f32(120, 2).reshape(2, 3, 4, 5),
    't6': f32(12, 3).reshape(1, 2, 1, 3, 1, 2),
    'empty': np.zeros((0, 3), np.float32),
    'momentum/0.weight': f32(4, 4).reshape(2, 2),
    'big': f32(30000, 5).reshape(300, 100),
}
meta = b'{"format": "cltrain", "epoch": 3}'
for mode in ('stored', 'deflate'):
    path = os.path.join(tmp, f'cltrain-{mode}.npz')
    r = tool('write', path, mode)
    check(r.returncode == 0, f'npz_tool write {mode}: {r.stderr}')
    if r.returncode:
        continue
    with zipfile.ZipFile(path) as zf:
        check(zf.testzip() is None, f'{mode}: zipfile finds a bad CRC')
        methods = {i.filename: i.compress_type for i in zf.infolist()}
        if mode == 'stored':
            check(all(m == zipfile.ZIP_STORED for m in methods.values()), f'stored file has {methods}')
        else:
            check(methods.get('big.npy') == zipfile.ZIP_DEFLATED, f'deflate file has {methods}')
    with np.load(path) as z:
        check(sorted(z.files) == sorted(list(expected) + ['__cltrain__', 'raw']), f'{mode}: keys {z.files}')
        for name, want in expected.items():
            got = z[name]
            check(got.dtype == np.dtype('<f4'), f'{mode} {name}: dtype {got.dtype}')
            check(got.shape == want.shape, f'{mode} {name}: shape {got.shape} want {want.shape}')
            check(got.flags['C_CONTIGUOUS'], f'{mode} {name}: not C order')
            if got.shape == want.shape:
                check(np.array_equal(bits(got), bits(want)), f'{mode} {name}: values differ')
        m = z['__cltrain__']
        check(m.dtype == np.uint8 and m.ndim == 1, f'{mode}: metadata dtype {m.dtype} ndim {m.ndim}')
        check(bytes(m) == meta and json.loads(bytes(m))['epoch'] == 3, f'{mode}: metadata {bytes(m)!r}')
        check(bytes(z['raw']) == bytes(range(256)), f'{mode}: raw bytes differ')

# ---- (b) NumPy writes, cltrain reads ---------------------------------------
rng = np.random.default_rng(7)
arrays = {
    'scalar': np.float32(2.5),
    'one': np.array([7.0], np.float32),
    'mat': rng.standard_normal((5, 7)).astype(np.float32),
    't6': rng.standard_normal((2, 1, 3, 1, 2, 2)).astype(np.float32),
    'empty': np.zeros((0, 4), np.float32),
    'special': np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, 1.17e-38], np.float32),
    'momentum/0.weight': rng.standard_normal((3, 3)).astype(np.float32),
    'meta': np.frombuffer(b'{"a": 1}', np.uint8),
    'sbytes': np.array(b'hello world'),
    'labels64': np.array([0, 9, -3, 2**40], np.int64),
    'labels16': np.array([1, 65535], np.uint16),
    'big': rng.standard_normal((200, 300)).astype(np.float32),
    'zeros': np.zeros((100, 1000), np.float32),
}


class Unseekable:
    """A stream without tell/seek: zipfile then writes data descriptors."""

    def __init__(self, f):
        self.f = f

    def write(self, b):
        return self.f.write(b)

    def flush(self):
        self.f.flush()

    def read(self, *args):  # numpy.savez takes objects with read() for files
        raise OSError('write-only stream')


def numpy_files(prefix, arrs):
    out = {}
    out['savez'] = os.path.join(tmp, f'{prefix}-savez.npz')
    np.savez(out['savez'], **arrs)
    out['savez_compressed'] = os.path.join(tmp, f'{prefix}-compressed.npz')
    np.savez_compressed(out['savez_compressed'], **arrs)
    out['stream'] = os.path.join(tmp, f'{prefix}-stream.npz')
    with open(out['stream'], 'wb') as f:
        np.savez_compressed(Unseekable(f), **arrs)
    return out


files = numpy_files('numpy', arrays)
with zipfile.ZipFile(files['stream']) as zf:
    check(all(i.flag_bits & 8 for i in zf.infolist()), 'the stream file should use data descriptors')
for how, path in files.items():
    r = tool('dump', path)
    check(r.returncode == 0, f'{how}: cltrain cannot read it: {r.stderr}')
    if r.returncode:
        continue
    entries = {e['name']: e for e in json.loads(r.stdout)['entries']}
    check(sorted(entries) == sorted(arrays), f'{how}: names {sorted(entries)}')
    for name, a in arrays.items():
        e = entries.get(name)
        if e is None:
            continue
        a = np.asarray(a)
        check(tuple(e['shape']) == a.shape, f'{how} {name}: shape {e["shape"]} want {a.shape}')
        check(e['dtype'] == a.dtype.str, f'{how} {name}: dtype {e["dtype"]} want {a.dtype.str}')
        if a.dtype == np.float32:
            check(e['is_bytes'] == 0 and e['bits'] == bits(a).tolist(), f'{how} {name}: values differ')
        else:
            check(e['is_bytes'] == 1 and e['hex'] == a.tobytes().hex(), f'{how} {name}: bytes differ')

# Refused: each message names the entry and the reason.
refused = {
    'f64': (np.zeros(3), "'<f8'"),
    'bigendian': (np.zeros(3, '>f4'), "'>f4'"),
    'fortran': (np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32)), 'fortran_order is True'),
    'bigendian_int32': (np.arange(3, dtype='>i4'), "'>i4'"),
    'rank7': (np.zeros((1,) * 7, np.float32), 'more than 6 dimensions'),
    'objects': (np.array([{'a': 1}], dtype=object), 'never unpickles'),
}
for name, (a, needle) in refused.items():
    path = os.path.join(tmp, f'refused-{name}.npz')
    np.savez(path, good=np.ones(2, np.float32), **{name: a})
    r = tool('dump', path)
    check(r.returncode == 1, f'{name}: exit {r.returncode}')
    check('CLT_ERR_FORMAT' in r.stderr and f'{name}.npy' in r.stderr and needle in r.stderr and path in r.stderr,
          f'{name}: message {r.stderr.strip()!r} lacks {needle!r}, the entry or the file')

# ---- (c) a PyTorch-style state_dict through NumPy, into lenet ---------------
lenet = [('0.weight', (20, 1, 3, 3)), ('0.bias', (20,)), ('3.weight', (50, 20, 5, 5)), ('3.bias', (50,)),
         ('7.weight', (128, 800)), ('7.bias', (128,)), ('9.weight', (10, 128)), ('9.bias', (10,))]
saved = os.path.join(tmp, 'lenet.npz')
r = tool('net-save', saved, 5)
if r.returncode == 77:
    print('note: no OpenCL device, the lenet part is skipped')
else:
    check(r.returncode == 0, f'net-save: {r.stderr}')
    with np.load(saved) as z:
        own = ['__cltrain__/spec', '__cltrain__/input', '__cltrain__/version']
        check(z.files == [n for n, _ in lenet] + own, f'lenet keys in order, then the file\'s own: {z.files}')
        state = {k: z[k] for k in z.files if not k.startswith('__cltrain__/')}
    for name, shape in lenet:
        check(state[name].shape == shape and state[name].dtype == np.float32, f'{name}: {state[name].shape}')
    check(np.std(state['3.weight']) > 0, 'xavier weights are not all equal')
    # What a user does with a torch state_dict: {k: v.numpy()} then savez.
    new = {k: (v * 2 + 0.5).astype(np.float32) for k, v in state.items()}
    for how, path in numpy_files('state', new).items():
        out = os.path.join(tmp, f'reloaded-{how}.npz')
        r = tool('net-load', path, out)
        check(r.returncode == 0, f'net-load {how}: {r.stderr}')
        if r.returncode == 0:
            with np.load(out) as z:
                for k, v in new.items():
                    check(np.array_equal(bits(z[k]), bits(v)), f'{how}: {k} differs after load and save')
    bad_cases = {
        'missing': ({k: v for k, v in new.items() if k != '9.bias'}, ['"9.bias"', '(10,)', 'missing']),
        'shape': ({**new, '3.weight': np.zeros((50, 20, 3, 3), np.float32)},
                  ['"3.weight"', '(50, 20, 5, 5)', '(50, 20, 3, 3)']),
        'extra': ({**new, 'features.0.weight': np.zeros(3, np.float32)}, ['"features.0.weight"', 'not a parameter']),
        'float64': ({**new, '7.bias': new['7.bias'].astype(np.float64)}, ['7.bias.npy', "'<f8'", 'astype']),
        'renamed': ({('features.' + k): v for k, v in new.items()}, ['"0.weight"', 'missing', 'features.0.weight']),
    }
    for case, (sd, needles) in bad_cases.items():
        path = os.path.join(tmp, f'bad-{case}.npz')
        np.savez(path, **sd)
        r = tool('net-load', path, os.path.join(tmp, 'never.npz'))
        check(r.returncode == 1, f'{case}: exit {r.returncode}')
        for n in needles:
            check(n in r.stderr, f'{case}: message {r.stderr.strip()!r} lacks {n!r}')
        check(not os.path.exists(os.path.join(tmp, 'never.npz')), f'{case}: output written after an error')

for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
finish()
