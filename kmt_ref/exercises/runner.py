"""Find the workbook, load the reader's files by path, run the checks.

Reader files are loaded with :mod:`importlib` from their path (they are not
package modules: their names start with a digit), each under a fresh private
module name, so an edit is picked up on the next run and nothing is cached.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .._paths import check_not_committed, check_writable
from ._feedback import CheckFailedError
from .solver import _where, load_function
from .solver import start as start_solver

__all__ = ["Exercise", "CheckResult", "find_workbook", "packaged_workbook", "copy_workbook", "load_function",
           "run_check", "run_check_isolated", "format_results"]


@dataclass(frozen=True)
class Exercise:
    """One workbook exercise.

    Attributes
    ----------
    number : str
        Two digits, the file prefix (``"03"``).
    stem : str
        File name without ``.py`` (``"03_averaging_hardmax"``).
    function : str
        Name of the function the reader writes.
    chapter : str
        The book chapter it belongs to.
    level : {"warm-up", "medium", "hard"}
    summary : str
        One line: what the reader builds.
    check : callable
        ``check(fn) -> str``: returns a success note or raises
        :class:`CheckFailedError` (or lets ``NotImplementedError`` through).
    """

    number: str
    stem: str
    function: str
    chapter: str
    level: str
    summary: str
    check: object


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: ``passed`` and the message for the reader."""

    exercise: Exercise
    passed: bool
    message: str
    seconds: float


def find_workbook(directory):
    """The workbook directory as a Path; ``ValueError`` with advice if it is not one."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise ValueError(
            f"workbook directory not found: dir={str(path)!r} (resolved: {path.resolve()}). "
            "Run from the repository root or from a workbook made by init, or pass --dir path/to/exercises"
        )
    if not any(path.glob("[0-9][0-9]_*.py")):
        raise ValueError(
            f"dir={str(path)!r} holds no exercise files (NN_name.py); pass --dir path/to/exercises"
        )
    return path


def packaged_workbook():
    """The workbook that came with the package: the wheel's copy, or the checkout's ``exercises/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "workbook", here.parent.parent / "exercises"):
        if candidate.is_dir() and any(candidate.glob("[0-9][0-9]_*.py")):
            return candidate
    raise ValueError("the workbook is not installed with this copy of kmt_ref")


def copy_workbook(target):
    """Copy the starter files, the README and the solutions into the new directory ``target``.

    Returns
    -------
    Path
        ``target``.

    Raises
    ------
    ValueError
        If ``target`` exists and is not an empty directory (nothing is overwritten).
    """
    target = Path(check_not_committed(Path(target).expanduser(), "dir"))
    if os.path.isfile(target):
        raise ValueError(f"dir={str(target)!r} is a file: choose a new directory")
    check_writable(target, "dir")  # first: a path the system refuses (too long, read-only) is named here
    if any(target.iterdir()):
        raise ValueError(f"dir={str(target)!r} exists and is not empty: choose a new directory")
    source = packaged_workbook()
    (target / "solutions").mkdir(parents=True, exist_ok=True)
    for pattern in ("[0-9][0-9]_*.py", "README.md", "solutions/[0-9][0-9]_*.py"):
        for path in sorted(source.glob(pattern)):
            shutil.copyfile(path, target / path.relative_to(source))
    return target


def run_check(exercise, directory, remote=False):
    """Load the reader's function for ``exercise`` from ``directory`` and check it.

    ``remote=False`` runs the reader's function in this process; ``remote=True`` in a process of its own
    (:mod:`~kmt_ref.exercises.solver`) that receives its arguments and returns its results as data, so
    that the reader's code cannot read or change what the check compares.
    """
    path = Path(directory) / f"{exercise.stem}.py"
    start = time.perf_counter()
    close = None
    try:
        if remote:
            if not path.is_file():
                raise CheckFailedError(f"file not found: {path}")
            fn, close = start_solver(path, exercise.function)
        else:
            fn = load_function(path, exercise.function)
        note = exercise.check(fn)
        passed, message = True, note or "all cases agree"
    except NotImplementedError:
        passed = False
        message = (
            f"not implemented yet: {exercise.function}() in {path} still raises NotImplementedError "
            "- replace its body with your solution"
        )
    except CheckFailedError as failure:
        passed, message = False, str(failure)
    except SystemExit as exc:  # a solution that calls sys.exit() has not been checked
        passed, message = False, f"your code called sys.exit({exc.code!r}){_where(exc, path.resolve())}"
    except Exception as exc:  # the reader's code crashed inside the check
        passed = False
        message = f"your code raised {type(exc).__name__}: {exc}{_where(exc, path.resolve())}"
    finally:
        if close is not None:
            close()
    return CheckResult(exercise, passed, message, time.perf_counter() - start)


#: Marks the result line a child process prints (anything else it prints is the reader's); the
#: line also carries a secret of the run, so that a solution printing the mark passes nothing.
RESULT_MARK = "@@kmt_ref-check-result@@ "
#: The environment variable that hands the child its run's secret (removed before the reader's code runs).
SECRET_VARIABLE = "KMT_REF_CHECK_SECRET"
#: What a checked process may write (its output is kept in a file of at most this size) and use.
MAX_OUTPUT_BYTES = 64 * 2**20
MAX_MEMORY_BYTES = 8 * 2**30


def _checker_files():
    """The package's source files (the checks and the library they run), as bytes: a solution that rewrites
    one is found and undone."""
    package = Path(__file__).resolve().parent.parent
    return {path: path.read_bytes() for path in sorted(package.rglob("*.py"))}


def _limits():
    """In the child, before it runs: its output file and memory are capped."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES))
    resource.setrlimit(resource.RLIMIT_AS, (MAX_MEMORY_BYTES, MAX_MEMORY_BYTES))


#: ``prctl`` option: orphaned descendants are re-parented to this process instead of to init (Linux).
_PR_SET_CHILD_SUBREAPER = 36
#: Seconds between two looks of the guardian (``_GUARDIAN``) at the processes it watches.
GUARD_INTERVAL = 0.05
#: The guardian: while its standard input stays open, it resumes the watched processes whenever it finds one
#: stopped: this process (its argument) and the checker under it (whose pid arrives on standard input).
_GUARDIAN = f"""
import os, select, signal, sys
pids = [int(sys.argv[1])]
while True:
    if select.select([sys.stdin], [], [], {GUARD_INTERVAL})[0]:
        line = sys.stdin.readline()
        if not line:
            break
        pids.append(int(line))
    for pid in pids:
        try:
            with open(f"/proc/{{pid}}/stat") as f:
                stopped = f.read().rsplit(")", 1)[1].split()[0] in "tT"
            if stopped:
                os.kill(pid, signal.SIGCONT)
        except (OSError, IndexError):
            pass
"""


def _prctl(option, value):
    """Linux's ``prctl(option, value)``; whether it took (False where there is no such call)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(option, int(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _subreaper(on):
    """Make this process the one that adopts its orphaned descendants (``on``) or stop; whether it could."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, on)


def _children():
    """The pids of this process's children, from ``/proc`` (empty where there is none)."""
    me, found = str(os.getpid()), set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError):
                    with open(f"/proc/{entry.name}/stat") as f:
                        if f.read().rsplit(")", 1)[1].split()[1] == me:
                            found.add(int(entry.name))
    return found


def _kill_adopted(before, rounds=100):
    """Kill and reap every child of this process not in ``before``: the descendants a checked solution left
    behind (a double-forked daemon in its own session too), adopted here as their subreaper. Each round kills
    the adopted ones, whose own children are then adopted in turn."""
    import signal

    for _ in range(rounds):
        adopted = _children() - before
        if not adopted:
            return
        for pid in adopted:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _parse_result(line, secret):
    """The child's result line as ``(passed, message)``, or ``None`` when it is not a valid one."""
    try:
        result = json.loads(line[len(RESULT_MARK):])
    except ValueError:
        return None
    if (not isinstance(result, dict) or result.get("secret") != secret or not isinstance(result.get("passed"), bool)
            or not isinstance(result.get("message"), str)):
        return None
    return result["passed"], result["message"]


def run_check_isolated(exercise, directory, timeout=120.0):
    """:func:`run_check` in a fresh Python process with a time limit, the reader's code in another.

    The check runs in a checker process (:mod:`~kmt_ref.exercises.child`) and the reader's function in a
    solver process under it (:mod:`~kmt_ref.exercises.solver`), which receives arguments and returns
    results as data: the reader's code can neither read the check's expected values nor rebind its
    comparisons. A solution that loops forever, exits the interpreter or crashes it fails its own
    exercise, with the reason, and the other exercises are still checked (the command line runs every
    exercise this way). The checker runs in its own process group, killed whole at the time limit (the
    solver and anything it forked too); on Linux this process adopts what the solution leaves behind (a
    double-forked daemon in its own session) and kills it, and a guardian process resumes this process
    and the checker if the solution stops them; the output goes to a file capped at
    :data:`MAX_OUTPUT_BYTES` and is decoded with replacement characters; the result counts only with this
    run's secret, which the solver cannot read (the checker is not dumpable, so a process of the same
    user cannot read its memory or environment; a process running as root still can); and the checker's
    own files are compared before and after, and restored if the solution changed them.
    """
    import secrets
    import signal
    import tempfile

    start = time.perf_counter()
    secret = secrets.token_hex(16)
    cmd = [sys.executable, "-c",
           "import sys; from kmt_ref.exercises.child import main; main(sys.argv[1], sys.argv[2])",
           exercise.stem, str(Path(directory).resolve())]
    env = dict(os.environ, **{SECRET_VARIABLE: secret})
    checker = _checker_files()
    posix = os.name == "posix"
    adopting = posix and os.path.isdir("/proc") and _subreaper(True)
    before = _children() if adopting else set()
    # A solution may stop its parent (SIGSTOP, which no process can catch): a guardian resumes it.
    guardian = subprocess.Popen([sys.executable, "-c", _GUARDIAN, str(os.getpid())], stdin=subprocess.PIPE,
                                start_new_session=True) if adopting else None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=posix, preexec_fn=_limits if posix else None)
        if guardian is not None:
            guardian.stdin.write(f"{child.pid}\n".encode())
            guardian.stdin.flush()
        try:
            child.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            if posix:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)  # the whole group: forked grandchildren too
            child.kill()
            child.wait()
            if adopting:
                _kill_adopted(before | ({guardian.pid} if guardian else set()))
                _subreaper(False)
            if guardian is not None:
                guardian.stdin.close()
                guardian.wait()
        out.seek(max(0, out.seek(0, os.SEEK_END) - 2**20))
        stdout = out.read().decode("utf-8", errors="replace")
        err.seek(max(0, err.seek(0, os.SEEK_END) - 2**16))
        stderr = err.read().decode("utf-8", errors="replace")
    changed = [path for path, data in checker.items() if not path.is_file() or path.read_bytes() != data]
    for path in changed:
        path.write_bytes(checker[path])
    seconds = time.perf_counter() - start
    if changed:
        return CheckResult(exercise, False, "your code changed the checker's own files "
                           f"({', '.join(p.name for p in changed)}); they were restored, and nothing was checked",
                           seconds)
    if timed_out:
        return CheckResult(exercise, False, f"timed out after {timeout:g} s: an endless loop, or far too slow", seconds)
    results = [_parse_result(line, secret) for line in stdout.splitlines() if line.startswith(RESULT_MARK)]
    results = [r for r in results if r is not None]
    if results:
        return CheckResult(exercise, *results[-1], seconds)
    tail = (stderr.strip().splitlines() or ["(no output)"])[-1]
    return CheckResult(exercise, False, f"the process ended (exit status {child.returncode}) before the check gave "
                       f"a result - does your code exit or crash Python? last error output: {tail}", seconds)


def format_results(results):
    """A readable report: one header line per exercise, its message indented."""
    lines = []
    for r in results:
        ex = r.exercise
        status = "PASS" if r.passed else "FAIL"
        lines.append(f"[{status}] {ex.stem}  ({ex.chapter}; {ex.level}; {r.seconds:.1f} s)")
        lines.extend("       " + line for line in r.message.splitlines())
    n_pass = sum(r.passed for r in results)
    lines.append(f"{n_pass}/{len(results)} passed")
    return "\n".join(lines)
