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

import numpy as np

from ..engine import Engine
from . import experiments
from ._cli import integer_at_least, positive_number
from ._results import check_output_dir

__all__ = ["reproduce", "train_command"]

#: One line per experiment, for ``reproduce --help``.
EXPERIMENT_HELP = {
    "learning": "the learned layer (tokens [x | y]) against Lloyd over 20 steps (paper Fig. 4a)",
    "eval-dropout": "the learned layer of Fig. 4a evaluated with the authors' attention dropout (p = 0.01) on",
    "ablation": "the same with tokens [x] only (paper Fig. 4b)",
    "generalization": "the layer trained at n = 512 applied to other n (paper Fig. 4d)",
    "kmeanspp": "k-means++ initial centers (paper Fig. 4c)",
    "families": "other mixture families and options (paper Table 1, Fig. 11)",
    "weights": "learned weights next to the construction (paper Fig. 5)",
    "training-curves": "training loss and validation ratio for the paper's Fig. 9, 10a, 10b settings (--figures scale)",
    "any-k": "beyond the paper: one tied layer trained at k = 10, run at k = 5, 10, 16, 25 (--beyond scale)",
    "multi-step": "beyond the paper: layers trained through T = 1, 2, 3 re-embedded steps, the loss on the last "
                  "or on every step (--beyond scale)",
    "real-data": "beyond the paper: the constructions and the learned layers on iris, wine, breast cancer, digits",
}

#: The scale each experiment runs at by default; ``figures`` and ``beyond`` belong to their experiments only.
DEFAULT_SCALE = {"training-curves": "figures", "any-k": "beyond", "multi-step": "beyond", "real-data": "beyond"}


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


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _catch_signals():
    # Training saves a checkpoint on KeyboardInterrupt: make `kill PID` (SIGTERM) and
    # Ctrl-C do that even in a background job, where the shell ignores SIGINT.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def _fmt(value):
    return "diverged" if value is None else f"{value:.3f}"


def report_text(name, result):
    """A report as plain text: what was run, at which scale, and the numbers."""
    lines = [f"{name}: {EXPERIMENT_HELP[name]}",
             f"scale {result['scale']!r}" + (f", seeds {result['seeds']}" if result.get("seeds") is not None else "")
             + ", "
             f"{'PARTIAL (some models unfinished)' if result.get('partial') else 'all models finished'}"]
    if name == "learning":
        lines.append("mean log k-means objective after 20 steps on held-out tasks (lower is better);")
        lines.append("median over seeds, [min, max] over seeds, and the paper's value:")
        for label, key in (("Lloyd", "lloyd"), ("learned, tokens [x | y]", "learned"),
                           ("learned, tokens [x] only", "d_only")):
            value = result.get(f"{key}_log_objective")
            if value is None:
                continue
            # A report has the [min, max] range; a fresh run has the per-step summaries.
            spread = result.get(f"{key}_log_objective_range") or [result[key]["min"][-1], result[key]["max"][-1]]
            lines.append(f"  {label:<26}{value:8.3f}   [{spread[0]:.3f}, {spread[1]:.3f}]   paper "
                         f"~{experiments.PAPER_LEARNING[key + '_log_objective']:.2f}")
        if result["scale"] != "paper":
            lines.append("(the quick scale trains for minutes, not hours: the learned layer is not expected "
                         "to beat Lloyd there)")
        if result.get("note"):
            lines.append("note: " + result["note"])
        return "\n".join(lines)
    rows = {k: v for k, v in result.items() if isinstance(v, dict) and "learned_log_objective" in v}
    if name == "ablation":
        rows = {"tokens [x] only": dict(lloyd_log_objective=result["lloyd_log_objective"],
                                        learned_log_objective=result["d_only_log_objective"])}
    if rows:
        lines.append("mean log k-means objective after 20 steps, median over seeds (lower is better):")
        lines.append(f"  {'tasks':<28}{'Lloyd':>8}{'learned':>10}{'learned - Lloyd':>17}")
        for setting, row in rows.items():
            learned, lloyd = row["learned_log_objective"], row["lloyd_log_objective"]
            gap = "" if learned is None else f"{learned - lloyd:+.3f}"
            lines.append(f"  {setting:<28}{lloyd:8.3f}{_fmt(learned):>10}{gap:>17}")
    if name == "eval-dropout":
        lines.append(f"mean log k-means objective after 20 steps on held-out tasks, median [min, max] over seeds; "
                     f"attention dropout p = {result['dropout']:g} on every block:")
        for label, key in (("Lloyd", "lloyd"), ("learned, no dropout", "learned"),
                           ("learned, dropout on", "learned_dropout")):
            v = result[f"{key}_final"]
            lines.append(f"  {label:<26}{np.median(v):8.3f}   [{min(v):.3f}, {max(v):.3f}]")
        gap = [a - b for a, b in zip(result["learned_dropout_final"], result["lloyd_final"], strict=True)]
        lines.append(f"  dropout on, minus Lloyd, per seed: [{min(gap):+.3f}, {max(gap):+.3f}]")
    if name == "training-curves":
        st = result["setting"]
        lines.append(f"{st['n']} points, batches of {st['batch']}, {st['n_steps']} steps; final validation ratio "
                     "(objective after the layer / after one Lloyd step), median [min, max] over seeds:")
        for panel, rows in result["panels"].items():
            lines.append(f"  {panel}")
            for r in rows:
                v = r["val_ratio_final"]
                lines.append(f"    tokens {r['tokens']:<4} k={r['k']:<3} d={r['d']:<3} tau={r['tau']:<6g}"
                             f"{np.median(v):7.3f} [{min(v):.3f}, {max(v):.3f}]")
    if name == "any-k":
        lines.append("mean log k-means objective after 20 steps, median over seeds (lower is better):")
        lines.append(f"  {'k':<6}{'Lloyd':>8}{'tied (k=10)':>13}{'[x] (k=10)':>12}{'standard (at k)':>17}")
        for key, row in result["per_k"].items():
            lines.append(f"  {key[2:]:<6}{row['lloyd_log_objective']:8.3f}{_fmt(row['tied_log_objective']):>13}"
                         f"{_fmt(row['d_only_log_objective']):>12}{_fmt(row['standard_log_objective']):>17}")
    if name == "multi-step":
        lines.append("mean log k-means objective after 20 re-embedded steps, median over seeds:")
        lines.append(f"  {'trained through':<30}{'Lloyd':>8}{'learned':>10}{'learned - Lloyd':>17}")
        for key, row in result["per_n_layers"].items():
            learned, lloyd = row["learned_log_objective"], row["lloyd_log_objective"]
            gap = "" if learned is None else f"{learned - lloyd:+.3f}"
            lines.append(f"  {key:<30}{lloyd:8.3f}{_fmt(learned):>10}{gap:>17}")
    if name == "real-data":
        lines.append(f"{result['restarts']} random initializations per data set; after {result['n_eval_steps']} steps: "
                     "mean log objective / adjusted Rand index with the classes (median over seeds):")
        lines.append(f"  {'data set':<15}{'k':>3}{'Lloyd':>15}{'tied':>15}{'[x] only':>15}{'standard':>15}"
                     f"{'gamma=inf exact':>17}")
        for key, row in result["per_dataset"].items():
            cells = [f"{row[m]['log_objective']:.3f} / {row[m]['ari']:.2f}" if m in row else "-"
                     for m in ("lloyd", "tied", "d_only", "standard")]
            c = row["construction"]["inf"]
            exact = f"{c['exact']}/{c['tie_free']}"
            lines.append(f"  {key:<15}{row['k']:>3}" + "".join(f"{c:>15}" for c in cells) + f"{exact:>17}")
        lines.append("(last column: runs equal to Lloyd at gamma = inf / runs without an exact distance tie)")
    if name == "weights":
        lines.append("data-block diagonal mean of each learned matrix, per seed (construction in brackets):")
        for key, entry in result["per_seed"][0].items():
            values = ", ".join(f"{s[key]['diag_mean']:+.3f}" for s in result["per_seed"])
            lines.append(f"  {key:<8} {values}   [{entry.get('construction_diag_mean', float('nan')):+.1f}]")
    return "\n".join(lines)


def reproduce(name, argv=()):
    """Run (or report) the learning experiment ``name``; returns an exit code."""
    parser = argparse.ArgumentParser(prog=f"python -m kmt_ref reproduce {name}",
                                     description=EXPERIMENT_HELP[name])
    special = DEFAULT_SCALE.get(name)
    _scale_options(parser, "where results are written (default ./kmt_ref_results/learning); with --report, "
                   "where they are read from (default: the committed results)",
                   [special] if special else ["quick", "paper"])
    parser.add_argument("--report", action="store_true", help="print the committed numbers, run nothing")
    parser.add_argument("--json", action="store_true", help="print JSON (for programs) instead of a table")
    parser.add_argument("--no-train", action="store_true",
                        help="evaluate the checkpoints as they are (possibly unfinished); train nothing")
    parser.add_argument("--seeds", type=_seed_list, default=None,
                        help="comma-separated seeds (default: all of the scale's seeds)")
    args = parser.parse_args(list(argv))
    engine = Engine(args.threads)
    scale = args.scale or DEFAULT_SCALE.get(name, "quick")
    if args.report:
        results_dir = args.results_dir or experiments.RESULTS_DIR
        if args.scale is None and os.path.exists(os.path.join(results_dir, "paper", f"{name}.json")):
            scale = "paper"  # a report shows the paper-scale results where there are some
        if not os.path.isdir(results_dir):
            parser.error(f"--results-dir {results_dir!r} is not a directory")
        if name == "learning":
            out = experiments.report(results_dir)
        else:
            path = os.path.join(results_dir, scale, f"{name}.json")
            if not os.path.exists(path):
                parser.error(f"no {scale} results for {name} at {path}")
            with open(path) as f:
                out = json.load(f)
        print(json.dumps(out, indent=1) if args.json else report_text(name, out))
        return 0
    try:
        results_dir = check_output_dir(args.results_dir or experiments.default_results_dir(), "--results-dir")
    except ValueError as err:
        parser.error(str(err))
    _catch_signals()
    print(f"{name} ({scale} scale): writing to {results_dir}", file=sys.stderr)
    out = experiments.run_experiment(name, scale, results_dir, train_missing=not args.no_train, seeds=args.seeds,
                                     engine=engine)
    print(json.dumps(out, indent=1) if args.json else report_text(name, out))
    print(f"-> {os.path.join(results_dir, scale, name + '.json')}", file=sys.stderr)
    return 0


def train_command(argv=()):
    """``python -m kmt_ref train ...``: train or resume one model; returns an exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m kmt_ref train",
        description="Train or resume one learned layer, checkpointing every validation. Ctrl-C or "
        "SIGTERM saves a checkpoint; the same command resumes it.")
    _scale_options(parser, "where checkpoints are written (default ./kmt_ref_results/learning); a committed "
                   "checkpoint that needs more steps is copied there first", list(SCALE_HELP), for_train=True)
    parser.add_argument("--tokens", choices=("d+k", "d"), default="d+k",
                        help="token layout: [x | y] (d+k, the default) or [x] only (d)")
    parser.add_argument("--tied", action="store_true",
                        help="tie the id maps: parameters that do not depend on k (tokens d+k)")
    parser.add_argument("--n-layers", type=integer_at_least(1),
                        help="train through this many re-embedded layer applications (paper: 1)")
    parser.add_argument("--loss-on", choices=("last", "every"),
                        help="with --n-layers > 1: the loss after the last application (default) or its mean "
                        "over every one")
    parser.add_argument("--seed", type=integer_at_least(0), default=0, help="run seed (default 0)")
    parser.add_argument("--n", type=integer_at_least(1), help="points per task (paper: 512)")
    parser.add_argument("--d", type=integer_at_least(1), help="dimension (paper: 32)")
    parser.add_argument("--k", type=integer_at_least(1), help="clusters (paper: 10)")
    parser.add_argument("--tau", type=positive_number, help="loss temperature (paper: 0.1)")
    parser.add_argument("--steps", type=integer_at_least(1), help="training steps (paper: 10,000)")
    parser.add_argument("--lr", type=positive_number, help="initial Adam learning rate (paper: 0.01)")
    args = parser.parse_args(list(argv))
    engine = Engine(args.threads)
    scale = args.scale or "quick"
    overrides = {key: getattr(args, flag) for key, flag in
                 (("n", "n"), ("d", "d"), ("k", "k"), ("tau", "tau"), ("n_steps", "steps"), ("lr", "lr"),
                  ("n_layers", "n_layers"), ("loss_on", "loss_on"))
                 if getattr(args, flag) is not None}
    if args.tied:
        overrides["tied"] = True
    try:
        results_dir = check_output_dir(args.results_dir or experiments.default_results_dir(), "--results-dir")
        experiments.run_config(scale, args.tokens, args.seed, **overrides)
    except ValueError as err:
        parser.error(str(err))
    path = experiments.checkpoint_path(scale, args.tokens, args.seed, results_dir, **overrides)
    print(f"checkpoint: {path}", file=sys.stderr)
    _catch_signals()
    try:
        r = experiments.trained(scale, args.tokens, args.seed, results_dir, engine=engine, **overrides)
    except KeyboardInterrupt:
        saved = "progress saved in" if os.path.exists(path) else "nothing saved yet for"
        print(f"\ninterrupted: {saved} {path}; rerun the same command to resume", file=sys.stderr)
        return 130
    if not os.path.exists(path):  # nothing written: the package's committed run is finished
        path = experiments.checkpoint_path(scale, args.tokens, args.seed, experiments.RESULTS_DIR, **overrides)
        print(f"nothing to train: this run is committed with the package, finished after {r.step} steps "
              f"({path}); another --seed trains a model of your own", file=sys.stderr)
    print(json.dumps(dict(checkpoint=path, step=r.step, finished=r.finished, trained=path.startswith(results_dir),
                          val_ratio=float(r.history["val_ratio"][-1]))))
    return 0
