"""The paper's parameter sweep, on the authors' grid and with their metric.

The authors sweep ``gamma`` in {1, 10, 100}, ``d`` in 1..10, ``k`` in
5, 10, ..., 50, ten ``n`` from 100 to 10^6 (``numpy.logspace(2, 6, 10)``) and a
data scale ``ub`` in 1..10, with ONE task per (k, d, n, ub) cell shared by the
three gammas. A task: true centers ``U(0, 1)^{k x d}``, exactly ``n // k``
points per center from ``N(center, 0.01 I)``, every dimension min-max scaled
to [0, 1] and multiplied by ``ub``, rows permuted, the first ``k`` rows as
initial centers. The metric of a cell is the log objective of the validated
Theorem 2.1 model after 10 layers minus that of Lloyd's algorithm after 10
iterations from the same centers, undefined (NaN) where Lloyd's algorithm
empties a cluster (the authors' Lloyd averages an empty set).

Their results ship with the package (``kmt_ref/data/authors_parameter_sweep.csv``);
:func:`compare` puts ours beside them: per gamma the mean, the median, the
fraction of cells within ``1e-3`` (this project's tolerance) and the fraction
below ``-1e-3`` (the transformer better than Lloyd), and the differences cell
by cell and per cell of each of the paper's four heatmaps (mean, mean
absolute, largest, and the fraction of cells where the two fall on opposite
sides beyond ``1e-3``), always over the cells both sweeps have.

The full grid costs many hours on one core, mostly its largest ``n``; the
committed run (``kmt_ref/results/sweep/paper_sweep.json``) covers every cell
(a full run, resumed over several sessions from the cells it had kept).
``python -m kmt_ref reproduce paper-sweep`` recomputes every cell with
``n <= SUBSAMPLE_ABOVE`` and a seeded random subset of the cells above (minutes),
``--full`` every cell (``--finished-only`` gathers what a full run has kept,
``--resume-from`` starts from an earlier run's JSON, e.g. the committed one,
and computes only the cells it lacks); ``--report`` prints the comparison.
"""

import json
import os
import sys
import time
from itertools import product

import numpy as np

from .._paths import check_writable, read_json
from .._validation import check_int, check_k, check_positive, check_rng
from ..classical import lloyd
from ..engine import LABELS
from ..lloyd_transformer import lloyd_transformer
from ..tasks import DATA_DIR
from ._cli import ArgumentParser, integer_at_least
from ._results import COMMITTED_DIR, check_output_dir, output_dir
from .jobs import Job, cluster, finished, job_seconds, keep_result, run_jobs

__all__ = ["PAPER_GRID", "HEATMAPS", "authors_task", "cell_losses", "cell_job", "cell_jobs", "keep_cells",
           "run_paper_sweep", "load_authors", "load_paper_sweep", "summarize", "compare", "coverage", "heatmap_grids",
           "heatmaps", "reproduce", "fixed"]

#: The authors' grid.
PAPER_GRID = dict(
    gammas=[1.0, 10.0, 100.0],
    ds=list(range(1, 11)),
    ks=list(range(5, 51, 5)),
    ns=[int(n) for n in np.logspace(2, 6, 10, dtype=int)],
    scales=list(range(1, 11)),
)
#: Cells with more points than this are subsampled in the committed run.
SUBSAMPLE_ABOVE = 5994
#: Cells run per ``n`` above :data:`SUBSAMPLE_ABOVE`.
SUBSAMPLE_CELLS = {16681: 20, 46415: 20, 129154: 12, 359381: 6, 1000000: 4}
#: The paper's four heatmaps: (row axis, column axis) of the mean difference.
HEATMAPS = (("k", "scale"), ("d", "k"), ("n", "k"), ("n", "d"))
#: This project's agreement tolerance (the paper states none).
TOL = 1e-3

COMMITTED_PATH = os.path.join(COMMITTED_DIR, "sweep", "paper_sweep.json")
AUTHORS_CSV = os.path.join(DATA_DIR, "authors_parameter_sweep.csv")
_AXES = ("k", "d", "n", "scale")


def authors_task(rng, n, d, k, scale):
    """One task of the authors' sweep: ``(X, init)`` with ``k * (n // k)`` points.

    Parameters
    ----------
    rng : numpy.random.Generator
    n, d, k : int
        Points asked for (``n // k`` per center), dimension, centers.
    scale : float
        The authors' ``ub``: the min-max scaled data are multiplied by it.

    Returns
    -------
    X : ndarray, shape (k * (n // k), d)
    init : ndarray, shape (k, d)
    """
    check_rng(rng)
    n, d = check_int(n, "n", low=1), check_int(d, "d", low=1)
    k = check_k(k, n)
    per = n // k
    scale = check_positive(scale, "scale")
    means = rng.uniform(size=(k, d))
    X = np.repeat(means, per, axis=0) + 0.1 * rng.standard_normal((k * per, d))
    X = X - X.min(axis=0)
    X = X / np.where(X.max(axis=0) > 0, X.max(axis=0), 1.0) * scale
    X = X[rng.permutation(k * per)]
    return X, X[:k].copy()


def cell_losses(X, init, gammas, n_layers=10):
    """The authors' metric for each gamma: transformer minus Lloyd, log objective after ``n_layers``.

    Returns a list of floats, all NaN when Lloyd's algorithm empties a cluster.
    """
    try:
        ref = lloyd(X, init, n_layers, empty_cluster="raise").log_objectives(X)[-1]
    except ValueError:
        return [float("nan")] * len(gammas)
    d, k = X.shape[1], init.shape[0]
    # Labels only: the layers' assignment weights of a cell with n = 1e6 and k = 50 would be 4 GB; at
    # gamma = inf the labels run, named for speed (verify checks it against the layer).
    # The cell's gap from Lloyd is what the sweep records: no warning of it at a finite gamma.
    return [float(lloyd_transformer(d, k, gamma).run(X, init, n_layers, keep_assignments=False,
                                                     engine=LABELS if np.isinf(gamma) else None,
                                                     warn="ties" if np.isinf(gamma) else False)
                  .log_objectives(X)[-1] - ref) for gamma in gammas]


def _cells(grid, subsample_rng, full=False):
    """The (k, d, n, scale) cells to run: all up to SUBSAMPLE_ABOVE points and a random subset above, or
    with ``full`` every cell (the subset is drawn either way, so the draws do not depend on ``full``)."""
    every = list(product(grid["ks"], grid["ds"], grid["ns"], grid["scales"]))
    small = [cell for cell in every if cell[2] <= SUBSAMPLE_ABOVE]
    large = []
    for n in (n for n in grid["ns"] if n > SUBSAMPLE_ABOVE):
        at_n = [(k, d, n, s) for k, d, s in product(grid["ks"], grid["ds"], grid["scales"])]
        pick = subsample_rng.choice(len(at_n), size=min(SUBSAMPLE_CELLS.get(n, 0), len(at_n)), replace=False)
        large += [at_n[i] for i in sorted(pick)]
    if full:
        # The committed run's cells first, then the rest by increasing n: a sweep stopped early has the
        # committed cells and whole n levels of the others, cheapest first.
        chosen = set(large)
        rest = [cell for cell in every if cell[2] > SUBSAMPLE_ABOVE and cell not in chosen]
        return small + large + sorted(rest, key=lambda cell: (cell[2], cell))
    return small + large


def cell_job(directory, seed, k, d, n, scale, gammas):
    """One cell as a job (:mod:`kmt_ref.programs.jobs`): ``{"losses": [...]}``, ``None`` where NaN.

    Its task is drawn from its own generator, ``default_rng([seed, k, d, n, scale])``, so a cell's numbers
    do not depend on which other cells run, nor where. ``directory`` is unused: a cell writes nothing else.
    """
    X, init = authors_task(np.random.default_rng([seed, k, d, n, int(scale)]), n, d, k, scale)
    return {"losses": [None if np.isnan(v) else v for v in cell_losses(X, init, gammas)]}


def cell_jobs(seed=0, grid=None, full=False):
    """The sweep's cells as :class:`~kmt_ref.programs.jobs.Job` values, in the order :func:`run_paper_sweep`
    runs them."""
    grid = dict(PAPER_GRID if grid is None else grid)
    seed = check_int(seed, "seed", low=0)
    gammas = [float(g) for g in grid["gammas"]]
    return [Job("paper-sweep-cell", f"seed{seed}-k{k}-d{d}-n{n}-scale{scale:g}",
                dict(seed=seed, k=int(k), d=int(d), n=int(n), scale=scale, gammas=gammas))
            for k, d, n, scale in _cells(grid, np.random.default_rng([seed]), full)]


def keep_cells(source, directory, seed=0, grid=None):
    """Keep the cells of an earlier sweep under ``directory`` as finished, so that a run there computes only
    the others; returns how many files it wrote.

    Parameters
    ----------
    source : dict
        A result of :func:`run_paper_sweep` (e.g. the committed one, :func:`load_paper_sweep`) of the same
        ``seed`` and ``grid``.
    directory : str
        Where a run keeps its cells (the folder of its ``--out``).

    Notes
    -----
    A cell already kept there is left as it is, and must hold the same losses. ``source`` records the
    seconds of its cells as sums per ``n`` only, so each file written records the mean over its ``n``:
    a sweep gathered there sums to ``source``'s cost plus that of the cells it computes.
    """
    grid, seed = dict(PAPER_GRID if grid is None else grid), check_int(seed, "seed", low=0)
    directory = check_output_dir(directory, "directory")  # never into the committed results
    if not isinstance(source, dict) or not isinstance(source.get("rows"), list):
        raise ValueError(f"source must be a sweep's result, a dict with a list of rows; got {type(source).__name__}")
    if source.get("seed") != seed or source.get("grid") != grid:
        raise ValueError(f"source is a sweep of seed {source.get('seed')!r} and grid {source.get('grid')!r}; "
                         f"this run's are {seed!r} and {grid!r}")
    jobs = {tuple(job.inputs[a] for a in _AXES): job for job in cell_jobs(seed, grid, full=True)}
    cells = []
    for row in source["rows"]:
        try:
            job = jobs.get(tuple(row[:4])) if isinstance(row, list) else None
        except TypeError:  # an unhashable entry
            job = None
        if job is None or len(row) != 4 + len(grid["gammas"]):
            raise ValueError(f"source has a row that is no cell of the grid: {row!r}")
        cells.append((job, {"losses": list(row[4:])}))
    per_n = {}
    for job, _ in cells:
        per_n[str(job.inputs["n"])] = per_n.get(str(job.inputs["n"]), 0) + 1
    written = 0
    for job, result in cells:
        kept = finished(job, directory)
        if kept is not None:
            if kept != result:
                raise ValueError(f"cell {job.name}: kept under {directory} with losses {kept['losses']}, "
                                 f"source says {result['losses']}")
            continue
        n = str(job.inputs["n"])
        total = source.get("cell_seconds", {}).get(n)
        keep_result(job, directory, result, None if total is None else total / per_n[n])
        written += 1
    return written


def run_paper_sweep(seed=0, grid=None, progress=False, full=False, directory=None, client=None, finished_only=False):
    """Run the sweep; a JSON-ready dict with ``grid``, ``cells`` and, per cell, the losses.

    Each cell is a job (:func:`cell_job`): with ``directory``, its result is
    kept in a file there and a rerun skips it; ``client`` runs the cells on a
    Dask cluster (:func:`kmt_ref.programs.jobs.cluster`). The subset of large
    cells is drawn from ``default_rng([seed])``; ``full``: every cell of the grid.
    With ``directory``, ``cell_seconds`` sums, per ``n``, the seconds each cell
    took when it was computed (one core each): the sweep's measured cost;
    ``finished_only``: only the cells whose results are there, nothing computed
    (what a sweep still running has done).
    """
    grid, seed = dict(PAPER_GRID if grid is None else grid), check_int(seed, "seed", low=0)
    jobs, start = cell_jobs(seed, grid, full), time.perf_counter()
    if finished_only:
        if directory is None:
            raise ValueError("finished_only needs the directory that holds the cells' results")
        jobs = [job for job in jobs if finished(job, directory) is not None]
        if not jobs:
            raise ValueError(f"no finished cells under {os.path.join(directory, 'jobs', 'paper-sweep-cell')}: "
                             "--finished-only gathers the cells kept beside --out by a run with the same --out")
    results = run_jobs(jobs, directory, client, progress)
    rows = [[job.inputs[a] for a in _AXES] + result["losses"] for job, result in zip(jobs, results, strict=True)]
    timed = {}
    if directory is not None:
        for job in jobs:
            timed[str(job.inputs["n"])] = timed.get(str(job.inputs["n"]), 0.0) + (job_seconds(job, directory) or 0.0)
    # The subsampling applies to a run that is not full only; a full run records none.
    subsampled = {} if full else dict(subsample_above=SUBSAMPLE_ABOVE,
                                      subsample_cells={str(n): c for n, c in SUBSAMPLE_CELLS.items()})
    return dict(grid=grid, seed=seed, full=bool(full), cell_seconds={n: round(t, 1) for n, t in timed.items()},
                **subsampled, columns=list(_AXES) + [f"loss_gamma_{g:g}" for g in grid["gammas"]], rows=rows,
                seconds=round(time.perf_counter() - start, 1))


def load_authors(path=AUTHORS_CSV):
    """The authors' results as ``{gamma: {(k, d, n, scale): loss}}`` (NaN kept)."""
    data = np.genfromtxt(path, delimiter=",", names=True)
    out = {}
    for row in data:
        key = (int(row["Clusters"]), int(row["Dimensions"]), int(row["Points"]), int(row["Scale"]))
        out.setdefault(float(row["Gamma"]), {})[key] = float(row["Loss"])
    return out


def _ours(result):
    """Our results in the shape of :func:`load_authors`."""
    out = {}
    for row in result["rows"]:
        key = tuple(int(v) for v in row[:4])
        for gamma, loss in zip(result["grid"]["gammas"], row[4:], strict=True):
            out.setdefault(float(gamma), {})[key] = float("nan") if loss is None else float(loss)
    return out


def summarize(losses):
    """Per-gamma statistics of ``{cell: loss}`` over the cells with a defined loss."""
    v = np.array([x for x in losses.values() if np.isfinite(x)])
    return {"n_cells": int(v.size), "mean": float(v.mean()), "median": float(np.median(v)),
            "frac_within_1e-3": float(np.mean(np.abs(v) < TOL)), "frac_negative": float(np.mean(v < -TOL))}


def _heatmap(losses, rows_axis, cols_axis, cells):
    """Mean loss per (row value, column value) over ``cells`` with a defined loss."""
    i, j = _AXES.index(rows_axis), _AXES.index(cols_axis)
    sums = {}
    for cell in cells:
        if np.isfinite(losses[cell]):
            s = sums.setdefault((cell[i], cell[j]), [0.0, 0])
            s[0] += losses[cell]
            s[1] += 1
    return {key: total / count for key, (total, count) in sums.items()}


def compare(result, authors=None):
    """Ours beside the authors', per gamma, over the cells both have: each side's summary
    (:func:`summarize`), and the differences cell by cell (``"cells"``) and per cell of each heatmap
    (``"heatmaps"``): count, mean and mean absolute difference, the largest, and the fraction of opposite
    signs beyond :data:`TOL`. Our tasks are our own draws, so a cell's two numbers agree in law only."""
    ours, theirs = _ours(result), load_authors() if authors is None else authors
    out = {}
    for gamma in result["grid"]["gammas"]:
        shared = sorted(set(ours[gamma]) & set(theirs[gamma]))
        mine = {c: ours[gamma][c] for c in shared}
        other = {c: theirs[gamma][c] for c in shared}
        both = [c for c in shared if np.isfinite(mine[c]) and np.isfinite(other[c])]
        maps = {}
        for rows_axis, cols_axis in HEATMAPS:
            a, b = _heatmap(mine, rows_axis, cols_axis, both), _heatmap(other, rows_axis, cols_axis, both)
            maps[f"{rows_axis} x {cols_axis}"] = _differences(np.array([a[key] for key in a]),
                                                              np.array([b[key] for key in a]))
        out[f"{gamma:g}"] = {"ours": summarize(mine), "authors": summarize(other),
                             "authors_full_grid": summarize(theirs[gamma]),
                             "cells": _differences(np.array([mine[c] for c in both]),
                                                   np.array([other[c] for c in both])),
                             "heatmaps": maps}
    return out


def _differences(a, b):
    """Ours ``a`` against the authors' ``b``, entry by entry: their count, the mean of ``a - b`` and of its
    absolute value, the largest absolute value, and the fraction of entries of opposite signs beyond
    :data:`TOL` (one better than Lloyd by more than it, the other worse)."""
    diff = a - b
    opposite = ((a > TOL) & (b < -TOL)) | ((a < -TOL) & (b > TOL))
    return {"cells": int(diff.size), "mean_difference": float(np.mean(diff)),
            "mean_abs_difference": float(np.mean(np.abs(diff))), "max_abs_difference": float(np.max(np.abs(diff))),
            "frac_opposite_signs": float(np.mean(opposite))}


def heatmap_grids(result, gamma, rows_axis, cols_axis, authors=None):
    """``(row values, column values, ours, theirs)``: mean-loss matrices of one heatmap, shared cells."""
    ours, theirs = _ours(result)[gamma], (load_authors() if authors is None else authors)[gamma]
    both = [c for c in sorted(set(ours) & set(theirs)) if np.isfinite(ours[c]) and np.isfinite(theirs[c])]
    a, b = _heatmap(ours, rows_axis, cols_axis, both), _heatmap(theirs, rows_axis, cols_axis, both)
    rv, cv = sorted({key[0] for key in a}), sorted({key[1] for key in a})
    grid = lambda m: np.array([[m.get((r, c), np.nan) for c in cv] for r in rv])  # noqa: E731
    return rv, cv, grid(a), grid(b)


def heatmaps(result, gamma, authors=None):
    """The paper's four heatmaps at ``gamma``: ``[(rows_axis, cols_axis, row values, column values, ours,
    theirs), ...]`` in the order of :data:`HEATMAPS` (what ``plotting.certificate.paper_sweep_heatmaps`` draws)."""
    authors = load_authors() if authors is None else authors
    return [(r, c, *heatmap_grids(result, float(gamma), r, c, authors)) for r, c in HEATMAPS]


def coverage(result):
    """Cells run of the cells in the grid, per ``n``: ``{n: (run, in grid)}`` (each cell serves every gamma)."""
    grid = result["grid"]
    per_n = len(grid["ks"]) * len(grid["ds"]) * len(grid["scales"])
    run = {n: 0 for n in grid["ns"]}
    for row in result["rows"]:
        run[int(row[2])] += 1
    return {n: (count, per_n) for n, count in run.items()}


def fixed(value, digits):
    """``value`` to ``digits`` decimals, with no minus sign on a zero (a tiny negative median prints ``0.0000``,
    not ``-0.0000``)."""
    return f"{round(float(value), digits) + 0.0:.{digits}f}"


def load_paper_sweep(path=COMMITTED_PATH):
    """The committed (or another) paper-sweep result."""
    return read_json(path)


def reproduce(argv=()):
    """``python -m kmt_ref reproduce paper-sweep [--report] [--json] [--out PATH] [--full] [--finished-only]
    [--resume-from JSON] [--workers N | --scheduler ADDRESS]``."""
    parser = ArgumentParser(prog="python -m kmt_ref reproduce paper-sweep",
                                     description="the authors' parameter sweep (their grid and metric)")
    parser.add_argument("--report", action="store_true",
                        help="compare the committed run with the authors' results; run nothing")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--out", default=None,
                        help="JSON output (default ./kmt_ref_results/sweep/paper_sweep.json); each cell's result "
                        "is kept beside it, in jobs/paper-sweep-cell/, and a rerun skips the cells found there")
    parser.add_argument("--full", action="store_true",
                        help="every cell of the grid, the committed run's cells first (many core-hours, most "
                        "of them at the largest n), not only the committed run's cells")
    parser.add_argument("--finished-only", action="store_true",
                        help="gather the cells whose results are already kept beside --out (e.g. by a --full run "
                        "still in progress) and compute nothing")
    parser.add_argument("--resume-from", default=None, metavar="JSON",
                        help="take the cells of an earlier sweep's JSON (\"committed\": the committed run) as "
                        "finished, kept beside --out, and compute only the others")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=integer_at_least(1), default=None,
                       help="run the cells on a local Dask cluster of this many processes (needs kmt-ref[dask])")
    where.add_argument("--scheduler", default=None,
                       help="run the cells on the Dask cluster of this scheduler, e.g. tcp://host:8786; its "
                       "workers must see the output folder")
    args = parser.parse_args(list(argv))
    if args.report:
        if args.resume_from is not None:
            parser.error("--report runs nothing: it takes no --resume-from")
        try:
            result = load_paper_sweep(args.out or COMMITTED_PATH)
        except ValueError as err:
            parser.error(f"--out: {err}")
    else:
        try:
            out = check_writable(args.out or os.path.join(output_dir(), "sweep", "paper_sweep.json"), "--out",
                                 folder=False)
        except ValueError as err:
            parser.error(str(err))
        if args.resume_from is not None:
            try:
                kept = keep_cells(load_paper_sweep(COMMITTED_PATH if args.resume_from == "committed"
                                                   else args.resume_from), os.path.dirname(out))
            except (OSError, ValueError, KeyError, TypeError) as err:
                parser.error(f"--resume-from {args.resume_from}: {err}")
            print(f"paper sweep: {kept} cells of {args.resume_from} kept beside {out}", file=sys.stderr)
        n_cells = len(_cells(PAPER_GRID, np.random.default_rng(0), args.full))
        print(f"paper sweep: {n_cells} cells{', those finished only' if args.finished_only else ''} -> {out}",
              file=sys.stderr)
        try:
            with cluster(args.scheduler, args.workers) as client:
                result = run_paper_sweep(progress=True, full=args.full, directory=os.path.dirname(out), client=client,
                                         finished_only=args.finished_only)
        except ValueError as err:
            parser.error(str(err))
        out = check_output_dir(out, "--out")  # checked again: a folder may have become a link meanwhile
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(result, f)
    report = compare(result)
    if args.json:
        print(json.dumps({g: {"ours": r["ours"], "authors": r["authors"], "cells": r["cells"]}
                          for g, r in report.items()}, indent=1))
        return 0
    print("The authors' parameter sweep: log objective of the transformer after 10 layers minus Lloyd's,")
    cover = sorted(coverage(result).items())
    whole = 0  # how many of the smallest n have all their cells run
    while whole < len(cover) and cover[whole][1][0] == cover[whole][1][1]:
        whole += 1
    parts = ([f"every cell up to n = {cover[whole - 1][0]:,}"] if whole else []) + [
        f"{run:,} of {total:,} at n = {n:,}" for n, (run, total) in cover[whole:]]
    print(f"over the {len(result['rows']):,} cells of our run ({', '.join(parts)}) and the same cells of the "
          "authors' CSV; 'within' and 'below' use 1e-3 (our tolerance).")
    print(f"{'gamma':>6} {'':8}{'cells':>7}{'mean':>8}{'median':>9}{'within':>8}{'below':>7}")
    for gamma, r in report.items():
        for who in ("ours", "authors"):
            s = r[who]
            print(f"{gamma:>6} {who:<8}{s['n_cells']:>7}{fixed(s['mean'], 3):>8}{fixed(s['median'], 4):>9}"
                  f"{s['frac_within_1e-3']:>8.1%}{s['frac_negative']:>7.1%}")
    print("Cell by cell, ours minus the authors' (our tasks are our own draws: they agree in law, not number by "
          "number):")
    print(f"{'gamma':>6} {'cells':>7}{'mean':>9}{'mean abs':>10}{'largest':>9}{'opposite signs':>16}")
    for gamma, r in report.items():
        c = r["cells"]
        print(f"{gamma:>6} {c['cells']:>7}{fixed(c['mean_difference'], 3):>9}{c['mean_abs_difference']:>10.3f}"
              f"{c['max_abs_difference']:>9.3f}{c['frac_opposite_signs']:>16.1%}")
    return 0
