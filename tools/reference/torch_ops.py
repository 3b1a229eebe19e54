#!/usr/bin/env python3
"""Times PyTorch's convolution passes (cuDNN on a GPU, oneDNN on a CPU) at the
shapes of a `cltrain bench ops --json` report, and prints them beside
cltrain's: the side-by-side per-layer figures. Needs torch.

  cltrain bench ops --model all --batch-size 128 --json > ops.json
  tools/reference/torch_ops.py ops.json --device cuda
"""
import argparse
import json
import re
import sys

try:
    import torch
except ImportError:
    sys.exit('torch_ops.py: needs PyTorch (pip install torch in a virtual environment)')

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument('report', help='the JSON that cltrain bench ops --json printed')
ap.add_argument('--device', default='cuda', help='torch device (default cuda)')
ap.add_argument('--repeat', type=int, default=20, help='timed calls per pass (default 20)')
ap.add_argument('--benchmark', action='store_true', help='torch.backends.cudnn.benchmark = True')
ap.add_argument('--fp32', action='store_true',
                help="cuDNN in float32 (allow_tf32 = False); PyTorch's default lets it use TF32 tensor cores")
ap.add_argument('--json', action='store_true', help='one JSON object per pass instead of the table')
a = ap.parse_args()
if a.repeat < 1:
    ap.error('--repeat must be positive')
try:
    with open(a.report) as f:
        report = json.load(f)
    devices = report['devices']
except (OSError, ValueError, KeyError, TypeError) as e:
    sys.exit(f'torch_ops.py: {a.report}: not a cltrain bench ops --json report ({e})')
try:
    dev = torch.device(a.device)
    torch.empty(1, device=dev)
except (RuntimeError, AssertionError) as e:
    ap.error(f'--device {a.device}: {e}')
torch.backends.cudnn.benchmark = a.benchmark
torch.backends.cudnn.allow_tf32 = not a.fp32
SHAPE = re.compile(r'(\d+)x(\d+)x(\d+) -> (\d+)x(\d+)x(\d+) k(\d+)(?: s(\d+) p(\d+))?$')


def timed(fn):
    """Milliseconds per call of fn, after warm-up calls."""
    for _ in range(3):
        fn()
    if dev.type == 'cuda':
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(a.repeat):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / a.repeat
    import time
    t0 = time.perf_counter()
    for _ in range(a.repeat):
        fn()
    return (time.perf_counter() - t0) * 1e3 / a.repeat


def conv_pass(op):
    m = SHAPE.match(op['shape'])
    if not m:
        return None
    c, h, w, co, _, _, k = (int(v) for v in m.groups()[:7])
    s, p = int(m.group(8) or 1), int(m.group(9) or 0)
    x = torch.randn(op['batch_size'], c, h, w, device=dev)
    wt = torch.randn(co, c, k, k, device=dev) * 0.1
    b = torch.zeros(co, device=dev)
    y = torch.nn.functional.conv2d(x, wt, b, s, p)
    dy = torch.randn_like(y)
    bwd = torch.ops.aten.convolution_backward
    return {
        'forward': lambda: torch.nn.functional.conv2d(x, wt, b, s, p),
        'backward-data': lambda: bwd(dy, x, wt, [co], [s, s], [p, p], [1, 1], False, [0, 0], 1, [True, False, False]),
        'backward-weights': lambda: bwd(dy, x, wt, [co], [s, s], [p, p], [1, 1], False, [0, 0], 1, [False, True, True]),
    }[op['pass']]


rows = []
for d in devices:
    for op in d.get('ops', []):
        if not op.get('flop') or op.get('pass') not in ('forward', 'backward-data', 'backward-weights'):
            continue
        fn = conv_pass(op)
        if fn is None:
            continue
        with torch.no_grad():
            ms = timed(fn)
        rows.append({'device': d['name'], 'model': op['model'], 'op': op['op'], 'pass': op['pass'], 'shape': op['shape'],
                     'batch_size': op['batch_size'], 'cltrain_ms': op['ms_per_call'], 'torch_ms': ms,
                     'torch_gflop_per_s': op['flop'] / ms / 1e6, 'cltrain_speed_vs_torch': ms / op['ms_per_call'],
                     'note': op.get('note')})
name = torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu'
if a.json:
    for r in rows:
        print(json.dumps(r | {'torch': f'{torch.__version__} {name}', 'cudnn_benchmark': a.benchmark, 'tf32': not a.fp32}))
    sys.exit(0)
print(f'torch {torch.__version__} on {name}, cudnn.benchmark={a.benchmark}, tf32={not a.fp32}; cltrain on {devices[0]["name"] if devices else "?"}')
print(f'{"model":8} {"op":22} {"pass":17} {"shape":34} {"cltrain ms":>10} {"torch ms":>9} {"cltrain/torch speed":>19}')
tot = {}
for r in rows:
    print(f'{r["model"]:8} {r["op"]:22} {r["pass"]:17} {r["shape"]:34} {r["cltrain_ms"]:10.4f} {r["torch_ms"]:9.4f} '
          f'{r["cltrain_speed_vs_torch"]:18.0%}' + (f'  ({r["note"]})' if r['note'] else ''))
    if not r['note']:
        t = tot.setdefault(r['model'], [0.0, 0.0])
        t[0] += r['cltrain_ms']
        t[1] += r['torch_ms']
for model, (c, t) in tot.items():
    print(f'{model}: every conv pass once: cltrain {c:.3f} ms, torch {t:.3f} ms, cltrain at {t / c:.0%} of torch\'s speed')
