"""The Python tests' CHECK: check() records a failure and goes on;
finish() prints the counts and exits 1 if any check failed."""
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
