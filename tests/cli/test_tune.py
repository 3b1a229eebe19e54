#!/usr/bin/env python3
"""cltrain tune and tuning at first use (CPU devices, where the lanes kernels
run): tune measures each device in turn and keeps the choices in the cache
directory; a second tune and a training run then measure nothing (no
notice); a training run in a fresh cache prints the notice once per device,
naming CLTRAIN_TUNE=0; tune --again and CLTRAIN_TUNE=again measure the kept
shapes again; CLTRAIN_TUNE=0 and a disabled cache refuse tune, and so does
a cache that cannot be written, which training reports once per device;
a tuning file that cannot be written fails tune, naming it; Ctrl-C during
the first tuning stops within seconds; bad CLTRAIN_TUNE and CLTRAIN_LOG
values are refused by name; bench ops names the tuned configuration of each
convolution."""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

CLTRAIN = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, device_count, finish  # noqa: E402

NOTICE = 'tuning the convolution kernels'


def run(*args, env=None, timeout=600):
    p = subprocess.run([CLTRAIN, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def cpu_devices():
    smi = os.path.join(os.environ['CLTRAIN_BUILD_ROOT'], 'tools', 'smi', 'cltrain-smi')
    p = subprocess.run([smi, '--json'], capture_output=True, text=True, timeout=60)
    return [d['index'] for d in json.loads(p.stdout)['devices'] if d.get('type') == 'CPU'] if p.returncode == 0 else []


cpus = cpu_devices()
if not cpus or device_count() < 1:
    print('skip: the lanes kernels run on CPU devices; none visible')
    sys.exit(77)
devs = ','.join(str(i) for i in cpus[:2])

with tempfile.TemporaryDirectory() as tmp:
    env = {k: v for k, v in os.environ.items() if k != 'CLTRAIN_TUNE'}
    env['CLTRAIN_CACHE_DIR'] = tmp
    small = ['--model', 'conv:8:3,relu,avgpool:2,conv:8:3,relu,flatten,dense:10', '--batch-size', '64']

    rc, out, err = run('tune', *small, '--devices', devs, env=env)
    check(rc == 0 and out.count('tuned in') == 1 and 'kept in ' + tmp in out, f'tune: rc {rc}, {out!r} {err!r}')
    files = glob.glob(os.path.join(tmp, 'tune-*.txt'))
    check(len(files) == 1, f'one tuning file for one kind of device: {files}')
    text = open(files[0]).read() if files else ''
    check(text.startswith('cltrain-tune 2 ') and text.count('\tvw') >= 3, f'tuning file: {text!r}')

    rc, out, err = run('tune', *small, '--devices', devs, env=env)
    check(rc == 0 and 'already tuned' in out and 'tuned in' not in out.replace('already tuned', ''),
          f'second tune: {out!r}')
    # --again (or CLTRAIN_TUNE=again) measures the kept shapes again on every device, one entry per shape
    for extra, tune_env in [(['--again'], env), ([], dict(env, CLTRAIN_TUNE='again'))]:
        rc, out, err = run('tune', *small, '--devices', devs, *extra, env=tune_env)
        again = open(files[0]).read() if files else ''
        check(rc == 0 and out.count('tuned in') == out.count('device ') >= 1 and 'already' not in out
              and again.count('\tvw') == text.count('\tvw'), f'tune {extra}: rc {rc}, {out!r} {err!r} {again!r}')
    rc, out, err = run('train', '--again', env=env)
    check(rc == 2 and '--again does not apply to cltrain train' in err, f'train --again: rc {rc}, {err!r}')
    rc, out, err = run('bench', 'train', *small, '--devices', cpus[0].__str__(), '--steps', '1', env=env)
    check(rc == 0 and NOTICE not in err, f'bench train after tune measured again: {err!r}')

    rc, out, err = run('bench', 'ops', '--model', 'lenet', '--devices', str(cpus[0]), '--batch-size', '32',
                       '--repeat', '1', '--json', env=env)
    kernels = [o.get('kernel', '') for o in json.loads(out)['devices'][0]['ops']] if rc == 0 else []
    check(any(k.startswith('lanes vw') and k.endswith(' tuned') for k in kernels), f'bench ops kernels: {kernels}')

with tempfile.TemporaryDirectory() as tmp:
    env = {k: v for k, v in os.environ.items() if k != 'CLTRAIN_TUNE'}
    env['CLTRAIN_CACHE_DIR'] = tmp
    rc, out, err = run('bench', 'train', '--model', 'conv:8:3,relu,conv:8:3,relu,flatten,dense:10', '--devices', str(cpus[0]),
                       '--batch-size', '32', '--steps', '1', env=env)
    check(rc == 0 and err.count(NOTICE) == 1 and 'CLTRAIN_TUNE=0' in err, f'first use: rc {rc}, {err!r}')
    env['CLTRAIN_TUNE'] = '0'
    rc, out, err = run('tune', env=env)
    check(rc == 2 and 'CLTRAIN_TUNE=0' in err, f'tune with CLTRAIN_TUNE=0: rc {rc}, {err!r}')

env = dict(os.environ, CLTRAIN_CACHE='0')
env.pop('CLTRAIN_TUNE', None)
rc, out, err = run('tune', '--devices', str(cpus[0]), env=env)
check(rc == 1 and 'cache is off' in err, f'tune without a cache: rc {rc}, {err!r}')

# a cache directory that cannot be made (for root too): tune refuses to
# measure for nothing; training warns once per device, not once per entry,
# and its notice says the choices stay in memory
env = {k: v for k, v in os.environ.items() if k != 'CLTRAIN_TUNE'}
env['CLTRAIN_CACHE_DIR'] = '/dev/null/cache'
rc, out, err = run('tune', '--devices', str(cpus[0]), env=env)
check(rc == 1 and 'tune: device ' in err and 'cannot create directory /dev/null/cache' in err
      and 'kept in' not in out, f'tune into an unwritable cache: rc {rc}, {out!r} {err!r}')
rc, out, err = run('bench', 'train', '--model', 'conv:8:3,relu,avgpool:2,conv:8:3,relu,flatten,dense:10', '--devices',
                   str(cpus[0]), '--batch-size', '32', '--steps', '1', env=env)
check(rc == 0 and err.count('cannot store') == 1 and 'set CLTRAIN_CACHE_DIR' in err
      and NOTICE in err and 'kept in memory only; the cache cannot be written' in err,
      f'training with an unwritable cache: rc {rc}, {err!r}')

# a tuning file that cannot be written (a directory where it goes): tune
# says which choices were not kept and fails; it said "kept in" and exit 0
with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as blocked:
    env = {k: v for k, v in os.environ.items() if k != 'CLTRAIN_TUNE'}
    tiny = ['--model', 'conv:4:3,relu,flatten,dense:2', '--batch-size', '32', '--devices', str(cpus[0])]
    rc, out, err = run('tune', *tiny, env=dict(env, CLTRAIN_CACHE_DIR=tmp))
    for name in [os.path.basename(f) for f in glob.glob(os.path.join(tmp, 'tune-*.txt'))]:
        os.mkdir(os.path.join(blocked, name))
    rc, out, err = run('tune', *tiny, env=dict(env, CLTRAIN_CACHE_DIR=blocked))
    check(rc == 1 and 'could not be kept in ' + blocked in err and 'is a directory' in err and 'kept in' not in out,
          f'tune whose choices cannot be kept: rc {rc}, {out!r} {err!r}')

# Ctrl-C while the first run on a device tunes: the measuring stops at once
# (the rule's choices run the step, unkept), the step ends, the run saves
# and stops with 130; it waited for the tuning to end (21 s for LeNet)
with tempfile.TemporaryDirectory() as tmp:
    env = {k: v for k, v in os.environ.items() if k != 'CLTRAIN_TUNE'}
    env['CLTRAIN_CACHE_DIR'] = tmp
    ck = os.path.join(tmp, 'int.ck')
    p = subprocess.Popen([CLTRAIN, 'train', '--devices', str(cpus[0]), '--limit-train', '512', '--limit-test', '64',
                          '--epochs', '100', '--save', ck, '--quiet'], stderr=subprocess.PIPE, text=True, env=env)
    tune_file = lambda: ''.join(open(f).read() for f in glob.glob(os.path.join(tmp, 'tune-*.txt')))  # noqa: E731
    first = p.stderr.readline()
    p.send_signal(signal.SIGINT)
    t0 = time.time()
    try:
        err = first + p.communicate(timeout=120)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        err = first + p.communicate()[1]
    waited = time.time() - t0
    check(NOTICE in first and p.returncode == 130 and waited < 60 and 'checkpoint saved' in err and os.path.exists(ck),
          f'Ctrl-C during the first tuning: rc {p.returncode} after {waited:.1f} s, {err!r}')
    kept = tune_file().count('\n')
    rc, out, err = run('tune', '--devices', str(cpus[0]), '--batch-size', '256', env=env)
    check(rc == 0 and 'already tuned' not in out and tune_file().count('\n') > kept,
          f'the interrupted tuning kept only what it measured ({kept} lines, then {tune_file().count(chr(10))}): '
          f'{out!r} {err!r}')

for var, value in [('CLTRAIN_TUNE', 'yes'), ('CLTRAIN_LOG', 'loud')]:
    rc, out, err = run('bench', 'train', '--devices', str(cpus[0]), '--steps', '1', env=dict(os.environ, **{var: value}))
    check(rc != 0 and var in err and value in err, f'{var}={value}: rc {rc}, {err!r}')

finish()
