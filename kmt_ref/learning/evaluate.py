"""Multi-step evaluation of a trained layer against Lloyd's algorithm.

The single trained layer is applied ``n_steps`` times, re-embedding before
every step: the tokens are rebuilt from the current centers (assignment block
0, ids ``I_k``), so only the d-dimensional centers are carried. The metric is
the mean over held-out tasks of the log k-means objective after each step;
Lloyd's algorithm runs from the same initial centers.

The authors evaluate on each run's validation tasks (which also drive the
learning-rate schedule); here every seed gets its own fresh held-out tasks
from an independent stream, drawn the same way.
"""

import numpy as np

from ..classical import lloyd
from ..objective import iterate_objectives
from ..tasks import sample_tasks
from .model import run_steps

__all__ = ["evaluation_tasks", "log_objective_curve", "model_curve", "lloyd_curve", "summarize"]


def evaluation_tasks(config, n_tasks, n=None, family=None, init="first", equal_weights=None,
                     isotropic=None, k=None):
    """Held-out tasks for a run's seed, independent of its training and validation tasks.

    Options left as ``None`` take the training value from ``config``
    (a :class:`~kmt_ref.learning.config.TrainConfig`).

    Returns
    -------
    X : ndarray, shape (n_tasks, n, d)
    init : ndarray, shape (n_tasks, k, d)
    """
    # Child 3 of the run's SeedSequence: training uses children 0-2.
    rng = np.random.default_rng(np.random.SeedSequence(config.seed).spawn(4)[3])
    kw = config.task_kwargs()
    for key, value in dict(n=n, k=k, family=family, equal_weights=equal_weights, isotropic=isotropic).items():
        if value is not None:
            kw[key] = value
    return sample_tasks(rng, n_tasks, init=init, **kw)


def log_objective_curve(X, centers):
    """Mean over tasks of the log objective after every step.

    Parameters
    ----------
    X : ndarray, shape (B, n, d)
    centers : ndarray, shape (T + 1, B, k, d)

    Returns
    -------
    curve : ndarray, shape (T + 1,)
        ``inf`` from the first step at which some task's centers are not
        finite (a diverged iteration is reported, not averaged away).
    finite : ndarray, shape (T + 1,)
        Fraction of tasks with finite centers.
    """
    objs = iterate_objectives(X, centers)  # (T + 1, B)
    with np.errstate(divide="ignore"):
        logs = np.log(objs)
    return logs.mean(axis=1), np.isfinite(objs).mean(axis=1)


def model_curve(theta, model_config, X, init, n_steps, reembed=True, engine=None):
    """``log_objective_curve`` of the trained layer applied ``n_steps`` times (``engine``: see
    :func:`~kmt_ref.learning.model.run_steps`)."""
    return log_objective_curve(X, run_steps(theta, X, init, model_config, n_steps, reembed=reembed, engine=engine))


def lloyd_curve(X, init, n_steps):
    """``log_objective_curve`` of Lloyd's algorithm from the same initial centers."""
    return log_objective_curve(X, lloyd(X, init, n_steps).centers)


def summarize(curves):
    """Median, min and max over seeds of per-seed curves ``(n_seeds, T + 1)``."""
    curves = np.asarray(curves, dtype=float)
    return {
        "median": np.median(curves, axis=0).tolist(),
        "min": np.min(curves, axis=0).tolist(),
        "max": np.max(curves, axis=0).tolist(),
    }
