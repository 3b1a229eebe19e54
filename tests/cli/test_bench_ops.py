#!/usr/bin/env python3
"""cltrain bench ops: option checking, and a tiny LeNet run whose JSON holds
positive peaks and, for every op, a positive time and a finite positive
fraction of the peak. No timing is asserted."""
import json
import math
import subprocess
import os
import sys

CLTRAIN = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
from checks import check, finish  # noqa: E402


def run(*args, timeout=600):
    p = subprocess.run([CLTRAIN, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def positive(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


# usage errors: exit 2 and one line naming the option or value
for args, word in [(['--batch-size', '0'], '--batch-size'),
                   (['--batch-size', 'many'], '--batch-size'),
                   (['--repeat', '0'], '--repeat'),
                   (['--repeat', '-3'], '--repeat'),
                   (['--model', 'vgg'], 'vgg'),
                   (['--devices', '0,x'], '--devices'),
                   (['--devices', '99'], 'device 99'),
                   (['--bogus'], '--bogus'),
                   (['--repeat'], '--repeat'),
                   (['--precision', 'bf16'], '--precision'),
                   (['extra'], 'extra')]:
    rc, out, err = run('bench', 'ops', *args)
    check(rc == 2 and word in err and len(err.strip().splitlines()) == 1,
          f'bench ops {args}: rc {rc}, stderr {err!r}')

rc, out, err = run('bench', 'ops', '--help')
check(rc == 0 and '--repeat' in out and '--model' in out and '--json' in out, 'bench ops --help')
rc, out, err = run('bench', '--help')
check(rc == 0 and 'bench ops' in out and 'bench train' in out, 'bench --help names both subcommands')

rc, out, err = run('bench', 'ops', '--model', 'lenet', '--batch-size', '8', '--repeat', '1', '--precision', 'fp32',
                   '--json')
if rc != 0 and ('no OpenCL device' in err):
    print('skip: no OpenCL device')
    sys.exit(77)
check(rc == 0, f'bench ops --json rc {rc}: {err}')
try:
    doc = json.loads(out)
except ValueError as e:
    doc = None
    check(False, f'bench ops --json is not JSON ({e}): {out[:400]!r}')

if doc is not None:
    devices = doc.get('devices', [])
    check(len(devices) >= 1, 'at least one device in the JSON')
    for d in devices:
        name = f"device {d.get('index')}"
        check(isinstance(d.get('name'), str) and d['name'], f'{name}: has a name')
        check(isinstance(d.get('tf32'), bool) and isinstance(d.get('compute_capability'), int),
              f"{name}: tf32 {d.get('tf32')!r}, compute capability {d.get('compute_capability')!r}")
        if d.get('type') == 'CPU':
            check(d.get('tf32') is False, f'{name}: a CPU offers no TF32')
        kernels = [o.get('kernel') or '' for o in d.get('ops', [])]
        check(not any('tf32' in k for k in kernels), f'{name}: a TF32 tile under --precision fp32: {kernels}')
        peaks = d.get('peaks', {})
        for key in ('fma_gflop_per_s', 'copy_gb_per_s', 'h2d_pinned_gb_per_s', 'd2h_pinned_gb_per_s',
                    'h2d_unpinned_gb_per_s', 'd2h_unpinned_gb_per_s'):
            check(positive(peaks.get(key)), f'{name}: peak {key} = {peaks.get(key)!r}')
        # the lowest of the measurements before and after the ops, never above the peak
        for key in ('fma_gflop_per_s', 'copy_gb_per_s'):
            low = peaks.get(key + '_low')
            check(positive(low) and low <= peaks[key], f'{name}: {key}_low = {low!r}, peak {peaks.get(key)!r}')
        check([m['model'] for m in d.get('models', [])] == ['lenet'], f'{name}: models {d.get("models")}')
        check(all(m.get('batch_size') == 8 for m in d.get('models', [])), f'{name}: batch size 8')
        ops = d.get('ops', [])
        names = {(o.get('op'), o.get('pass')) for o in ops}
        for want in [('conv1', 'forward'), ('conv2', 'backward-data'), ('conv2', 'backward-weights'),
                     ('avgpool1', 'forward'), ('maxpool2', 'backward'), ('relu1', 'forward'),
                     ('dense1', 'forward'), ('dense2', 'backward-weights'), ('xent', 'forward+backward'),
                     ('sgd', 'step')]:
            check(want in names, f'{name}: op {want} timed')
        bad = []
        for o in ops:
            what = f"{o.get('op')} {o.get('pass')}"
            if 'error' in o or not positive(o.get('ms_per_call')) or o.get('calls') != 1 or o.get('rounds') != 1:
                bad.append(f'{what}: time {o.get("ms_per_call")!r}, calls {o.get("calls")!r}, rounds {o.get("rounds")!r}, '
                           f'{o.get("error")}')
                continue
            if not positive(o.get('fraction_of_peak')):
                bad.append(f'{what}: fraction {o.get("fraction_of_peak")!r}')
            if o.get('peak') == 'fma':
                if not (positive(o.get('flop')) and positive(o.get('gflop_per_s'))):
                    bad.append(f'{what}: flop {o.get("flop")!r} gflop/s {o.get("gflop_per_s")!r}')
            elif o.get('peak') == 'copy':
                if not (positive(o.get('bytes')) and positive(o.get('gb_per_s'))):
                    bad.append(f'{what}: bytes {o.get("bytes")!r} GB/s {o.get("gb_per_s")!r}')
            else:
                bad.append(f'{what}: peak {o.get("peak")!r}')
        check(ops and not bad, f'{name}: every op timed with a sensible fraction: {bad}')
        # the relus run fused into the layer before them, and the poolings
        # of lenet and lenet-max into the conv before them (on CPU devices,
        # where its shape allows)
        fused = sorted(set(o.get('op') for o in ops if 'fused' in (o.get('note') or '')))
        check(fused == ['avgpool1', 'avgpool2', 'maxpool1', 'maxpool2', 'relu1', 'relu2', 'relu3'],
              f'{name}: rows noted as fused: {fused}')
        # the SGD step covers LeNet's parameters
        sgd = [o for o in ops if o.get('op') == 'sgd']
        check(sgd and sgd[0].get('bytes') == 20 * 129068, f'{name}: sgd bytes {sgd and sgd[0].get("bytes")}')

finish()
