"""The process that checks one exercise in isolation (started by ``runner.run_checks(isolated=True)``)."""

import json
import os
import sys

from .catalog import EXERCISES
from .runner import RESULT_MARK, run_check


def main(stem, directory):
    """Check exercise ``stem`` in ``directory`` and print its result on one marked line, then exit."""
    (exercise,) = [ex for ex in EXERCISES if ex.stem == stem]
    result = run_check(exercise, directory)
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(dict(passed=result.passed, message=result.message)) + "\n")
    sys.stdout.flush()
    os._exit(0)  # nothing the reader's code registered (atexit, threads) runs after the result
