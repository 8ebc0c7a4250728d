"""Command line: ``python -m kmt_ref {verify,bench,reproduce,train}``."""

import argparse
import json
import os
import subprocess
import sys

from . import __version__
from ._cli import ListHelpFormatter
from .programs._cli import ArgumentParser, integer_at_least, keep_freed_memory
from .programs.registry import EXPERIMENTS

#: BLAS thread variables pinned for ``verify`` and ``bench`` (read when NumPy loads, hence a child process).
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _rerun_with_blas_threads(argv, threads):
    """Exit code of ``python -m kmt_ref argv`` in a child with BLAS pinned to ``threads``, or
    ``None`` when this process is already pinned (it then runs the command itself)."""
    wanted = str(threads)
    if all(os.environ.get(v) == wanted for v in _THREAD_VARIABLES):
        return None
    env = dict(os.environ, **{v: wanted for v in _THREAD_VARIABLES})
    return subprocess.call([sys.executable, "-m", "kmt_ref", *argv], env=env)

#: Most processes ``verify --jobs`` starts (it has that many sections).
MAX_VERIFY_JOBS = 16


def main(argv=None):
    """Run the command line; its exit status (2 and one line for an error it can name, 130 on Ctrl-C)."""
    from .programs.jobs import ClusterError

    try:
        return _main(argv)
    except ClusterError as err:
        print(f"python -m kmt_ref: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("python -m kmt_ref: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped reading (``| head``): nothing left to say, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit must not fail
        return 1


def _main(argv=None):
    parser = ArgumentParser(prog="python -m kmt_ref", description=__doc__)
    parser.add_argument("--version", action="version", version=f"kmt_ref {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    from .programs.verify import SECTIONS

    p = sub.add_parser(
        "verify", help="check every construction against its classical algorithm",
        description="Check the paper's claims and this project's: run each construction layer by layer beside "
        "the classical algorithm it should equal (the Figure 3 data and other shapes, at several gamma) and prove "
        "the lemmas for every input by computer algebra (SymPy). One table per section, one row per claim, "
        "proof or measurement; exit status 1 when a claim fails. Sections:\n"
        + "\n".join(f"  {i}. {title}" for i, title in enumerate(SECTIONS, 1)),
        formatter_class=ListHelpFormatter)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quick", action="store_true", help="smaller Figure 3 data (seconds)")
    p.add_argument("--jobs", type=integer_at_least(1, MAX_VERIFY_JOBS), default=min(2, os.cpu_count() or 1),
                   help="run the sections in this many processes, each with one BLAS thread (default: 2, "
                   "or 1 on a one-core machine; the rows are the same)")
    p = sub.add_parser("bench", help="speed ratios measured side by side")
    p.add_argument("--repeats", type=integer_at_least(1), default=5, help="timed repeats per measurement (default 5)")
    p.add_argument("--quick", action="store_true", help="smaller sizes (for tests)")
    p.add_argument("--grid", action="store_true",
                   help="instead: the Theorem 2.1 and 2.2 transformers over lloyd at every n in 1e4, 1e5, 1e6, "
                   "k in 4, 16, 64, 256, d in 2, 16, 64, and lloyd over scikit-learn's Lloyd when it is installed "
                   "(3 iterations; at n = 1e6, d = 64, k = 256 one token matrix alone is 2.4 GB; with --quick a "
                   "small grid)")
    p.add_argument("--engines", action="store_true",
                   help="with --grid: instead, the engines side by side at gamma = inf (the blocks on tokens, "
                   "the default, and the labels run) at n in 1e4, 1e5, k in 4, 16, 64, d in 2, 16")
    p.add_argument("--out", metavar="FILE", help="with --grid: also write its rows and verdicts as JSON to FILE, "
                   "a new file (an existing one is refused, before any measurement)")
    p.add_argument(
        "--threads", type=integer_at_least(1), default=1,
        help="BLAS threads (default 1: kmeans2 is single-threaded, and an oversubscribed BLAS "
        "distorts ratios on a busy machine)",
    )
    p = sub.add_parser(
        "reproduce", help="re-run an experiment of the book (results go to ./kmt_ref_results), or --report it",
        description="experiments:\n" + "\n".join(f"  {k:<15} {e.describe()}" for k, e in EXPERIMENTS.items()),
        formatter_class=ListHelpFormatter)
    p.add_argument("experiment", choices=list(EXPERIMENTS), metavar="EXPERIMENT",
                   help="one of the experiments listed above")
    p.add_argument("options", nargs=argparse.REMAINDER, help="experiment options (see: reproduce NAME -h)")
    p = sub.add_parser("train", help="train or resume one learning model, checkpointing as it goes")
    p.add_argument("options", nargs=argparse.REMAINDER, help="see: train -h")
    if argv is None:
        argv = sys.argv[1:]
    keep_freed_memory()
    if argv[:1] == ["train"]:  # all of its options are its own
        from .programs.cli import train_command

        return train_command(argv[1:])
    args = parser.parse_args(argv)

    if args.command == "verify":
        # Its matrices are small: BLAS threads would only compete with the section processes.
        code = _rerun_with_blas_threads(argv, 1)
        if code is not None:
            return code
        from .programs.verify import LEGEND, SECTIONS, format_section, run_verification, summary_line, to_json

        if args.json:
            results = run_verification(quick=args.quick, jobs=args.jobs)
            print(to_json(results))
        else:
            print(LEGEND, flush=True)
            n = len(SECTIONS)

            def started(title):
                print(f"\n[{list(SECTIONS).index(title) + 1}/{n}] {title} ...", flush=True)

            def finished(title, rows, seconds):
                print(format_section(title, rows) + f"\n({len(rows)} rows in {seconds:.1f} s)", flush=True)

            results = run_verification(quick=args.quick, on_section=finished, on_start=started, jobs=args.jobs)
            print("\n" + summary_line(results))
        return 0 if all(r.ok for rows in results.values() for r in rows) else 1
    if args.command == "bench":
        if args.engines and not args.grid:
            parser.error("--engines is a grid of its own: add --grid")
        if args.out is not None:
            from ._paths import check_writable

            if not args.grid or os.path.exists(args.out):
                parser.error(f"--out writes the grid (with --grid) to a new file; got --out={args.out!r}"
                             + (" (it exists)" if args.grid else " without --grid"))
            try:
                check_writable(args.out, "--out", folder=False)
            except ValueError as err:
                parser.error(str(err))
        code = _rerun_with_blas_threads(argv, args.threads)
        if code is not None:
            return code
        from .programs import bench

        print(f"BLAS threads: {args.threads}")
        if args.grid:
            grid = bench.QUICK_GRID if args.quick else bench.ENGINE_GRID if args.engines else bench.GRID
            rows = bench.run_grid(grid, repeats=args.repeats, models=bench.ENGINE_MODELS if args.engines else None)
            print(bench.format_grid(rows))
            if args.out is not None:
                with open(args.out, "x") as f:
                    json.dump(bench.grid_record(rows, args.threads, args.repeats), f, indent=1)
        else:
            print(bench.format_bench(bench.run_bench(repeats=args.repeats, quick=args.quick)))
        return 0
    if args.command == "reproduce":
        experiment = EXPERIMENTS[args.experiment]
        if experiment.command is not None:
            return experiment.command(args.options)
        from .programs.cli import reproduce

        return reproduce(args.experiment, args.options)
    return 2


if __name__ == "__main__":
    sys.exit(main())
