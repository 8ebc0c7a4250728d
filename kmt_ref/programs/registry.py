"""Every experiment of ``python -m kmt_ref reproduce``, as a record.

One table, :data:`EXPERIMENTS`: the command line, its help, the reports and
the tests iterate it. A learning experiment is a ``run`` function of
:mod:`kmt_ref.programs.experiments` with its ``report``
(:mod:`kmt_ref.programs.reports`); the two sweeps have command lines of their
own (``command``). Adding an experiment is adding a record here.
"""

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from .._paths import read_json
from .._validation import check_choice
from ..learning.protocols import SCALES, learning_headline
from . import beyond, dissection, experiments, interpret, paper_sweep, reports, runs, sweep, symmetry
from ._results import check_output_dir

__all__ = ["Experiment", "EXPERIMENTS", "LEARNING", "run_experiment"]


@dataclass(frozen=True)
class Experiment:
    """One experiment: its name, where the paper shows it, one line of help, its scales (the first is the
    default), and how it runs.

    ``run(scale, results_dir, train_missing, progress, seeds, engine) -> dict`` and ``report(result) ->
    lines`` for a learning experiment (``reader(results_dir, scale) -> dict``, if given, reads its results
    instead of the file ``run`` wrote); ``command(argv) -> exit code`` for one with options of its own.
    """

    name: str
    paper: str
    help: str
    scales: tuple = ("quick", "paper")
    run: Callable = None
    report: Callable = None
    command: Callable = None
    reader: Callable = None

    def __post_init__(self):
        if (self.command is None) == (self.run is None) or (self.run is None) != (self.report is None):
            raise ValueError(f"experiment {self.name!r}: give run and report, or command")
        for scale in self.scales if self.run is not None else ():
            check_choice(scale, "scales", SCALES)

    @property
    def default_scale(self):
        """The scale ``reproduce NAME`` runs without a scale flag."""
        return self.scales[0]

    def read(self, results_dir, scale):
        """The results of a run at ``scale`` under ``results_dir`` (``ValueError`` if there are none)."""
        if self.reader is not None:
            return self.reader(results_dir, scale)
        path = os.path.join(results_dir, scale, f"{self.name}.json")
        if not os.path.exists(path):
            raise ValueError(f"no {scale} results for {self.name} at {path}")
        return read_json(path)

    def describe(self):
        """``help``, with where the paper shows it."""
        return f"{self.help} ({self.paper})" if self.paper else self.help


def _headline(results_dir, scale):
    """The learning report: the ``[x | y]`` model and its ``[x]`` ablation together, paper scale first."""
    try:
        return learning_headline(results_dir)
    except FileNotFoundError as err:
        raise ValueError(str(err)) from None


EXPERIMENTS = {e.name: e for e in (
    Experiment("sweep", "", "the gamma x d x k x n x scale sweep of the certificate page (its own grid)",
               command=sweep.reproduce),
    Experiment("paper-sweep", "the paper's parameter-sweep heatmaps",
               "the authors' parameter sweep: their grid and metric, beside their results",
               command=paper_sweep.reproduce),
    Experiment("learning", "paper Fig. 4a", "the learned layer (tokens [x | y]) against Lloyd over 20 steps",
               run=experiments.learning, report=reports.learning, reader=_headline),
    Experiment("eval-dropout", "", "the learned layer of Fig. 4a evaluated with the authors' attention dropout "
               "active (p = 0.01)", run=experiments.eval_dropout, report=reports.eval_dropout),
    Experiment("ablation", "paper Fig. 4b", "the same with tokens [x] only",
               run=experiments.ablation, report=reports.ablation),
    Experiment("generalization", "paper Fig. 4d", "the layer trained at n = 512 applied to other n",
               run=experiments.generalization, report=reports.shifted),
    Experiment("kmeanspp", "paper Fig. 4c", "k-means++ initial centers",
               run=experiments.kmeanspp, report=reports.shifted),
    Experiment("families", "the families: paper Table 1, Fig. 11",
               "other mixture families, and two options that are this project's own",
               run=experiments.families, report=reports.shifted),
    Experiment("precision", "", "the learned layer of Fig. 4a trained with float32 steps beside the float64-trained "
               "one of the same seed (train --precision float32)", scales=("paper", "quick"),
               run=experiments.precision, report=reports.precision),
    Experiment("tied", "", "beyond the paper: the id-equivariant (tied) layer at the authors' scale beside the "
               "standard layer, Lloyd and soft k-means, and both layers' relabelled self-agreement "
               "(train --paper --tied)", scales=("paper", "quick"), run=experiments.tied, report=reports.tied),
    Experiment("relabelled", "", "beyond the paper: the standard layer's one step against itself with the ids of "
               "its starts permuted, on every seed", scales=("paper", "quick"), run=experiments.relabelled,
               report=reports.relabelled),
    Experiment("symmetries", "", "beyond the paper: the standard layer against itself with the ids of its starts "
               "permuted (through the evaluation's steps), its coordinates permuted and reflected, and the nulls of "
               "the gain correlation", scales=("paper", "quick"), run=experiments.symmetries,
               report=reports.symmetries),
    Experiment("weights", "paper Fig. 5", "learned weights next to the construction",
               run=experiments.weights, report=reports.weights),
    Experiment("training-curves", "paper Fig. 9, 10a, 10b", "training loss and validation ratio for the paper's "
               "training-figure settings (--figures scale)", scales=("figures",),
               run=experiments.training_curves, report=reports.training_curves),
    Experiment("any-k", "", "beyond the paper: one tied layer trained at k = 10, run at k = 5, 10, 16, 25 "
               "(--beyond scale)", scales=("beyond",), run=beyond.any_k, report=reports.any_k),
    Experiment("multi-step", "", "beyond the paper: layers trained through T = 1, 2, 3 re-embedded steps, the "
               "loss on the last or on every step (--beyond scale)", scales=("beyond",),
               run=beyond.multi_step, report=reports.multi_step),
    Experiment("dissection", "", "beyond the paper: what the learned layer learned - each block and part of it "
               "changed in turn, and what its first application measures", run=dissection.dissection,
               report=reports.dissection),
    Experiment("interpret", "", "beyond the paper: the learned layer against the closed form its dissection points "
               "to, leaky soft k-means, fitted on the training distribution", run=interpret.interpret,
               report=reports.interpret),
    Experiment("symmetric", "", "beyond the paper: the closed forms fitted to the standard layer, to its average "
               "over relabellings of its starts' ids and to the tied layer, by one-step ratio and final-objective "
               "correlation",
               scales=("paper", "quick"), run=interpret.symmetric, report=reports.symmetric),
    Experiment("full-group", "", "beyond the paper: the closed forms against the standard and the tied layer "
               "averaged over every symmetry of the task law (relabellings of the ids, permutations of the "
               "coordinates, reflections x -> 1 - x), by one-step ratio and final-objective correlation",
               scales=("paper", "quick"), run=symmetry.full_group, report=reports.full_group),
    Experiment("symmetric-layer", "", "beyond the paper: the layer with every symmetry of the task law by "
               "construction (48 scalars; train --paper --symmetric) beside Lloyd, the standard and tied layers "
               "and soft k-means, with its scalars", scales=("paper", "quick"), run=symmetry.symmetric_layer,
               report=reports.symmetric_layer),
    Experiment("chaos", "", "beyond the paper: each seed's model retrained from initial parameters moved by a few "
               "roundings (--beyond or --figures scale)", scales=("beyond", "figures"), run=beyond.chaos,
               report=reports.chaos),
    Experiment("real-data", "", "beyond the paper: the constructions and the learned layers on iris, wine, "
               "breast cancer, digits", scales=("beyond",), run=beyond.real_data, report=reports.real_data),
)}

#: The learning experiments (those with a ``run``), in the registry's order.
LEARNING = tuple(name for name, e in EXPERIMENTS.items() if e.run is not None)


def run_experiment(name, scale="quick", results_dir=None, train_missing=True, progress=True,
                   seeds=None, engine=None):
    """Run one learning experiment and write ``<results_dir>/<scale>/<name>.json``; return the dict.

    ``results_dir`` defaults to :func:`~kmt_ref.programs.runs.default_results_dir` and may not be the
    committed results. ``seeds`` restricts the experiment to some of the scale's seeds (default: all).
    ``engine``: how models are trained and run (:class:`kmt_ref.engine.Engine`; the results do not depend
    on it).
    """
    check_choice(name, "name", LEARNING)
    check_choice(scale, "scale", EXPERIMENTS[name].scales)
    results_dir = check_output_dir(results_dir or runs.default_results_dir())
    # The revision of the code as it was imported, before a long run lets the checkout move on.
    revision = experiments.git_revision()
    t0 = time.perf_counter()
    out = EXPERIMENTS[name].run(scale, results_dir, train_missing, progress, seeds, engine)
    out = dict(
        experiment=name, scale=scale, command=experiments.reproduce_command(name, scale, train_missing, seeds),
        git_revision=revision, wall_time=time.perf_counter() - t0, **out,
    )
    path = check_output_dir(os.path.join(results_dir, scale, f"{name}.json"))  # a folder below may be a link
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    return out
