"""The gamma sweep: how far the finite-gamma transformer is from Lloyd, and what the certificate predicts.

Over a grid ``gamma x d x k x n x data scale`` (Gaussian-mixture tasks of
:func:`~kmt_ref.gaussian_mixture`, multiplied by ``scale``; ``n_layers``
layers), each task records

* ``gap``: the measured log-objective gap ``max_t |log f(C~_t) - log f(C_t)|``
  between ``lloyd_transformer(d, k, gamma)`` (validated configuration) and
  :func:`~kmt_ref.lloyd`, for every gamma;
* ``certified_gap``: the certificate's bound on that gap
  (:attr:`~kmt_ref.Certificate.log_objective_gap`);
* ``certified_gamma``: :func:`~kmt_ref.min_gamma` for a log-objective gap of
  ``tol`` (1e-3 by default, a tolerance of this project), and ``rule_gamma``, the closed-form corollary,
  for a center deviation of ``tol`` times the data's bounding-box diagonal;
* ``margin``: the smallest Lloyd margin (second-nearest minus nearest squared
  distance) along the trajectory, so that gaps can be plotted against
  ``gamma * margin``.

``python -m kmt_ref reproduce sweep`` runs the default grid (about a minute)
and writes ``<output dir>/sweep/sweep.json`` (default ``./kmt_ref_results``);
the book reads the committed ``kmt_ref/results/sweep/sweep.json``, which
``reproduce sweep --report`` summarizes (:func:`summarize`).
"""

import json
import time
from itertools import product
from pathlib import Path

import numpy as np

from .._paths import check_image_path, check_writable, read_json
from .._validation import check_n_steps, check_positive
from ..certificate import _LloydGeometry, min_gamma, rule_of_thumb_gamma
from ..classical import lloyd
from ..engine import LABELS
from ..lloyd_transformer import lloyd_transformer
from ..tasks import gaussian_mixture
from ._cli import ArgumentParser
from ._results import output_dir

__all__ = ["GRID", "QUICK_GRID", "run_sweep", "load_sweep", "first_good", "summarize", "reproduce", "DEFAULT_PATH"]

#: The default grid (runs in about a minute on one core).
GRID = {
    "gammas": [float(g) for g in np.logspace(0, 9, 19)],
    "ds": [2, 8, 32],
    "ks": [3, 10],
    "ns": [100, 1000],
    "scales": [0.1, 1.0, 10.0],
    "seeds": [0, 1],
    "n_layers": 10,
    "tol": 1e-3,
}
#: A grid small enough for tests (seconds).
QUICK_GRID = dict(GRID, gammas=[float(g) for g in np.logspace(0, 9, 7)], ds=[2], ks=[3], ns=[100],
                  scales=[1.0, 10.0], seeds=[0])

#: The committed result, shipped inside the package so the book and tests read it without recomputing.
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "results" / "sweep" / "sweep.json"


def _lloyd_margin(geom):
    rows = np.arange(geom.X.shape[0])
    margin = np.inf
    for t in range(geom.n_layers):
        D2 = geom.dist[t] ** 2
        gap = D2 - D2[rows, geom.labels[t]][:, None]
        gap[rows, geom.labels[t]] = np.inf
        margin = min(margin, float(gap.min()))
    return margin


def run_sweep(gammas, ds, ks, ns, scales, seeds, n_layers=10, tol=1e-3):
    """Run the sweep; returns a JSON-ready dict ``{"grid": ..., "tasks": [...]}``.

    Parameters
    ----------
    gammas : sequence of float
        Inverse temperatures, all ``> 0``.
    ds, ks, ns : sequences of int
        Dimensions, numbers of clusters, numbers of points.
    scales : sequence of float
        Data scale: the task's points (in ``[0, 1]^d``) are multiplied by it.
    seeds : sequence of int
        One task per seed and setting (``numpy.random.default_rng(seed)``).
    n_layers : int
    tol : float
        Log-objective tolerance of ``certified_gamma``.

    Returns
    -------
    dict
        ``grid`` (the arguments) and ``tasks``: one dict per (d, k, n, scale,
        seed) with ``gap``, ``certified_gap`` (lists over gammas),
        ``certified_gamma``, ``rule_gamma``, ``margin``, ``diag``.
    """
    gammas = [check_positive(g, "gamma") for g in gammas]
    scales = [check_positive(s, "scale") for s in scales]
    n_layers = check_n_steps(n_layers, "n_layers")
    tol = check_positive(tol, "tol")
    grid = dict(gammas=gammas, ds=list(ds), ks=list(ks), ns=list(ns), scales=list(scales),
                seeds=list(seeds), n_layers=int(n_layers), tol=tol)
    tasks = []
    for d, k, n, scale, seed in product(ds, ks, ns, scales, seeds):
        X, init, _ = gaussian_mixture(np.random.default_rng(seed), n=n, d=d, k=k)
        X, init = X * scale, init * scale
        ref_log = lloyd(X, init, n_layers).log_objectives(X)
        geom = _LloydGeometry(X, init, n_layers, float_allowance=True)
        gap, certified = [], []
        for gamma in gammas:
            # at gamma = inf the labels run, named for speed (verify checks it against the layer)
            # (the gap from Lloyd is what the sweep records: no warning of it at a finite gamma)
            traj = lloyd_transformer(d, k, gamma).run(X, init, n_layers, engine=LABELS if np.isinf(gamma) else None,
                                                      warn="ties" if np.isinf(gamma) else False)
            gap.append(float(np.max(np.abs(traj.log_objectives(X) - ref_log))))
            certified.append(float(geom.certify(gamma).log_objective_gap.max()))
        tasks.append(dict(
            d=d, k=k, n=n, scale=scale, seed=seed,
            gap=gap,
            certified_gap=certified,
            certified_gamma=min_gamma(X, init, n_layers, tol, target="log_objective"),
            rule_gamma=rule_of_thumb_gamma(X, init, n_layers, tol * geom.diag),
            margin=_lloyd_margin(geom),
            diag=geom.diag,
        ))
    return {"grid": grid, "tasks": tasks}


def load_sweep(path=DEFAULT_PATH):
    """Read a sweep written by :func:`reproduce` (``inf`` is stored as ``Infinity``)."""
    return read_json(path)


def first_good(gaps, gammas, tol):
    """The smallest grid gamma from which the measured gap stays ``<= tol`` (``inf`` if none)."""
    below = np.asarray(gaps) <= tol
    return next((float(g) for i, g in enumerate(gammas) if below[i:].all()), float("inf"))


def summarize(result, paper_gamma=1e4):
    """What the book reports of a sweep: how tight the certificate is, and how often ``paper_gamma`` suffices.

    Returns a dict: ``tasks``, ``gammas`` (counts), ``tol``, ``certified`` (tasks with a finite
    certified gamma), ``ratio_median`` / ``ratio_min`` / ``ratio_max`` of the certified gamma over
    the measured threshold (:func:`first_good`), and ``paper_gamma_ok``, the fraction of tasks
    whose measured gap at the grid gamma nearest ``paper_gamma`` is ``<= tol``.
    """
    grid, tasks = result["grid"], result["tasks"]
    gammas, tol = np.asarray(grid["gammas"], dtype=float), float(grid["tol"])
    ratio = np.array([t["certified_gamma"] / first_good(t["gap"], gammas, tol) for t in tasks
                      if np.isfinite(t["certified_gamma"])])
    nearest = int(np.argmin(np.abs(np.log(gammas / paper_gamma))))
    return {
        "tasks": len(tasks), "gammas": len(gammas), "tol": tol, "certified": int(ratio.size),
        "ratio_median": float(np.median(ratio)), "ratio_min": float(ratio.min()), "ratio_max": float(ratio.max()),
        "paper_gamma": paper_gamma, "paper_gamma_ok": float(np.mean([t["gap"][nearest] <= tol for t in tasks])),
    }


def report_text(summary):
    return (f"sweep: {summary['tasks']} tasks x {summary['gammas']} gammas, tolerance {summary['tol']:g}\n"
            f"certified on {summary['certified']} of {summary['tasks']} tasks; certified gamma / measured "
            f"threshold: median {summary['ratio_median']:.2g}, range {summary['ratio_min']:.2g} .. "
            f"{summary['ratio_max']:.2g}\n"
            f"gamma = {summary['paper_gamma']:g} gives a gap <= {summary['tol']:g} on "
            f"{summary['paper_gamma_ok']:.0%} of the tasks")


def reproduce(argv=()):
    """``python -m kmt_ref reproduce sweep [--quick] [--out PATH] [--figure PNG] [--report [--json]]``."""
    parser = ArgumentParser(prog="python -m kmt_ref reproduce sweep",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--report", action="store_true", help="summarize the committed sweep, run nothing")
    parser.add_argument("--json", action="store_true", help="with --report: print JSON")
    parser.add_argument("--quick", action="store_true", help="tiny grid (seconds)")
    parser.add_argument("--out", default=None,
                        help="JSON output (default ./kmt_ref_results/sweep/sweep.json; never the committed file)")
    parser.add_argument("--figure", default=None, help="also save the heatmaps to this image file")
    args = parser.parse_args(list(argv))
    if args.json and not args.report:
        parser.error("--json goes with --report")
    if args.report:
        if args.quick or args.out or args.figure:
            parser.error("--report reads the committed sweep: it takes no --quick, --out or --figure")
        summary = summarize(load_sweep())
        print(json.dumps(summary, indent=1) if args.json else report_text(summary))
        return 0
    try:
        out = Path(check_writable(args.out or Path(output_dir()) / "sweep" / "sweep.json", "--out", folder=False))
        if args.figure:
            check_image_path(args.figure, "--figure")
    except ValueError as err:
        parser.error(str(err))
    start = time.perf_counter()
    result = run_sweep(**(QUICK_GRID if args.quick else GRID))
    result["seconds"] = round(time.perf_counter() - start, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    size = f"{len(result['tasks'])} tasks x {len(result['grid']['gammas'])} gammas"
    print(f"{size} in {result['seconds']} s -> {out}")
    if args.figure:
        from ..plotting.certificate import sweep_heatmaps

        sweep_heatmaps(result).savefig(args.figure, dpi=120, bbox_inches="tight")
        print(f"figure -> {args.figure}")
    return 0
