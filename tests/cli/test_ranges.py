#!/usr/bin/env python3
"""One rule per option: every numeric option's range, as cltrain train
--help states it (from the one table the command line and the run record
reader share), is taken at both ends by the command line, written into a
checkpoint, and read back by train --resume and eval --resume; a value just
outside is refused naming the option. A run that stopped with values the
command line took could not be resumed: its record check disagreed."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

CLTRAIN, SIGAT = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, need_device, finish  # noqa: E402

if not os.path.isdir('/usr/share/datasets/fashion-mnist'):
    print('skip: Fashion-MNIST not installed')
    sys.exit(77)
need_device()

tmp = tempfile.mkdtemp()
help_text = subprocess.run([CLTRAIN, 'train', '--help'], capture_output=True, text=True, timeout=60).stdout
# "--lr X    learning rate (default 0.2); X in [0, 1e+06]", a range on the option's line or a continuation
ranges = {}
name = None
for line in help_text.splitlines():
    m = re.match(r'\s+--([a-z-]+)', line)
    if m:
        name = m.group(1)
    r = re.search(r'; (?:\S+|each) in (?:([\[(])([^,]+), ([^\])]+)([\])])|(-?\d+)\.\.(\d+))$', line)
    if r and name:
        if r.group(5):
            ranges[name] = ('int', int(r.group(5)), int(r.group(6)), False, False)
        else:
            ranges[name] = ('num', float(r.group(2)), float(r.group(3)), r.group(1) == '(', r.group(4) == ')')
check(len(ranges) >= 18, f'--help states the ranges of the numeric options: {sorted(ranges)}')

BASE = ['--model', 'flatten,dense:10', '--limit-test', '32', '--quiet']


def ends(kind, lo, hi, lo_open, hi_open):
    """The values just inside both ends, as text."""
    if kind == 'int':
        return [str(lo), str(hi)]
    inner_lo = (lo * (1 + 1e-6) if lo else 1e-40) if lo_open else lo
    inner_hi = hi * (1 - 1e-7) if hi_open else hi
    return [repr(inner_lo), repr(inner_hi)]


def outside(kind, lo, hi, lo_open, hi_open):
    return [str(lo - 1), str(hi + 1)] if kind == 'int' else [repr(lo) if lo_open else repr(lo - 1),
                                                             repr(hi) if hi_open else repr(hi * 2)]


def run(args, env=None):
    p = subprocess.run([CLTRAIN, *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})})
    return p.returncode, p.stderr


def stop_at_save(ck):
    """SIGTERM while ck is renamed into place: the run stops there, saved."""
    return {'LD_PRELOAD': SIGAT, 'SIGAT_RENAME': os.path.basename(ck), 'SIGAT_SIGNAL': str(int(signal.SIGTERM)),
            'ASAN_OPTIONS': ':'.join(filter(None, [os.environ.get('ASAN_OPTIONS'), 'verify_asan_link_order=0']))}


# Options that apply together share a run (at both ends at once); an
# option not named here runs alone.
GROUPS = [['batch-size', 'seed', 'limit-train', 'limit-test', 'lr', 'momentum', 'weight-decay', 'clip-grad-norm',
           'label-smoothing', 'warmup-steps', 'steps'],
          ['betas', 'eps'], ['lr-step', 'lr-gamma'], ['lr-milestones'], ['lr-min'], ['warmup-epochs', 'epochs']]
COMPANIONS = {'betas': ['--optimizer', 'adam'], 'lr-step': ['--lr-schedule', 'step'],
              'lr-milestones': ['--lr-schedule', 'multistep', '--lr-gamma', '0.5'],
              'lr-min': ['--lr-schedule', 'cosine', '--lr', '1e6']}
groups = [[o for o in g if o in ranges] for g in GROUPS] + [[o] for o in sorted(ranges) if not any(o in g for g in GROUPS)]
for g, opts in enumerate(groups):
    for end in (0, 1):
        args, said = [], []
        for opt in opts:
            v = ends(*ranges[opt])[end]
            args += [f'--{opt}', f'{v},{v}' if opt == 'betas' else v] + COMPANIONS.get(opt, [])
            said.append(f'--{opt} {v}')
        what = ' '.join(said)
        ck = os.path.join(tmp, f'{g}-{end}.ck')
        rc, err = run(['train', *BASE, '--save', ck, *args], stop_at_save(ck))
        if not check(rc in (0, 143) and os.path.exists(ck), f'{what}: train saves: rc {rc} {err[-300:]!r}'):
            continue
        # resumed: the record is read and checked, the trainer made with its values
        rc, err = run(['train', '--resume', ck, '--save', ck, '--quiet', '--limit-test', '32'], stop_at_save(ck))
        diverged = rc == 1 and ('NaN' in err or 'infinite' in err or 'diverged' in err)
        check(rc in (0, 143) or diverged, f'{what}: train --resume: rc {rc} {err[-300:]!r}')
        rc, err = run(['eval', '--resume', ck, '--limit-test', '32'])
        check(rc == 0, f'{what}: eval --resume: rc {rc} {err[-300:]!r}')
for opt, spec in sorted(ranges.items()):
    for v in outside(*spec):
        value = f'{v},{v}' if opt == 'betas' else v
        rc, err = run(['train', *BASE, f'--{opt}', value] + COMPANIONS.get(opt, []))
        check(rc == 2 and f'--{opt}' in err, f'--{opt} {value} (outside): rc {rc} {err[-300:]!r}')

# float32 is what the library takes: a value that rounds onto an open end is out
rc, err = run(['train', *BASE, '--optimizer', 'adam', '--betas', '0.99999999,0.9'])
check(rc == 2 and 'float32' in err, f'--betas rounding to 1: rc {rc} {err!r}')
# Adam's eps of 0 makes a parameter whose gradient is 0 NaN at the first step
rc, err = run(['train', *BASE, '--optimizer', 'adam', '--eps', '0'])
check(rc == 2 and '--eps' in err, f'--eps 0: rc {rc} {err!r}')

shutil.rmtree(tmp, ignore_errors=True)
finish()
