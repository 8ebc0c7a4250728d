"""Command line: ``python -m kmt_ref {verify,bench,reproduce,train}``."""

import argparse
import os
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kmt_ref", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("verify", help="check every construction against its classical algorithm")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quick", action="store_true", help="smaller Figure 3 data (seconds)")
    p = sub.add_parser("bench", help="speed ratios measured side by side")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="smaller sizes (for tests)")
    p = sub.add_parser("reproduce", help="the paper's learning experiments (results/learning/)")
    p.add_argument("experiment", help="learning, ablation, generalization, kmeanspp, families or weights")
    scale = p.add_mutually_exclusive_group()
    scale.add_argument("--quick", dest="scale", action="store_const", const="quick",
                       help="one seed, a few hundred steps (default; minutes)")
    scale.add_argument("--paper", dest="scale", action="store_const", const="paper",
                       help="the authors' protocol: 10,000 steps, seeds 0-9 (hours per model)")
    p.add_argument("--report", action="store_true", help="print the committed numbers as JSON, run nothing")
    p.add_argument("--no-train", action="store_true",
                   help="evaluate the checkpoints as they are (possibly unfinished); train nothing")
    p.add_argument("--results-dir", default=None)
    p = sub.add_parser("train", help="train (or resume) one model of a scale, checkpointing as it goes")
    scale = p.add_mutually_exclusive_group()
    scale.add_argument("--quick", dest="scale", action="store_const", const="quick")
    scale.add_argument("--paper", dest="scale", action="store_const", const="paper")
    p.add_argument("--tokens", choices=("d+k", "d"), default="d+k")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results-dir", default=None)
    args = parser.parse_args(argv)

    if args.command == "verify":
        from .verify import format_table, run_verification, to_json

        results = run_verification(quick=args.quick)
        print(to_json(results) if args.json else format_table(results))
        return 0 if all(r.ok for rows in results.values() for r in rows) else 1
    if args.command == "bench":
        from .bench import format_bench, run_bench

        print(format_bench(run_bench(repeats=args.repeats, quick=args.quick)))
        return 0
    if args.command in ("reproduce", "train"):
        return _learning_command(args)
    return 2


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _learning_command(args):
    import json
    import signal

    from .learning import experiments

    # Training saves a checkpoint on KeyboardInterrupt: make `kill PID` (SIGTERM) and
    # Ctrl-C do that even in a background job, where the shell ignores SIGINT.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)

    results_dir = args.results_dir or experiments.RESULTS_DIR
    scale = args.scale or "quick"
    if args.command == "train":
        path = experiments.checkpoint_path(scale, args.tokens, args.seed, results_dir)
        if os.path.exists(path):
            print(f"resuming {path}", file=sys.stderr)
        try:
            r = experiments.trained(scale, args.tokens, args.seed, results_dir)
        except KeyboardInterrupt:
            print(f"\ninterrupted: progress saved in {path}; rerun the same command to resume",
                  file=sys.stderr)
            return 130
        print(json.dumps(dict(checkpoint=path, step=r.step, finished=r.finished,
                              val_ratio=float(r.history["val_ratio"][-1]))))
        return 0
    if args.experiment not in experiments.EXPERIMENTS:
        print(f"unknown experiment {args.experiment!r}; choose from {sorted(experiments.EXPERIMENTS)}",
              file=sys.stderr)
        return 2
    if args.report:
        if args.experiment == "learning":
            out = experiments.report(results_dir)
        else:
            with open(os.path.join(results_dir, scale, f"{args.experiment}.json")) as f:
                out = json.load(f)
        print(json.dumps(out, indent=1))
        return 0
    out = experiments.run_experiment(args.experiment, scale, results_dir, train_missing=not args.no_train)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
