"""The process that checks one exercise in isolation (started by ``runner.run_checks(isolated=True)``)."""

import json
import os
import sys

from . import _feedback
from .catalog import EXERCISES
from .runner import RESULT_MARK, SECRET_VARIABLE, run_check


def _checker_state(exercise):
    """The checker's functions, by module and name: what a solution could rebind to pass."""
    modules = {m.__name__: m for m in (sys.modules[__name__], _feedback, sys.modules[exercise.check.__module__])}
    return {(name, attr): value for name, m in modules.items() for attr, value in vars(m).items() if callable(value)}


def main(stem, directory):
    """Check exercise ``stem`` in ``directory`` and print its result on one marked line, then exit."""
    secret = os.environ.pop(SECRET_VARIABLE, "")  # read before the reader's code runs, and removed
    (exercise,) = [ex for ex in EXERCISES if ex.stem == stem]
    before = _checker_state(exercise)
    result = run_check(exercise, directory)
    passed, message = result.passed, result.message
    after = _checker_state(exercise)
    changed = sorted(f"{module}.{attr}" for key in before.keys() | after.keys()
                     if before.get(key) is not after.get(key) for module, attr in [key])
    if changed:
        replaced = ", ".join(changed[:5])
        passed, message = False, f"your code replaced parts of the checker ({replaced}): nothing was checked"
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(dict(secret=secret, passed=passed, message=message)) + "\n")
    sys.stdout.flush()
    os._exit(0)  # nothing the reader's code registered (atexit, threads) runs after the result
