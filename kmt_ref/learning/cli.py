"""``python -m kmt_ref reproduce <learning experiment>`` and ``python -m kmt_ref train``.

``reproduce NAME [--quick | --paper] [--report] [--no-train] [--seeds 0,1] [--results-dir DIR]``
runs one experiment of :mod:`kmt_ref.learning.experiments` (training or
resuming its models as needed) and writes ``DIR/<scale>/NAME.json``;
``--report`` prints the committed numbers instead.

``train [--quick | --paper] [--tokens d+k|d] [--seed S] [--results-dir DIR]``
trains or resumes one model. Ctrl-C or ``kill PID`` (SIGTERM) saves a
checkpoint first; rerunning the same command continues from it.
"""

import argparse
import json
import os
import signal
import sys

from . import experiments

__all__ = ["reproduce", "train_command"] + [f"reproduce_{name}" for name in experiments.EXPERIMENTS]


def _scale_options(parser):
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", dest="scale", action="store_const", const="quick",
                       help="one seed, a few hundred steps (default; minutes)")
    group.add_argument("--paper", dest="scale", action="store_const", const="paper",
                       help="the authors' protocol: 10,000 steps, seeds 0-9 (hours per model)")
    parser.add_argument("--results-dir", default=experiments.RESULTS_DIR)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _catch_signals():
    # Training saves a checkpoint on KeyboardInterrupt: make `kill PID` (SIGTERM) and
    # Ctrl-C do that even in a background job, where the shell ignores SIGINT.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def reproduce(name, argv=()):
    """Run (or report) the learning experiment ``name``; returns an exit code."""
    parser = argparse.ArgumentParser(prog=f"python -m kmt_ref reproduce {name}",
                                     description=experiments.EXPERIMENTS[name].__doc__)
    _scale_options(parser)
    parser.add_argument("--report", action="store_true", help="print the committed numbers as JSON")
    parser.add_argument("--no-train", action="store_true",
                        help="evaluate the checkpoints as they are (possibly unfinished); train nothing")
    parser.add_argument("--seeds", type=lambda t: [int(x) for x in t.split(",")], default=None,
                        help="comma-separated seeds (default: all of the scale's seeds)")
    args = parser.parse_args(list(argv))
    scale = args.scale or "quick"
    if args.report:
        if name == "learning":
            out = experiments.report(args.results_dir)
        else:
            with open(os.path.join(args.results_dir, scale, f"{name}.json")) as f:
                out = json.load(f)
        print(json.dumps(out, indent=1))
        return 0
    _catch_signals()
    out = experiments.run_experiment(name, scale, args.results_dir, train_missing=not args.no_train,
                                     seeds=args.seeds)
    print(json.dumps(out, indent=1))
    return 0


def _entry(name):
    def run(argv=()):
        return reproduce(name, argv)

    run.__name__ = f"reproduce_{name}"
    run.__doc__ = f"``python -m kmt_ref reproduce {name} [options]``."
    return run


for _name in experiments.EXPERIMENTS:
    globals()[f"reproduce_{_name}"] = _entry(_name)


def train_command(argv=()):
    """``python -m kmt_ref train ...``: train or resume one model; returns an exit code."""
    parser = argparse.ArgumentParser(prog="python -m kmt_ref train", description=__doc__.split("\n")[0])
    _scale_options(parser)
    parser.add_argument("--tokens", choices=("d+k", "d"), default="d+k")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(list(argv))
    scale = args.scale or "quick"
    path = experiments.checkpoint_path(scale, args.tokens, args.seed, args.results_dir)
    if os.path.exists(path):
        print(f"resuming {path}", file=sys.stderr)
    _catch_signals()
    try:
        r = experiments.trained(scale, args.tokens, args.seed, args.results_dir)
    except KeyboardInterrupt:
        print(f"\ninterrupted: progress saved in {path}; rerun the same command to resume", file=sys.stderr)
        return 130
    print(json.dumps(dict(checkpoint=path, step=r.step, finished=r.finished,
                          val_ratio=float(r.history["val_ratio"][-1]))))
    return 0
