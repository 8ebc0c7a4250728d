"""The process that checks one exercise in isolation (started by ``runner.run_check_isolated``).

The check runs here; the reader's function runs in a solver process of its own
(:mod:`~kmt_ref.exercises.solver`) that sees only its arguments, so nothing it does can read this
process's expected values or rebind the functions that compare them.
"""

import json
import os
import sys

from .catalog import EXERCISES
from .runner import RESULT_MARK, SECRET_VARIABLE, _prctl, run_check

#: ``prctl`` option: whether other processes of the same user may read this one's memory, environment and
#: file descriptors (``/proc/<pid>/mem``, ``environ``, ``fd``) or attach a debugger to it.
_PR_SET_DUMPABLE = 4


def main(stem, directory):
    """Check exercise ``stem`` in ``directory`` and print its result on one marked line, then exit."""
    _prctl(_PR_SET_DUMPABLE, 0)  # before the solver starts: the reader's process cannot read the secret
    secret = os.environ.pop(SECRET_VARIABLE, "")
    (exercise,) = [ex for ex in EXERCISES if ex.stem == stem]
    result = run_check(exercise, directory, remote=True)
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(dict(secret=secret, passed=result.passed,
                                                         message=result.message)) + "\n")
    sys.stdout.flush()
    os._exit(0)
