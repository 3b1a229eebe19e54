#!/usr/bin/env python3
"""cltrain train never crashes, and loses nothing on a stop: batches over 512
samples per CPU device; a stop (SIGTERM in a save, SIGHUP, a closed stdout)
saves before anything else and evaluates nothing; a signal during the last
save is reported; a failing log or plot costs no checkpoint; outputs another
run writes, a sticky directory's files and files larger than the process may
write are refused before step 1; a step larger than the memory limit is
refused before it runs; the stale-temporary cleaner spares live writers."""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

CLTRAIN, SIGAT = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, device_count, finish  # noqa: E402

if not os.path.isdir('/usr/share/datasets/fashion-mnist'):
    print('skip: Fashion-MNIST not installed')
    sys.exit(77)
devices = device_count()
if devices < 1:
    print('skip: no OpenCL device')
    sys.exit(77)

tmp = tempfile.mkdtemp()
P = lambda name: os.path.join(tmp, name)  # noqa: E731
TINY = ['--model', 'flatten,dense:10', '--limit-test', '64']


def run(*args, env=None, timeout=300, preexec=None):
    p = subprocess.run([CLTRAIN, *args], capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else {**os.environ, **env}, preexec_fn=preexec)
    return p.returncode, p.stdout, p.stderr


def start(*args, **kw):
    """A long run in the background; SIGHUP's default restored (a runner under nohup passes it on ignored)."""
    return subprocess.Popen([CLTRAIN, *args], preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL), **kw)


def finish_run(p, timeout=120):
    """(exit status, stderr) of a background run; killed past the timeout."""
    try:
        err = p.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        err = (p.communicate()[1] or '') + ' (killed: it did not end)'
    return p.returncode, err or ''


def cpu_device():
    smi = os.path.join(os.environ['CLTRAIN_BUILD_ROOT'], 'tools', 'smi', 'cltrain-smi')
    r = subprocess.run([smi, '--json'], capture_output=True, text=True, timeout=60)
    cpus = [d['index'] for d in json.loads(r.stdout)['devices'] if d.get('type') == 'CPU'] if r.returncode == 0 else []
    return cpus[0] if cpus else None


def meta(ck):
    """The run record of a checkpoint."""
    with zipfile.ZipFile(ck) as z:
        raw = z.read('__cltrain__/meta.npy')
    return json.loads(raw[raw.index(b'{"format"'):].decode())


def wait_for(path, proc, limit=120):
    t0 = time.time()
    while not os.path.exists(path) and proc.poll() is None and time.time() - t0 < limit:
        time.sleep(0.05)
    return os.path.exists(path)


def sigat(suffix, sig=signal.SIGTERM):
    return {'LD_PRELOAD': SIGAT, 'SIGAT_RENAME': suffix, 'SIGAT_SIGNAL': str(int(sig)),
            'ASAN_OPTIONS': ':'.join(filter(None, [os.environ.get('ASAN_OPTIONS'), 'verify_asan_link_order=0']))}


# More than 512 samples on one CPU device: the dense layers' weight
# gradient sums the batch in chunks (it crashed: SIGSEGV, no message); two
# devices at 1026; a two-device checkpoint at batch 1024 resumes on one.
rc, out, err = run('train', '--devices', '0', '--batch-size', '513', '--limit-train', '1024', '--steps', '1',
                   '--limit-test', '64', '--json')
check(rc == 0 and json.loads(out)['steps'] == 1, f'batch 513 on one device: rc {rc} {err[-300:]!r}')
if devices >= 2:
    rc, out, err = run('train', '--devices', '0,1', '--batch-size', '1026', '--limit-train', '2048', '--steps', '1',
                       '--limit-test', '64', '--save', P('b1024.ck'))
    check(rc == 0, f'batch 1026 on two devices: rc {rc} {err[-300:]!r}')
    rc, out, err = run('train', '--devices', '0', '--resume', P('b1024.ck'), '--steps', '2', '--json')
    check(rc == 0 and json.loads(out.splitlines()[-1])['steps'] == 2,
          f'the two-device checkpoint at batch 1026 resumes on one device: rc {rc} {err[-300:]!r}')

# A stop saves first and evaluates nothing: SIGTERM arrives while epoch 1's
# checkpoint is renamed into place; the epoch's line has no test accuracy,
# and the run stops before epoch 2 with 143, the checkpoint naming epoch 2.
rc, out, err = run('train', *TINY, '--limit-train', '256', '--batch-size', '64', '--epochs', '3', '--save',
                   P('stop.ck'), '--json', '--log-csv', P('stop.csv'), env=sigat('stop.ck'))
lines = [json.loads(x) for x in out.splitlines() if x.strip()]
check(rc == 143 and 'terminated (SIGTERM) after step 4; checkpoint saved to' in err,
      f'a stop in a save: rc {rc} {err!r}')
check(len(lines) == 1 and lines[0]['epoch'] == 1 and lines[0]['test_acc'] is None,
      f'the stopped epoch is reported without an evaluation: {lines}')
check(os.path.exists(P('stop.ck')) and meta(P('stop.ck'))['epoch'] == 2 and meta(P('stop.ck'))['steps'] == 4,
      'the checkpoint continues at epoch 2')
csv = open(P('stop.csv')).read().splitlines() if os.path.exists(P('stop.csv')) else []
check(len(csv) == 2 and csv[1].split(',')[4] == '', f'the CSV row of the stopped epoch has no test accuracy: {csv}')
rc, out, err = run('train', '--resume', P('stop.ck'), '--json', '--limit-test', '64')
lines = [json.loads(x) for x in out.splitlines() if x.strip()]
check(rc == 0 and [x['epoch'] for x in lines] == [2, 3] and lines[-1]['steps'] == 12,
      f'the stopped run resumes to its end: rc {rc} {lines} {err[-300:]!r}')

# A signal during the last writes (here --export-npz, after the last
# epoch): everything is written, and the exit status says the process was
# asked to stop (it said 0)
rc, out, err = run('train', *TINY, '--limit-train', '64', '--batch-size', '64', '--epochs', '1', '--save',
                   P('late.ck'), '--export-npz', P('late.npz'), '--quiet', env=sigat('late.npz'))
check(rc == 143 and 'as the run ended; its outputs are written' in err and os.path.exists(P('late.npz')),
      f'SIGTERM during the final writes: rc {rc} {err!r}')

# SIGHUP (the terminal closed) stops and saves like SIGTERM
p = start('train', *TINY, '--limit-train', '64', '--batch-size', '64', '--epochs', '100000', '--save', P('hup.ck'),
          '--quiet', stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if check(wait_for(P('hup.ck'), p), 'SIGHUP: a checkpoint before the signal'):
    p.send_signal(signal.SIGHUP)
rc, err = finish_run(p)
check(rc == 129 and 'SIGHUP' in err and 'checkpoint saved' in err, f'SIGHUP: rc {rc} {err!r}')

# A closed standard output (cltrain train | head -1): the run stops after
# the epoch it could not report, saved, with 141 as a death by SIGPIPE
p = start('train', *TINY, '--limit-train', '2048', '--batch-size', '64', '--epochs', '1000000', '--save', P('pipe.ck'),
          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
first = p.stdout.readline()
p.stdout.close()
rc, err = finish_run(p)
check(first.startswith('epoch 1:') and rc == 141 and 'standard output is closed' in err,
      f'a closed stdout: rc {rc} {first!r} {err!r}')
check(os.path.exists(P('pipe.ck')) and meta(P('pipe.ck'))['epoch'] >= 3,
      'the epoch that could not be reported is saved')

# A log or plot that cannot be written ends the run with its reason, and
# that epoch's checkpoint is saved first
for opt, name in (('--log-csv', 'bad.csv'), ('--plot', 'bad.svg')):
    ck = P(name + '.ck')
    p = start('train', *TINY, '--limit-train', '640', '--batch-size', '64', '--epochs', '1000000', '--save', ck, opt,
              P(name), '--quiet', stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # the output exists once the first epoch is written (after its checkpoint)
    if check(wait_for(P(name), p) and wait_for(ck, p), f'{opt}: a checkpoint'):
        for attempt in range(1000):  # a directory where the output was (the run may write it again between)
            try:
                os.remove(P(name))
            except FileNotFoundError:
                pass
            try:
                os.mkdir(P(name))
                break
            except FileExistsError:
                continue
    rc, err = finish_run(p)
    check(rc == 1 and opt in err and 'directory' in err and 'is saved in' in err, f'{opt} that fails: rc {rc} {err!r}')
    steps = meta(ck)['steps'] if os.path.exists(ck) else -1
    check(f'the checkpoint after step {steps} is saved' in err, f'{opt}: the saved checkpoint is the last step')

# what could not be written to standard output is a failure, not exit 0
for cmd in (['train', *TINY, '--limit-train', '64', '--steps', '1', '--json'], ['--version']):
    with open('/dev/full', 'w') as full:
        p = subprocess.run([CLTRAIN, *cmd], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    check(p.returncode == 1 and 'No space left on device' in p.stderr, f'{cmd} > /dev/full: rc {p.returncode} '
          f'{p.stderr!r}')
smi = os.path.join(os.environ['CLTRAIN_BUILD_ROOT'], 'tools', 'smi', 'cltrain-smi')
with open('/dev/full', 'w') as full:
    p = subprocess.run([smi, '-L'], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
check(p.returncode == 1 and 'No space left on device' in p.stderr, f'cltrain-smi -L > /dev/full: rc {p.returncode}')

# one run writes an output at a time: a second run is refused naming the first
p = start('train', *TINY, '--limit-train', '64', '--batch-size', '64', '--epochs', '100000', '--save', P('own.ck'),
          '--log-csv', P('own.csv'), '--quiet', stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if check(wait_for(P('own.ck'), p), 'a run holding its outputs'):
    for opt, name in (('--save', 'own.ck'), ('--log-csv', 'own.csv')):
        rc, out, err = run('train', *TINY, '--limit-train', '64', '--steps', '1', opt, P(name))
        check(rc == 1 and 'being written by another run' in err and f'process {p.pid}' in err,
              f'a second run on {opt}: rc {rc} {err!r}')
p.terminate()
finish_run(p)
rc, out, err = run('train', *TINY, '--limit-train', '64', '--steps', '1', '--save', P('own.ck'))
check(rc == 0, f'the output is free once its run ended: rc {rc} {err!r}')
check(not [f for f in os.listdir(tmp) if f.endswith('.lock')], f'locks left: {os.listdir(tmp)}')

# files no larger than the process may write (ulimit -f), checked before
# step 1 from the parameter count; nothing is written
def limit():  # a write past it fails with EFBIG instead of killing (SIGXFSZ) the writer: PoCL's cache too
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
rc, out, err = run('train', '--model', 'flatten,dense:512,dense:10', '--limit-train', '64', '--limit-test', '64',
                   '--steps', '1', '--export-npz', P('big.npz'), preexec=limit)
check(rc == 1 and '--export-npz' in err and 'ulimit -f' in err and 'epoch' not in err and
      not os.path.exists(P('big.npz')), f'an export larger than the process may write: rc {rc} {err!r}')

# a step larger than the address space allows is refused before it runs,
# with the estimate and the limit (PoCL aborted the process: exit 134)
asan = 'libasan' in subprocess.run(['ldd', CLTRAIN], capture_output=True, text=True).stdout
cpu = cpu_device()
if asan or cpu is None:
    print('note: built with AddressSanitizer (it needs an unlimited address space), or no CPU device: the '
          'address-space check is not tested')
else:  # about 16 GB estimated against 8 GiB
    limit_as = lambda: resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # noqa: E731
    rc, out, err = run('train', '--model', 'resnet18', '--devices', str(cpu), '--batch-size', '2000', '--limit-train',
                       '2000', '--limit-test', '64', '--steps', '1', preexec=limit_as)
    check(rc == 1 and '--batch-size 2000' in err and 'ulimit -v' in err and 'samples per device fit' in err,
          f'a batch beyond the address-space limit: rc {rc} {err[-400:]!r}')

# A sticky directory (/tmp) lets only a file's owner replace it: refused
# before step 1 (it failed at the first save). Needs a file of another user.
if os.geteuid() == 0:
    sticky = P('sticky')
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    open(os.path.join(sticky, 'theirs.ck'), 'w').close()  # root's
    cache = P('nobody-cache')
    os.mkdir(cache)
    os.chmod(cache, 0o777)
    os.chmod(tmp, 0o755)

    def nobody():
        os.setgid(65534)
        os.setuid(65534)
    home = {'CLTRAIN_CACHE_DIR': cache, 'HOME': cache, 'XDG_CACHE_HOME': cache}  # PoCL's cache too
    rc, out, err = run('train', *TINY, '--limit-train', '64', '--steps', '1', '--save',
                       os.path.join(sticky, 'theirs.ck'), preexec=nobody, env=home)
    check(rc == 1 and 'sticky directory' in err and 'epoch' not in err, f'a file of another user in a sticky '
          f'directory: rc {rc} {err!r}')
else:
    print('note: not root: the sticky-directory check needs a file of another user; not tested')

shutil.rmtree(tmp, ignore_errors=True)
finish()
