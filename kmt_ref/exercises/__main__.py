"""``python -m kmt_ref.exercises {init,check,list}``: copy the workbook out, check it, or list it."""

import sys
from pathlib import Path

from .._cli import ArgumentParser
from . import EXERCISES, format_results, run_checks
from .runner import copy_workbook

#: The longest time an exercise may be given, in seconds (a day).
MAX_TIMEOUT = 86400.0


def default_workbook():
    """``./exercises`` when it holds exercise files (a checkout), else the current directory when it does
    (a workbook made by ``init``), else ``./exercises`` (whose absence the checker explains)."""
    for candidate in (Path("exercises"), Path(".")):
        if candidate.is_dir() and any(candidate.glob("[0-9][0-9]_*.py")):
            return str(candidate)
    return "exercises"


def main(argv=None):
    parser = ArgumentParser(prog="python -m kmt_ref.exercises", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="run the checks on your files")
    p.add_argument("exercises", nargs="*", help="exercise numbers (e.g. 03); all if omitted")
    p.add_argument("--dir", default=None,
                   help="the workbook directory (default: ./exercises in a checkout of the repository, or the "
                        "current directory when it is a workbook, as one made by init)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds allowed per exercise (each runs in its own process; default 120)")
    sub.add_parser("list", help="list the exercises with their chapter and level")
    p = sub.add_parser("init", help="copy the workbook (starters, README, solutions) into a new directory")
    p.add_argument("dir", help="a new or empty directory, e.g. my-workbook")
    args = parser.parse_args(argv)

    if args.command == "init":
        try:
            target = copy_workbook(args.dir)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"workbook copied to {target}; edit a file there, then, from {target}, run: "
              "python -m kmt_ref.exercises check 01")
        return 0
    if args.command == "list":
        for ex in EXERCISES:
            print(f"{ex.stem:30s} {ex.level:8s} {ex.chapter}: {ex.summary}")
        return 0
    try:
        if not 0 < args.timeout <= MAX_TIMEOUT:
            raise ValueError(f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}]; got {args.timeout:g}")
        directory = args.dir if args.dir is not None else default_workbook()
        results = run_checks(directory, args.exercises, isolated=True, timeout=args.timeout)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_results(results))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
