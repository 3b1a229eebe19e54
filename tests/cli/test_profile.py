#!/usr/bin/env python3
"""tools/pocl-profile around cltrain bench train on a PoCL device: a table
per device whose rows are the kernels that ran (LeNet's convolutions among
them) with launches and times divided by --per, shares adding up to 100%,
and no trace left behind; --keep keeps it; a trace already in the working
directory, no command, a command that cannot start and one that fails
before the device ran are refused or passed on, each with its message and
status."""
import json
import os
import re
import subprocess
import sys
import tempfile

CLTRAIN = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish  # noqa: E402

TOOL = os.path.join(os.environ['CLTRAIN_SOURCE_ROOT'], 'tools', 'pocl-profile')
LOG = 'pocl_trace_events.log'


def first_device_platform():
    smi = os.path.join(os.environ['CLTRAIN_BUILD_ROOT'], 'tools', 'smi', 'cltrain-smi')
    p = subprocess.run([smi, '--json'], capture_output=True, text=True, timeout=60)
    try:
        return json.loads(p.stdout)['devices'][0].get('platform', '') if p.returncode == 0 else ''
    except (ValueError, KeyError, IndexError):
        return ''


if 'Portable Computing Language' not in first_device_platform():
    print('skip: device 0 is not a PoCL device (only PoCL traces its commands)')
    sys.exit(77)


def profile(*args, cwd):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


with tempfile.TemporaryDirectory() as tmp:
    # bench train runs 3 warm-up steps before --steps 1: 4 in all
    bench = [CLTRAIN, 'bench', 'train', '--model', 'lenet', '--batch-size', '64', '--steps', '1', '--devices', '0']
    p = profile('--per', '4', '--', *bench, cwd=tmp)
    check(p.returncode == 0, f'profile of bench train: status {p.returncode}: {p.stderr}')
    rows = re.findall(r'^  (\S+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)%$', p.stdout, re.M)
    names = [r[0] for r in rows]
    check(any(n.startswith('conv_') for n in names), f'no convolution kernel in the table: {p.stdout}')
    check(re.search(r'^DEV \S+: [0-9.]+ ms of commands a step$', p.stdout, re.M), f'no device line: {p.stdout}')
    share = sum(float(r[4]) for r in rows)
    check(abs(share - 100) < 0.1 * len(rows) + 0.1, f'shares add up to {share}%')
    conv = next(r for r in rows if r[0].startswith('conv_'))
    launches, ms, each = float(conv[1]), float(conv[2]), float(conv[3])
    check(launches > 0 and abs(ms - launches * each) <= 0.01 * ms + 0.01,
          f'{conv[0]}: {launches} launches a step of {each} ms is not {ms} ms')
    check(not os.path.exists(os.path.join(tmp, LOG)), 'the trace was left behind')

    kept = os.path.join(tmp, 'kept.log')
    p = profile('--top', '3', '--keep', kept, '--', *bench, cwd=tmp)
    check(p.returncode == 0 and os.path.getsize(kept) > 0, f'--keep: status {p.returncode}, {p.stderr}')
    check(len(re.findall(r'%$', p.stdout, re.M)) <= 3, f'--top 3 shows more rows: {p.stdout}')
    check(' in all' in p.stdout, f'without --per the totals are the whole run\'s: {p.stdout}')

    with open(os.path.join(tmp, LOG), 'w') as f:
        f.write('not ours\n')
    p = profile('--', *bench, cwd=tmp)
    check(p.returncode == 2 and 'exists' in p.stderr and open(os.path.join(tmp, LOG)).read() == 'not ours\n',
          f'an existing trace: status {p.returncode}, {p.stderr}')
    os.remove(os.path.join(tmp, LOG))

    p = profile('--per', '4', cwd=tmp)
    check(p.returncode == 2 and 'no COMMAND' in p.stderr, f'no command: status {p.returncode}, {p.stderr}')
    p = profile('--per', '0', '--', *bench, cwd=tmp)
    check(p.returncode == 2 and '--per' in p.stderr, f'--per 0: status {p.returncode}, {p.stderr}')
    p = profile('--', os.path.join(tmp, 'missing'), cwd=tmp)
    check(p.returncode == 2 and 'cannot run' in p.stderr, f'a missing command: status {p.returncode}, {p.stderr}')
    bad = subprocess.run([CLTRAIN, 'bench', 'train', '--model', 'nonesuch'], capture_output=True, timeout=120)
    p = profile('--', CLTRAIN, 'bench', 'train', '--model', 'nonesuch', cwd=tmp)
    check(bad.returncode != 0 and p.returncode == bad.returncode and f'failed (status {bad.returncode})' in p.stderr,
          f'a failing command (status {bad.returncode}): status {p.returncode}, {p.stderr}')
finish()
