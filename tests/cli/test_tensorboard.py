#!/usr/bin/env python3
"""cltrain train --tensorboard: TensorBoard's own reader reads back every
scalar at its step with the values --json printed; --resume continues the
one file without a step twice (events past the checkpoint and a torn tail
cut); a corrupted record fails TensorBoard's CRC check; a directory that
holds another run, or cannot be written, is refused before training; a
build without protobuf-c refuses the option."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

CLTRAIN, BUILD = sys.argv[1], sys.argv[2]  # BUILD: 'protobuf' or 'no-protobuf' (meson's feature)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, need_device, finish, need_modules  # noqa: E402


def run(*args, timeout=600):
    p = subprocess.run([CLTRAIN, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def epochs_of(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


if BUILD != 'protobuf':
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run('train', '--limit-train', '64', '--epochs', '1', '--tensorboard', os.path.join(tmp, 'tb'))
        check(rc == 2 and 'protobuf-c' in err and '--tensorboard' in err and len(err.strip().splitlines()) == 1
              and not os.listdir(tmp), f'refused without protobuf-c: rc {rc} {err!r}')
    finish()

need_modules('tensorboard')
from tensorboard.backend.event_processing import event_accumulator, event_file_loader  # noqa: E402
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow  # noqa: E402

need_device()

EPOCH_TAGS = {'loss/train': 'loss', 'accuracy/train': 'train_acc', 'loss/test': 'test_loss',
              'accuracy/test': 'test_acc', 'lr': 'lr', 'samples_per_s': 'samples_per_s', 'epoch': 'epoch'}
STEP_TAG = 'loss/train_step'
# 600 samples in batches of 256: steps of 256, 256 and 88 samples, 3 a epoch
COMMON = ['--limit-train', '600', '--limit-test', '200', '--batch-size', '256', '--json']
SIZES = [256, 256, 88]


def scalars(d):
    """{tag: [(step, value)]} as TensorBoard's EventAccumulator reads the run directory."""
    acc = event_accumulator.EventAccumulator(d, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()['scalars']}


def raw_events(path):
    """Every event of one file in order, as the loader yields them (no purging)."""
    return list(event_file_loader.EventFileLoader(path).Load())


def close(a, b):
    return abs(a - b) <= 2e-6 + 1e-5 * abs(b)  # float32 values against %.6f text


def check_epochs(got, lines, what):
    """The epoch tags at each line's step hold its values."""
    for tag, key in EPOCH_TAGS.items():
        want = [(l['steps'], l[key]) for l in lines]
        ok = [s for s, _ in got.get(tag, [])] == [s for s, _ in want] and all(
            close(v, w) for (_, v), (_, w) in zip(got.get(tag, []), want))
        check(ok, f'{what}: {tag} {got.get(tag)} against --json {want}')


def check_step_means(got, lines, what):
    """Each epoch's loss is its steps' losses weighted by their batches."""
    steps = dict(got.get(STEP_TAG, []))
    for line in lines:
        first = line['steps'] - len(SIZES) + 1
        mean = sum(steps.get(first + i, float('nan')) * n for i, n in enumerate(SIZES)) / sum(SIZES)
        check(close(mean, line['loss']), f'{what}: epoch {line["epoch"]} steps average {mean}, --json {line["loss"]}')


def event_files(d):
    return sorted(f for f in os.listdir(d) if 'tfevents' in f)


with tempfile.TemporaryDirectory() as tmp:
    P = lambda name: os.path.join(tmp, name)
    tb = P('runs/a')  # its parent made too
    rc, out1, err = run('train', *COMMON, '--epochs', '1', '--save', P('a.ck'), '--tensorboard', tb)
    check(rc == 0, f'train --tensorboard: rc {rc} {err}')
    shutil.copy(P('a.ck'), P('a1.ck'))
    rc, out2, err = run('train', '--resume', P('a.ck'), '--epochs', '2', '--save', P('a.ck'), '--tensorboard', tb,
                        '--limit-test', '200', '--json')
    check(rc == 0 and 'cut' not in err, f'--resume: rc {rc} {err}')
    lines = epochs_of(out1) + epochs_of(out2)
    files = event_files(tb)
    check(len(files) == 1 and files[0].startswith('events.out.tfevents.'), f'one event file, appended: {files}')
    got = scalars(tb)
    check(set(got) == set(EPOCH_TAGS) | {STEP_TAG}, f'tags: {sorted(got)}')
    check([s for s, _ in got.get(STEP_TAG, [])] == list(range(1, 7)), f'steps 1..6: {got.get(STEP_TAG)}')
    check_epochs(got, lines, 'two runs')
    check_step_means(got, lines, 'two runs')
    path = os.path.join(tb, files[0])
    events = raw_events(path)
    check(events and events[0].file_version == 'brain.Event:2', 'the file begins with its version')
    check(all(a.wall_time <= b.wall_time for a, b in zip(events, events[1:])) and events[0].wall_time > 1e9,
          'wall times in order')

    # a crash after the checkpoint at step 3: its later events are made again,
    # and a torn last record is cut, not continued
    with open(path, 'ab') as f:
        f.write(b'\x30\x00\x00\x00\x00\x00\x00\x00\x01\x02')
    rc, out3, err = run('train', '--resume', P('a1.ck'), '--epochs', '3', '--tensorboard', tb, '--limit-test', '200',
                        '--json')
    check(rc == 0 and "4 events after the checkpoint's step 3 cut" in err and 'the last 10 bytes' in err,
          f'resume from step 3: rc {rc} {err}')
    lines = epochs_of(out1) + epochs_of(out3)
    check(event_files(tb) == files, f'still one file: {event_files(tb)}')
    steps = [e.step for e in raw_events(path) if e.HasField('summary') and e.summary.value[0].tag == STEP_TAG]
    check(steps == list(range(1, 10)), f'each step once, in order: {steps}')
    got = scalars(tb)
    check_epochs(got, lines, 'resumed from step 3')
    check_step_means(got, lines, 'resumed from step 3')

    # a flipped byte fails TensorBoard's CRC check at its record
    data = bytearray(open(path, 'rb').read())
    data[len(data) // 2] ^= 0x20
    os.makedirs(P('bad'))
    with open(P('bad/' + files[0]), 'wb') as f:
        f.write(data)
    reader = pywrap_tensorflow.PyRecordReader_New(P('bad/' + files[0]))
    n, caught = 0, None
    try:
        while True:
            reader.GetNext()
            n += 1
    except errors.DataLossError as e:
        caught = str(e)
    except errors.OutOfRangeError:
        pass
    check(caught and 'crc32' in caught and 0 < n < len(raw_events(path)), f'corrupt record: {n} read, {caught}')

    # refused before training: another run's directory, one that cannot be
    for d, words in [(tb, ['already holds', 'up to step 9']), (P('a.ck'), ['is not a directory']),
                     (P('a.ck/sub'), ['cannot create directory'])]:
        rc, out, err = run('train', *COMMON, '--epochs', '1', '--tensorboard', d)
        check(rc == 1 and not out and f'--tensorboard {d}' in err and all(w in err for w in words)
              and len(err.strip().splitlines()) == 1, f'--tensorboard {d}: rc {rc} {out!r} {err!r}')
    if os.geteuid() != 0:  # root writes anywhere
        os.makedirs(P('ro'), mode=0o500)
        rc, out, err = run('train', *COMMON, '--epochs', '1', '--tensorboard', P('ro'))
        check(rc == 1 and not out and 'cannot write' in err, f'read-only directory: rc {rc} {err!r}')

    rc, out, err = run('train', '--help')
    check('--tensorboard DIR' in out, 'train --help lists --tensorboard')
    rc, out, err = run('eval', '--init-from', P('x.npz'), '--tensorboard', tb)
    check(rc == 2 and '--tensorboard does not apply to cltrain eval' in err, f'eval refuses it: {err!r}')
finish()
