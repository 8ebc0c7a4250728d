"""``python -m kmt_ref reproduce <learning experiment>`` and ``python -m kmt_ref train``.

``reproduce NAME [--quick | --paper] [--report] [--json] [--no-train] [--seeds 0,1] [--results-dir DIR]``
runs one experiment of :mod:`kmt_ref.programs.experiments` (training or
resuming its models as needed) and writes ``DIR/<scale>/NAME.json``;
``--report`` prints the committed numbers instead.

``train [--quick | --paper] [--tokens d+k|d] [--seed S] [--n N --d D --k K --tau T --steps S --lr LR]
[--results-dir DIR]`` trains or resumes one model. Ctrl-C or ``kill PID``
(SIGTERM) saves a checkpoint first; rerunning the same command continues from
it.

Both write only under ``DIR`` (default ``./kmt_ref_results/learning``, or
``$KMT_REF_RESULTS/learning``); the committed results are read, never
written.
"""

import argparse
import json
import os
import signal
import sys

from .._paths import check_writable
from .._text import unsigned_zeros
from ..engine import Engine
from ..learning import protocols
from ..learning.config import MAX_PERTURB
from . import experiments, runs
from ._cli import ArgumentParser, integer_at_least, positive_number
from .jobs import MAX_WORKERS, check_cluster, cluster, run_jobs
from .registry import EXPERIMENTS, run_experiment

__all__ = ["reproduce", "train_command"]

#: Most re-embedded layer applications a model is trained through (each keeps its activations for the gradient).
MAX_TRAIN_LAYERS = 100


def _seed_list(text):
    return [integer_at_least(0)(t) for t in text.split(",")]


#: ``--quick``, ``--paper``, ...: what each scale is, for ``reproduce`` and for ``train``.
SCALE_HELP = {
    "quick": ("one seed, a few hundred steps (the default; minutes)",) * 2,
    "paper": ("the authors' protocol: 10,000 steps, seeds 0-9 (about an hour per model on one core; models "
              "missing from the committed results are TRAINED unless --no-train)",
              "the authors' protocol: n = 512, batches of 32, 10,000 steps (about an hour on one core)"),
    "figures": ("128 points, batches of 8, 2,000 steps, seeds 0 and 1 (52 models, about half an hour on one core)",
                "the training-curves protocol: 128 points, batches of 8, 2,000 steps"),
    "beyond": ("128 points, batches of 8, 10,000 steps, seeds 0-2 (about two hours on one core)",
               "the beyond-the-paper protocol: 128 points, batches of 8, 10,000 steps"),
}


def _scale_options(parser, results_help, scales, for_train=False):
    """The scale options ``scales`` (a mutually exclusive group) and the output and thread options."""
    group = parser.add_mutually_exclusive_group()
    for scale in scales:
        group.add_argument(f"--{scale}", dest="scale", action="store_const", const=scale,
                           help=SCALE_HELP[scale][for_train])
    parser.add_argument("--results-dir", default=None, help=results_help)
    parser.add_argument("--threads", type=integer_at_least(1), default=1,
                        help="threads over a batch's tasks (default 1; the numbers do not depend on it)")


def _cluster_options(parser, what):
    """``--workers N | --scheduler ADDRESS``: where the jobs run (default: in this process)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=integer_at_least(1, MAX_WORKERS), default=None,
                       help=f"{what} on a local Dask cluster of this many processes, one job each (needs "
                       "kmt-ref[dask])")
    where.add_argument("--scheduler", default=None,
                       help=f"{what} on the Dask cluster of this scheduler, e.g. tcp://host:8786; its workers "
                       "must see --results-dir")


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _catch_signals():
    # Training saves a checkpoint on KeyboardInterrupt: make `kill PID` (SIGTERM) and
    # Ctrl-C do that even in a background job, where the shell ignores SIGINT.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def report_text(name, result):
    """A report as plain text: what was run, at which scale, and the numbers (none of them -0.000)."""
    experiment = EXPERIMENTS[name]
    lines = [f"{name}: {experiment.describe()}",
             f"scale {result['scale']!r}" + (f", seeds {result['seeds']}" if result.get("seeds") is not None else "")
             + ", "
             f"{'PARTIAL (some models unfinished)' if result.get('partial') else 'all models finished'}"]
    return unsigned_zeros("\n".join(lines + experiment.report(result)))


def reproduce(name, argv=()):
    """Run (or report) the learning experiment ``name``; returns an exit code."""
    parser = ArgumentParser(prog=f"python -m kmt_ref reproduce {name}", description=EXPERIMENTS[name].describe())
    _scale_options(parser, "where results are written (default ./kmt_ref_results/learning); with --report, "
                   "where they are read from (default: the committed results)",
                   list(EXPERIMENTS[name].scales))
    parser.add_argument("--report", action="store_true", help="print the committed numbers, run nothing")
    parser.add_argument("--json", action="store_true", help="print JSON (for programs) instead of a table")
    parser.add_argument("--no-train", action="store_true",
                        help="evaluate the checkpoints as they are (possibly unfinished); train nothing")
    parser.add_argument("--seeds", type=_seed_list, default=None,
                        help="comma-separated seeds (default: all of the scale's seeds)")
    _cluster_options(parser, "train the models the experiment lacks and evaluate its seeds")
    args = parser.parse_args(list(argv))
    scale = args.scale or EXPERIMENTS[name].default_scale
    if args.report:
        results_dir = args.results_dir or protocols.RESULTS_DIR
        if args.scale is None and os.path.exists(os.path.join(results_dir, "paper", f"{name}.json")):
            scale = "paper"  # a report shows the paper-scale results where there are some
        if not os.path.isdir(results_dir):
            parser.error(f"--results-dir {results_dir!r} is not a directory")
        try:
            out = EXPERIMENTS[name].read(results_dir, scale)
        except ValueError as err:
            parser.error(str(err))
        try:
            text = json.dumps(out, indent=1) if args.json else report_text(name, out)
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as err:  # a file of another shape
            parser.error(f"the {scale} results of {name} under {results_dir!r} are not what reproduce {name} writes "
                         f"({type(err).__name__}: {err})")
        print(text)
        return 0
    try:
        results_dir = check_writable(args.results_dir or runs.default_results_dir(), "--results-dir")
        check_cluster(args.scheduler, args.workers)
    except ValueError as err:
        parser.error(str(err))
    _catch_signals()
    print(f"{name} ({scale} scale): writing to {results_dir}", file=sys.stderr)
    with cluster(args.scheduler, args.workers) as client:
        try:
            out = run_experiment(name, scale, results_dir, train_missing=not args.no_train, seeds=args.seeds,
                                 engine=Engine(args.threads, client=client))
        except runs.MissingModelsError as err:
            parser.error(str(err))
    print(json.dumps(out, indent=1) if args.json else report_text(name, out))
    print(f"-> {os.path.join(results_dir, scale, name + '.json')}", file=sys.stderr)
    return 0


def _tokens_list(text):
    tokens = text.split(",")
    for t in tokens:
        if t not in ("d+k", "d"):
            raise argparse.ArgumentTypeError(f"must be d+k, d or d+k,d; got {text!r}")
    return tokens


def train_command(argv=()):
    """``python -m kmt_ref train ...``: train or resume models, each a job; returns an exit code."""
    parser = ArgumentParser(
        prog="python -m kmt_ref train",
        description="Train or resume learned layers -- one, or a list of seeds, token layouts and the training "
        "figures' settings -- checkpointing every validation. Ctrl-C or SIGTERM saves a checkpoint; the same "
        "command resumes it. Each model is a job: in this process, or on a Dask cluster.")
    _scale_options(parser, "where checkpoints are written (default ./kmt_ref_results/learning); a committed "
                   "checkpoint that needs more steps is copied there first", list(SCALE_HELP), for_train=True)
    parser.add_argument("--tokens", type=_tokens_list, default=["d+k"],
                        help="token layout: [x | y] (d+k, the default), [x] only (d), or both (d+k,d)")
    parser.add_argument("--tied", action="store_true",
                        help="tie the id maps: parameters that do not depend on k (tokens d+k)")
    parser.add_argument("--symmetric", action="store_true",
                        help="every symmetry of the task law (ids, coordinate permutations, reflections "
                        "x_l -> 1 - x_l) by construction: 48 scalars at every d and k (tokens d+k; not with --tied)")
    parser.add_argument("--n-layers", type=integer_at_least(1, MAX_TRAIN_LAYERS),
                        help="train through this many re-embedded layer applications (the authors' protocol: 1)")
    parser.add_argument("--loss-on", choices=("last", "every"),
                        help="with --n-layers > 1: the loss after the last application (default) or its mean "
                        "over every one")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=integer_at_least(0), default=None, help="run seed (default 0)")
    seeds.add_argument("--seeds", type=_seed_list, default=None, help="comma-separated run seeds, one model each")
    parser.add_argument("--figure-settings", action="store_true",
                        help="every setting (k, d, tau) of the paper's training figures, cheapest first, "
                        "instead of --k/--d/--tau")
    parser.add_argument("--n", type=integer_at_least(1), help="points per task (the authors' protocol: 512)")
    parser.add_argument("--d", type=integer_at_least(1), help="dimension (the authors' protocol: 32)")
    parser.add_argument("--k", type=integer_at_least(1), help="clusters (the authors' protocol: 10)")
    parser.add_argument("--tau", type=positive_number, help="loss temperature (the authors' protocol: 0.1)")
    parser.add_argument("--steps", type=integer_at_least(1), help="training steps (the authors' protocol: 10,000)")
    parser.add_argument("--lr", type=positive_number, help="initial Adam learning rate (the authors' protocol: 0.01)")
    parser.add_argument("--precision", choices=("float64", "float32"),
                        help="arithmetic of each step's forward and backward pass (default float64; float32 is "
                        "faster, as bench measures; parameters and validation stay float64)")
    parser.add_argument("--perturb", type=integer_at_least(0, MAX_PERTURB),
                        help="multiply the initial parameters by 1 + PERTURB * 2^-52 (default 0: as drawn), a "
                        "rerun that differs by rounding only")
    _cluster_options(parser, "train")
    if not argv:  # a bare `train` is a question, not a request: it would write the default model's record
        parser.print_usage(sys.stderr)
        parser.error("say what to train: a scale (--quick for the default model), --seed, --tokens, ...")
    args = parser.parse_args(list(argv))
    scale = args.scale or "quick"
    overrides = {key: getattr(args, flag) for key, flag in
                 (("n", "n"), ("d", "d"), ("k", "k"), ("tau", "tau"), ("n_steps", "steps"), ("lr", "lr"),
                  ("n_layers", "n_layers"), ("loss_on", "loss_on"), ("precision", "precision"),
                  ("perturb", "perturb"))
                 if getattr(args, flag) is not None}
    for flag in ("tied", "symmetric"):
        if getattr(args, flag):
            overrides[flag] = True
    if args.figure_settings and {"k", "d", "tau"} & set(overrides):
        parser.error("--figure-settings sets k, d and tau: leave out --k, --d and --tau")
    settings = ([dict(overrides, **o) for o in experiments.figure_runs(scale)] if args.figure_settings
                else [overrides])
    jobs = runs.train_jobs(scale, args.seeds or [0 if args.seed is None else args.seed], args.tokens,
                                  settings)
    try:
        results_dir = check_writable(args.results_dir or runs.default_results_dir(), "--results-dir")
        for job in jobs:
            protocols.run_config(scale, job.inputs["tokens"], job.inputs["seed"], **job.inputs["overrides"])
        check_cluster(args.scheduler, args.workers)
    except ValueError as err:
        parser.error(str(err))
    _catch_signals()
    try:
        with cluster(args.scheduler, args.workers) as client:
            for job in jobs:
                path = protocols.checkpoint_path(scale, job.inputs["tokens"], job.inputs["seed"], results_dir,
                                                 **job.inputs["overrides"])
                print(f"checkpoint: {path}", file=sys.stderr)
            results = run_jobs(jobs, results_dir, client, options=dict(threads=args.threads))
    except KeyboardInterrupt:
        print(f"\ninterrupted: progress saved under {results_dir}; rerun the same command to resume", file=sys.stderr)
        return 130
    for job, r in zip(jobs, results, strict=True):
        if not r["trained"]:
            print(f"nothing to train for {job.name}: this run is committed with the package, finished after "
                  f"{r['step']} steps ({r['checkpoint']}); another --seed trains a model of your own", file=sys.stderr)
        print(json.dumps(dict(r, checkpoint=os.path.join(results_dir, r["checkpoint"]))))
    return 0
