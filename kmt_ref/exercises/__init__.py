"""The workbook checker: ``python -m kmt_ref.exercises check [NN ...] [--dir exercises]``.

The workbook lives in the repository's ``exercises/`` directory: one starter
file per exercise (``NN_name.py``, a function whose body raises
``NotImplementedError``) and reference solutions in ``exercises/solutions/``.
The checks live here, in the package, and load the reader's files by path.
Each check runs the reader's function on a few inputs and compares it with an
independent reference (the library where it is the subject, otherwise a
brute-force or definition-level computation written in the check), and says
what was expected, what was got and on which input.
"""

from .catalog import CHAPTERS, EXERCISES
from .runner import CheckResult, Exercise, find_workbook, format_results, run_check, run_check_isolated

__all__ = ["CHAPTERS", "EXERCISES", "CheckResult", "Exercise", "find_workbook", "format_results",
           "run_check", "run_check_isolated", "run_checks", "select", "by_chapter"]


def by_chapter():
    """``{chapter: [Exercise, ...]}`` in book order (for the book's workbook links)."""
    return {chapter: [ex for ex in EXERCISES if ex.chapter == chapter] for chapter in CHAPTERS}


def select(keys=None):
    """The exercises named by ``keys`` (numbers like ``"03"`` or ``"3"``, or stems); all if empty.

    Raises
    ------
    ValueError
        If a key names no exercise.
    """
    if not keys:
        return list(EXERCISES)
    chosen = set()
    for key in keys:
        key = str(key)
        match = [ex for ex in EXERCISES if key in (ex.number, ex.stem, ex.number.lstrip("0"))]
        if not match:
            known = ", ".join(ex.number for ex in EXERCISES)
            raise ValueError(f"no exercise {key!r}; known exercises: {known}")
        chosen.update(ex.stem for ex in match)
    return [ex for ex in EXERCISES if ex.stem in chosen]  # book order


def run_checks(directory="exercises", keys=None, isolated=False, timeout=120.0):
    """Run the checks of the selected exercises on the files in ``directory``.

    Parameters
    ----------
    directory : str or Path
        The workbook directory (with the ``NN_name.py`` files).
    keys : sequence of str, optional
        Exercise numbers or stems; all exercises if omitted.
    isolated : bool
        Check each exercise in its own Python process, stopped after
        ``timeout`` seconds (what the command line does).
    timeout : float

    Returns
    -------
    list of CheckResult
    """
    exercises = select(keys)
    path = find_workbook(directory)
    if isolated:
        return [run_check_isolated(ex, path, timeout) for ex in exercises]
    return [run_check(ex, path) for ex in exercises]
