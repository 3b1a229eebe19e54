#!/usr/bin/env python3
"""cltrain train under mpirun (2 processes, one PoCL device each): the run
equals one process on both devices, only process 0 prints and writes, a
killed process ends the whole job within a bound and the last checkpoint
stays loadable, SIGTERM stops every process at the same step."""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

CLTRAIN, MPIRUN = sys.argv[1], sys.argv[2]
LAUNCHER_ARGS = sys.argv[3].split() if len(sys.argv) > 3 else []  # Open MPI's flags; none for MPICH
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, device_count, finish  # noqa: E402

if not os.path.isdir('/usr/share/datasets/fashion-mnist'):
    print('skip: Fashion-MNIST not installed')
    sys.exit(77)
# Two processes take one device each (a GPU machine may show one).
if device_count() < 2:
    print(f'skip: needs two OpenCL devices, {device_count()} visible')
    sys.exit(77)
MPI = [MPIRUN, *LAUNCHER_ARGS, '-np', '2']
COMMON = ['--limit-train', '1024', '--limit-test', '256', '--batch-size', '64', '--seed', '3', '--json',
          '--model', 'conv:6:3:1:1,bn,relu,maxpool:2,flatten,dense:10', '--sync-bn']
tmp = tempfile.mkdtemp()
P = lambda name: os.path.join(tmp, name)  # noqa: E731


def lines(out):
    return [json.loads(x) for x in out.splitlines() if x.startswith('{')]


def npz(path):
    """name -> floats of each little-endian float32 .npy in a .npz (no NumPy needed)."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for n in z.namelist():
            b = z.read(n)
            hl = struct.unpack('<H', b[8:10])[0] if b[6] == 1 else struct.unpack('<I', b[8:12])[0]
            start = (10 if b[6] == 1 else 12) + hl
            out[n] = struct.unpack(f'<{(len(b) - start) // 4}f', b[start:])
    return out


# two processes equal one process on the two devices (float rounding)
p = subprocess.run(MPI + [CLTRAIN, 'train', *COMMON, '--epochs', '2', '--export-npz', P('mpi.npz'),
                          '--log-csv', P('mpi.csv')], capture_output=True, text=True, timeout=300)
q = subprocess.run([CLTRAIN, 'train', *COMMON, '--epochs', '2', '--devices', '0,1', '--export-npz', P('one.npz')],
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 0 and q.returncode == 0, f'runs: {p.returncode} {p.stderr[-800:]} / {q.returncode} {q.stderr[-400:]}')
a, b = lines(p.stdout), lines(q.stdout)
check(len(a) == 2, f'process 0 alone prints: {len(a)} epoch lines, {p.stdout[-600:]}')
check(all(x.get('processes') == 2 for x in a), f'the lines name 2 processes: {a}')
for x, y in zip(a, b):
    check(abs(x['loss'] - y['loss']) <= 1e-5 * y['loss'] and abs(x['test_acc'] - y['test_acc']) <= 1 / 256,
          f'epoch {x["epoch"]}: 2 processes {x} vs 1 process {y}')
if os.path.exists(P('mpi.npz')) and os.path.exists(P('one.npz')):
    A, B = npz(P('mpi.npz')), npz(P('one.npz'))
    worst = max(max(abs(x - y) for x, y in zip(A[k], B[k])) / (max(abs(y) for y in B[k]) + 1e-6) for k in B)
    check(A.keys() == B.keys() and worst < 1e-4, f'parameters after 2 epochs differ by {worst:.2e}')
check(os.path.exists(P('mpi.csv')) and len(open(P('mpi.csv')).read().splitlines()) == 3,
      'one CSV, written once per epoch by process 0')


def rank_pid(marker, rank):
    """The pid of process `rank` of the job whose command line holds marker."""
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\0')
            env = open(f'/proc/{pid}/environ', 'rb').read().split(b'\0')
        except OSError:
            continue
        ranks = (f'OMPI_COMM_WORLD_RANK={rank}'.encode(), f'PMI_RANK={rank}'.encode())  # Open MPI, MPICH
        if cmd and cmd[0].endswith(b'cltrain') and marker.encode() in b' '.join(cmd) and \
                any(r in env for r in ranks):
            return int(pid)
    return None


def start_long(ck):
    return subprocess.Popen(MPI + [CLTRAIN, 'train', *COMMON, '--epochs', '1000', '--save', ck],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path, proc, limit=120):
    t0 = time.time()
    while not os.path.exists(path) and proc.poll() is None and time.time() - t0 < limit:
        time.sleep(0.2)
    return os.path.exists(path)


# a killed process ends the job within a bound; the checkpoint stays loadable
job = start_long(P('k.ck'))
if check(wait_for(P('k.ck'), job), 'a checkpoint after the first epoch'):
    pid = rank_pid(P('k.ck'), 1)
    check(pid is not None, 'process 1 found')
    if pid:
        t0 = time.time()
        os.kill(pid, signal.SIGKILL)
        try:
            job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
        check(job.returncode not in (None, 0) and time.time() - t0 < 60,
              f'the job ended {time.time() - t0:.1f} s after process 1 was killed, exit {job.returncode}')
    r = subprocess.run([CLTRAIN, 'eval', '--resume', P('k.ck'), '--limit-test', '64', '--devices', '0'],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f'the last checkpoint loads: {r.stderr[-300:]}')
job.kill()
job.wait()

# SIGTERM to mpirun reaches every process; all stop after the same step, exit 143
job = start_long(P('t.ck'))
stopped_at = None
if check(wait_for(P('t.ck'), job), 'a checkpoint before SIGTERM'):
    job.send_signal(signal.SIGTERM)
    try:
        out, err = job.communicate(timeout=60)
        m = re.search(r'terminated \(SIGTERM\) after step (\d+)', err)
        stopped_at = int(m.group(1)) if m else None
        check('terminated (SIGTERM)' in err and err.count('terminated (SIGTERM)') == 1,
              f'process 0 alone reports the stop: {err[-500:]}')
        check(job.returncode != 0, f'exit {job.returncode}')
    except subprocess.TimeoutExpired:
        job.kill()
        check(False, 'SIGTERM: the job did not end within 60 s')
job.kill()
job.wait()

# the stopped run resumes under mpirun, to its end
if check(stopped_at is not None, 'the stop names its step'):
    r = subprocess.run(MPI + [CLTRAIN, 'train', '--resume', P('t.ck'), '--steps', str(stopped_at + 20), '--json',
                              '--limit-test', '256'],
                       capture_output=True, text=True, timeout=300)
    got = lines(r.stdout)
    check(r.returncode == 0 and got and got[-1]['steps'] == stopped_at + 20,
          f'resume under mpirun: {r.returncode} {got} {r.stderr[-500:]}')

# bench train: process 0 alone, then both; the allreduce's bus bandwidth
r = subprocess.run(MPI + [CLTRAIN, 'bench', 'train', '--batch-size', '32', '--steps', '2', '--json'],
                   capture_output=True, text=True, timeout=300)
try:
    bj = json.loads(r.stdout)
    check([x['processes'] for x in bj['runs']] == [1, 2] and bj['runs'][1]['devices'] == 2 and
          bj['allreduce']['busbw_gb_per_s'] > 0 and bj['allreduce']['bytes'] > 0, f'bench under mpirun: {bj}')
except (ValueError, KeyError) as e:
    check(False, f'bench under mpirun printed no JSON object ({e}): {r.stdout[-300:]} {r.stderr[-300:]}')

# eval runs in one process: refused under mpirun with 2
r = subprocess.run(MPI + [CLTRAIN, 'eval', '--limit-test', '64'], capture_output=True, text=True, timeout=120)
check(r.returncode != 0 and 'under mpirun only train' in r.stderr, f'eval under mpirun: {r.returncode} {r.stderr[-300:]}')
finish()
