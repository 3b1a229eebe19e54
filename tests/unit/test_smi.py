#!/usr/bin/env python3
"""cltrain-smi in every format, parsed back and checked; bad options; why no
device is visible."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

SMI = sys.argv[1]

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish  # noqa: E402


def run(*args, env=None, unset=()):
    e = dict(os.environ)
    for var in ('CLTRAIN_DEVICES', *unset):
        e.pop(var, None)
    if env:
        e.update(env)
    p = subprocess.run([SMI, *args], capture_output=True, text=True, env=e, timeout=60)
    return p.returncode, p.stdout, p.stderr


rc, out, err = run('--json')
check(rc == 0, f'--json exit {rc}: {err}')
doc = json.loads(out)
devices = doc['devices']
n = len(devices)
if n == 0:
    print('skip: no OpenCL device')
    sys.exit(77)
if all(d['platform'] == 'Portable Computing Language' for d in devices):
    check(n >= 2, f'POCL_DEVICES gives two devices, JSON lists {n}')
fields = ['index', 'name', 'vendor', 'platform', 'type', 'driver_version', 'memory.total',
          'memory.free', 'compute_units', 'clocks.max', 'pci.bus_id', 'uuid']
for i, d in enumerate(devices):
    for f in fields:
        check(f in d, f'JSON device {i} lacks {f}')
    check(d['index'] == i, f'JSON index {d["index"]} at {i}')
    check(isinstance(d['memory.total'], int) and d['memory.total'] > 0, 'memory.total a number')
    check(d['type'] in ('GPU', 'CPU', 'ACCELERATOR', 'OTHER'), f'type {d["type"]}')
    for na in ('temperature.gpu', 'utilization.gpu', 'power.draw'):
        check(d.get(na, None) is None, f'{na} must not be invented')
check('icd_loader' in doc and 'cltrain_version' in doc, 'JSON header fields')
# TF32: what opening the device (its probe) tells; a CPU has none
for i, d in enumerate(devices):
    check(d.get('tf32') in ('Yes', 'No'), f'JSON device {i}: tf32 {d.get("tf32")!r}')
    if d['type'] == 'CPU':
        check(d['tf32'] == 'No' and d.get('compute_cap') is None, f'JSON device {i}: a CPU with TF32 or a compute capability')
rc, out, err = run('--query-gpu=index,tf32,compute_cap', '--format=csv,noheader')
rows = [l.split(', ') for l in out.splitlines()]
check(rc == 0 and len(rows) == n and all(r[1] in ('Yes', 'No') for r in rows), f'--query-gpu tf32: {rc} {out!r} {err!r}')

# -L: one line per device
rc, out, err = run('-L')
lines = out.strip().splitlines()
check(rc == 0 and len(lines) == n, f'-L gives {len(lines)} lines for {n} devices')
for i, line in enumerate(lines):
    kind = 'CPU' if devices[i]['type'] == 'CPU' else 'GPU'
    check(line.startswith(f'{kind} {i}: {devices[i]["name"]} ('), f'-L line: {line}')

# CSV with header and units
q = 'index,name,memory.total,clocks.max,pci.bus_id,type'
rc, out, err = run(f'--query={q}', '--format=csv')
check(rc == 0, f'csv exit {rc}: {err}')
rows = list(csv.reader(io.StringIO(out), skipinitialspace=True))
check(rows[0] == ['index', 'name', 'memory.total [MiB]', 'clocks.max [MHz]', 'pci.bus_id', 'type'],
      f'csv header {rows[0]}')
check(len(rows) == n + 1, f'csv rows {len(rows)}')
for i, r in enumerate(rows[1:]):
    check(len(r) == 6, f'csv columns {r}')
    check(r[0] == str(i) and r[1] == devices[i]['name'], f'csv row {r}')
    check(r[2] == f'{devices[i]["memory.total"]} MiB', f'csv memory {r[2]}')

rc, out, err = run('--query=index,memory.total', '--format=csv,noheader,nounits')
rows = list(csv.reader(io.StringIO(out), skipinitialspace=True))
check(len(rows) == n and all(r[1].isdigit() for r in rows), f'noheader,nounits: {rows}')

# nvidia-smi's spelling and fields: --query-gpu; what OpenCL cannot report
# is [N/A] (as nvidia-smi prints an unsupported field), not an error
na = ['memory.used', 'utilization.gpu', 'utilization.memory', 'temperature.gpu', 'power.draw', 'power.limit',
      'fan.speed', 'pstate', 'clocks.current.graphics', 'clocks.sm', 'clocks.mem', 'persistence_mode',
      'compute_mode']
rc, out, err = run('--query-gpu=index,gpu_name,' + ','.join(na) + ',memory.total', '--format=csv,noheader,nounits')
rows = list(csv.reader(io.StringIO(out), skipinitialspace=True))
check(rc == 0 and len(rows) == n, f'--query-gpu with N/A fields: rc {rc} {err!r}')
for i, r in enumerate(rows):
    check(len(r) == len(na) + 3 and r[0] == str(i) and r[1] == devices[i]['name'], f'--query-gpu row {r}')
    check(r[2:-1] == ['[N/A]'] * len(na), f'unsupported fields print [N/A]: {r}')
    check(r[-1] == str(devices[i]['memory.total']), f'memory.total beside them: {r}')
rc, out, err = run('--query-gpu=index,memory.usedd', '--format=csv')
check(rc == 2 and 'memory.usedd' in err, f'a truly unknown field is an error naming it: rc {rc} {err!r}')

# -i selects; a missing device is an error naming it
last = str(n - 1)
rc, out, err = run('-i', last, '-L')
check(rc == 0 and out.startswith(f'{devices[-1]["type"]} {last}:'), f'-i {last}: {out}')
check(len(out.strip().splitlines()) == 1, f'-i {last} gives one line')
rc, out, err = run('-i', '7', '-L')
check(rc != 0 and 'device 7' in err, f'-i 7: rc {rc} err {err}')

# default table: header names loader and platform, one row per device
rc, out, err = run()
check(rc == 0 and 'ICD loader' in out and 'Platform 0:' in out, f'table header: {out}')
body = [l for l in out.splitlines() if l.startswith('|')]
check(len(body) == n + 1, f'table rows {len(body)} for {n} devices')

# no cell is cut inside a word: every word of a row is a whole word of the
# device's fields (or a usual short form of a vendor's name), or the cut is
# marked with "..."
short = {'PoCL', 'AMD', 'Intel', 'NVIDIA', 'APP', 'OpenCL', 'Oclgrind', '/', 'MiB', 'MHz', '[N/A]'}
for i, line in enumerate(body[1:]):
    d = devices[i]
    whole = set(short) | {str(v) for v in d.values()}
    for v in d.values():
        whole |= set(str(v).split())
    for cell in line.strip('|').split('|'):
        for word in cell.split():
            check(word in whole or word.endswith('...'), f'table cell {cell.strip()!r}: {word!r} is cut')

# -l with -c repeats
rc, out, err = run('-L', '-l', '0.1', '-c', '2')
check(rc == 0 and len(out.strip().splitlines()) == 2 * n, f'-l 0.1 -c 2: {out}')

# no device visible: clear message, exit 0 for the table
rc, out, err = run(env={'CLTRAIN_DEVICES': ''})
check(rc == 0 and 'No OpenCL devices' in out, f'no device: rc {rc} {out}')
check('CLTRAIN_DEVICES="" hides the' in out, f'no device says CLTRAIN_DEVICES hides them: {out}')
# and says why where it can: no platform at all, or PoCL without a kernel
# cache directory it can create (it then lists no device); where another
# vendor's devices remain, they are listed
with tempfile.TemporaryDirectory() as empty:
    rc, out, err = run(env={'OCL_ICD_VENDORS': empty})
    check(rc == 0 and 'no OpenCL platform' in out and empty in out and 'Install a driver' in out,
          f'no platform: rc {rc} {out}')
    pocl = '/etc/OpenCL/vendors/pocl.icd'
    if os.path.exists(pocl):  # PoCL alone, so no other vendor's devices are listed instead
        shutil.copy(pocl, empty)
        rc, out, err = run(env={'OCL_ICD_VENDORS': empty, 'HOME': '/dev/null'},
                           unset=('XDG_CACHE_HOME', 'POCL_CACHE_DIR'))
        check(rc == 0 and '(Portable Computing Language) lists no device' in out and
              'kernel cache, here /dev/null/.cache/pocl/kcache' in out and 'set POCL_CACHE_DIR' in out and
              'Install a driver' not in out, f'PoCL without a cache: rc {rc} {out}')
rc, out, err = run('--json', env={'CLTRAIN_DEVICES': ''})
check(rc == 0 and json.loads(out)['devices'] == [], 'no device JSON')
rc, out, err = run('-i', '0', env={'CLTRAIN_DEVICES': ''})
check(rc != 0 and 'device 0' in err, 'no device with -i is an error')

# bad options and fields are named
for args, word in [(['--query=index,bogus', '--format=csv'], 'bogus'),
                   (['--frobnicate'], '--frobnicate'),
                   (['--query=index', '--format=xml'], 'xml'),
                   (['--query=index'], '--format'),
                   (['-l', 'soon'], 'soon'),
                   (['-i', 'a,b'], 'a,b'),
                   (['-i'], '-i'),
                   (['extra'], 'extra')]:
    rc, out, err = run(*args)
    check(rc == 2 and word in err, f'{args}: rc {rc}, stderr {err!r}')
rc, out, err = run(env={'CLTRAIN_DEVICES': 'zz'})
check(rc == 1 and 'CLTRAIN_DEVICES' in err, f'bad CLTRAIN_DEVICES: {rc} {err}')

rc, out, err = run('--help')
check(rc == 0 and '--query' in out, 'help')

finish()
