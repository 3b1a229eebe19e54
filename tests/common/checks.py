"""The Python tests' CHECK: check() records a failure and goes on;
finish() prints the counts and exits 1 if any check failed."""
import json
import os
import subprocess
import sys

failures = []
_passed = [0]


def check(cond, what):
    if cond:
        _passed[0] += 1
    else:
        failures.append(what)
        print('FAIL:', what, file=sys.stderr)
    return bool(cond)


def finish():
    print(f'{_passed[0]} passed, {len(failures)} failed')
    sys.exit(1 if failures else 0)


def device_count(env=None):
    """OpenCL devices cltrain-smi lists (0 when it fails), from the build tree."""
    smi = os.path.join(os.environ['CLTRAIN_BUILD_ROOT'], 'tools', 'smi', 'cltrain-smi')
    p = subprocess.run([smi, '--json'], capture_output=True, text=True, timeout=60, env=env)
    try:
        return len(json.loads(p.stdout)['devices']) if p.returncode == 0 else 0
    except (ValueError, KeyError):
        return 0


def need_device():
    """Exit 77 where cltrain-smi lists no OpenCL device."""
    if device_count() < 1:
        print('skip: no OpenCL device')
        sys.exit(77)


def need_numpy():
    """numpy, or exit 77. The python3 meson found may be a separate install
    without it while the system's (python3-numpy) has it: the script then
    runs again under that one."""
    try:
        import numpy
        return numpy
    except ImportError:
        pass
    if os.environ.get('CLT_NPZ_REEXEC') != '1':
        for cand in ('/usr/bin/python3', '/usr/local/bin/python3'):
            if (os.path.exists(cand) and os.path.realpath(cand) != os.path.realpath(sys.executable)
                    and subprocess.run([cand, '-c', 'import numpy'], capture_output=True).returncode == 0):
                os.environ['CLT_NPZ_REEXEC'] = '1'
                os.execv(cand, [cand] + sys.argv)
    print('skip: numpy is not installed (Debian: apt-get install python3-numpy)')
    sys.exit(77)


def need_modules(*names):
    """Imports names, or runs the script again under the project's virtual
    environment (.deps/venv, made by tools/setup-python) when this python
    lacks them; exit 77 naming what is missing when neither has them."""
    import importlib
    try:
        return [importlib.import_module(n) for n in names]
    except ImportError as e:
        missing = e.name
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    venv = os.path.join(root, '.deps', 'venv', 'bin', 'python')
    # A venv's python may resolve to the system's: a marker keeps this to one re-exec.
    if os.path.exists(venv) and os.environ.get('CLT_VENV_REEXEC') != '1':
        os.environ['CLT_VENV_REEXEC'] = '1'
        os.execv(venv, [venv] + sys.argv)
    print(f'skip: Python module {missing} is not installed (tools/setup-python installs it into .deps/venv)')
    sys.exit(77)


# The colour task the data tests train on: 8x8 RGB images whose bright
# channel is the class (3 classes); every image has the same grey level, so
# one channel cannot solve it. A net that learns it and its usual options:
COLOUR_NET = 'conv:8:3:1:1,relu,gap,flatten,dense:3'
COLOUR_OPTIONS = ['--model', COLOUR_NET, '--init', 'xavier', '--lr', '0.5', '--batch-size', '50', '--devices', '0',
                  '--seed', '1']


def colour_task(np, n, seed):
    """n images (N, 8, 8, 3) uint8 and their labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    hi = rng.uniform(120, 180, n)
    images = np.repeat(((300 - hi) / 2)[:, None, None, None], 3, axis=3) * np.ones((n, 8, 8, 3))
    images[np.arange(n), :, :, labels] = hi[:, None, None]
    return np.clip(images + rng.uniform(-4, 4, images.shape), 0, 255).astype(np.uint8), labels


def runner(exe):
    """A function running exe with arguments (env: variables to add),
    capturing its output as text."""
    return lambda *args, env=None: subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=300,
                                                  env=dict(os.environ, **env) if env else None)
