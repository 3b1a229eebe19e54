#!/usr/bin/env python3
"""A trained net's file opens on its own: an exported .npz carries its spec,
input shape, normalisation and class names under the documented keys;
`cltrain predict` agrees with `eval` (whose confusion matrix sums to the
count) and applies the net's normalisation; a checkpoint predicts as its
export does; a state_dict alone needs --model; inputs of another shape, a
--top above the class count and a bad --output are refused naming both
sides, leaving an existing output untouched.
Exits 77 without numpy or an OpenCL device."""
import csv
import io
import json
import os
import sys
import tempfile

CLTRAIN = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import COLOUR_NET as NET, COLOUR_OPTIONS as COMMON, check, colour_task, need_device, finish, need_numpy, runner  # noqa: E402

np = need_numpy()
need_device()

tmp = tempfile.mkdtemp(prefix='cltrain-predict-')
cltrain = runner(CLTRAIN)


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


images, labels = colour_task(np, 360, 5)
data = os.path.join(tmp, 'data.npz')
np.savez(data, x_train=images[:300], y_train=labels[:300], x_test=images[300:], y_test=labels[300:])

export, ck = os.path.join(tmp, 'net.npz'), os.path.join(tmp, 'ck.npz')
r = cltrain('train', '--data', data, '--epochs', 3, '--normalize', 'auto', '--export-npz', export, '--save', ck,
            '--json', *COMMON)
check(r.returncode == 0, f'train: exit {r.returncode}: {r.stderr}')
last = [json.loads(x) for x in r.stdout.splitlines() if x.startswith('{')][-1]

# The documented keys.
z = np.load(export)
check(bytes(z['__cltrain__/spec']).decode() == NET, f'spec key: {z["__cltrain__/spec"]}')
check(list(z['__cltrain__/input']) == [3, 8, 8], f'input key: {z["__cltrain__/input"]}')
norm = z['__cltrain__/normalize']
want_mean = (images[:300].reshape(-1, 3) / 255.0).mean(axis=0)
check(norm.shape == (2, 3) and np.allclose(norm[0], want_mean, atol=1e-5), f'normalize key: {norm} vs {want_mean}')
check(bytes(z['__cltrain__/version']).decode().count('.') == 2, 'version key')
check('__cltrain__/classes' not in z, 'no class names for an .npz source')

# eval opens the file on its own (model and normalisation from it) and
# gives the run's last test accuracy; its confusion matrix sums to the count.
r = cltrain('eval', '--init-from', export, '--data', data, '--json', '--devices', 0)
check(r.returncode == 0, f'eval --init-from: exit {r.returncode}: {r.stderr}')
ev = json.loads(r.stdout) if r.returncode == 0 else {}
check(abs(ev.get('test_acc', -1) - last['test_acc']) < 1e-9, f'eval acc {ev.get("test_acc")} vs train {last["test_acc"]}')
conf = np.array(ev.get('confusion', [[0]]))
check(conf.shape == (3, 3) and conf.sum() == 60, f'confusion matrix sums to the count: {conf}')
check(abs(np.trace(conf) / 60 - ev.get('test_acc', -1)) < 1e-9, 'the diagonal is the accuracy')
per = ev.get('class_acc', [])
check(len(per) == 3 and all(abs(per[k] - conf[k, k] / conf[k].sum()) < 1e-6 for k in range(3)), f'class_acc {per}')
r = cltrain('eval', '--init-from', export, '--data', data, '--devices', 0)
check('confusion matrix' in r.stdout and 'accuracy' in r.stdout, f'eval text table: {r.stdout}')

# predict agrees with eval, on the device alone and through --output.
out = os.path.join(tmp, 'p.csv')
r = cltrain('predict', '--init-from', export, '--data', data, '--top', 3, '--output', out)
check(r.returncode == 0 and r.stdout == '', f'predict --output: exit {r.returncode}: {r.stderr}')
p = rows(open(out).read()) if os.path.exists(out) else []
check(len(p) == 60, f'one line per sample: {len(p)}')
acc = sum(row['class_1'] == row['label'] for row in p) / max(len(p), 1)
check(abs(acc - ev.get('test_acc', -1)) < 1e-9, f'predict accuracy {acc} vs eval {ev.get("test_acc")}')
check(all(abs(sum(float(row[f'prob_{j}']) for j in (1, 2, 3)) - 1) < 1e-4 for row in p), 'probabilities sum to 1')
check(all(float(row['prob_1']) >= float(row['prob_2']) >= float(row['prob_3']) for row in p), 'best first')
pred = [int(row['class_1']) for row in p]
check(all(conf[int(row['label'])].sum() for row in p), 'labels are the test labels')

# A checkpoint predicts as its export does; predict to standard output.
r = cltrain('predict', '--resume', ck, '--data', data, '--top', 3)
check(r.returncode == 0 and r.stdout == open(out).read(), f'--resume predicts as the export: {r.stderr}')

# Without the normalisation the net was trained with, it predicts otherwise:
# the file's normalisation is applied (a state_dict alone has none).
plain = os.path.join(tmp, 'plain.npz')
np.savez(plain, **{k: z[k] for k in z.files if not k.startswith('__cltrain__/')})
r = cltrain('predict', '--init-from', plain, '--data', data, '--top', 3)
check(r.returncode == 2 and '--model' in r.stderr, f'a state_dict alone needs --model: {r.returncode} {r.stderr}')
r = cltrain('predict', '--init-from', plain, '--model', NET, '--data', data, '--top', 3)
check(r.returncode == 0 and r.stdout != open(out).read(), f'parameters alone: no normalisation: {r.stderr}')

# Refusals: another input shape, --top above the classes, and an output
# left as it was.
other = os.path.join(tmp, 'other.npz')
np.savez(other, images=images[:20, :4], labels=labels[:20])
with open(out, 'w') as f:
    f.write('keep\n')
r = cltrain('predict', '--init-from', export, '--data', other, '--output', out)
check(r.returncode != 0 and '3x4x8' in r.stderr and '3x8x8' in r.stderr, f'shape refused naming both: {r.stderr}')
check(open(out).read() == 'keep\n', 'the output is untouched after a refusal')
r = cltrain('predict', '--init-from', export, '--data', data, '--top', 4)
check(r.returncode == 2 and '3 classes' in r.stderr, f'--top 4 of 3 classes: {r.stderr}')
r = cltrain('predict', '--data', data)
check(r.returncode == 2 and '--init-from' in r.stderr, f'predict needs a net: {r.stderr}')
r = cltrain('predict', '--init-from', os.path.join(tmp, 'missing.npz'), '--data', data)
check(r.returncode == 1 and 'missing.npz' in r.stderr, f'an unknown file is named: {r.returncode} {r.stderr}')
r = cltrain('predict', '--init-from', export, '--data', data, '--output', tmp)
check(r.returncode == 1 and '--output' in r.stderr and tmp in r.stderr, f'an output that is a directory: {r.stderr}')

# A checkpoint is not a net's parameters alone: --init-from of one is refused.
r = cltrain('train', '--data', data, '--init-from', ck, '--epochs', 1, *COMMON)
check(r.returncode != 0 and 'checkpoint' in r.stderr, f'--init-from a checkpoint: {r.stderr}')
finish()
