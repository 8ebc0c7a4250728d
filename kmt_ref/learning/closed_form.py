"""Fitting the closed form's two scalars by autograd on the training distribution.

The closed form is leaky soft k-means (:mod:`kmt_ref.variants.leaky`): the
responsibilities at stiffness ``beta``, and each center the softmax over all
the points of ``sharpness`` times its responsibilities. Its two scalars are fitted
on the loss the layer was trained on, the mean smoothed objective
(:func:`~kmt_ref.learning.loss.smoothed_objective`) of tasks of its
training distribution, taken after ``n_unroll`` steps (the layer: one).
Parameters are ``log beta`` and ``log sharpness``, so both stay positive.
"""

import autograd
import autograd.numpy as anp
import numpy as np
import scipy.optimize

from .._validation import check_instance, check_int, check_rng
from ..tasks import draw_tasks
from ..variants.leaky import leaky_step
from .config import TrainConfig
from .loss import smoothed_objective

__all__ = ["unrolled_loss", "fit_leaky", "FIT_GRID", "FIT_RESTARTS", "FIT_SUBSETS"]


def unrolled_loss(log_params, X, init, n_unroll, tau):
    """Mean smoothed objective after ``n_unroll`` leaky steps at ``(beta, sharpness) = exp(log_params)``.

    Parameters
    ----------
    log_params : ndarray, shape (2,)
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    n_unroll : int
    tau : float

    Returns
    -------
    float
    """
    beta, sharpness = anp.exp(log_params[0]), anp.exp(log_params[1])
    C = init
    for _ in range(n_unroll):
        C, _ = leaky_step(X, C, beta, sharpness)
    return anp.mean(smoothed_objective(X, C, tau))


_value_and_grad = autograd.value_and_grad(unrolled_loss)


#: The values of ``beta`` and of ``sharpness`` at which the fit first takes the mean loss (every pair), before
#: L-BFGS refines the best of them.
FIT_GRID = tuple(float(v) for v in np.geomspace(0.5, 128.0, 9))
#: Grid points refined by L-BFGS; the lowest end point is the fit, the others measure how much the start matters.
FIT_RESTARTS = 4
#: Disjoint slices of the sample, each fitted the same way, to measure how much the sample matters.
FIT_SUBSETS = 4


def fit_leaky(rng, config, n_unroll, n_tasks=256, restarts=FIT_RESTARTS, subsets=FIT_SUBSETS):
    """Fit ``(beta, sharpness)`` to the mean loss of ``n_tasks`` tasks drawn once from the training distribution.

    The mean has several local minima, so a local search from one start ends at whichever basin holds the start.
    First the mean loss is taken at every point of :data:`FIT_GRID` x :data:`FIT_GRID`; then L-BFGS
    (``scipy.optimize.minimize``, autograd's gradient, over ``log beta`` and ``log sharpness``) refines each of the
    ``restarts`` best grid points, and the lowest end point is the fit. A fixed sample rather than Adam on fresh
    batches: Adam's end point wanders with its batches, and through 20 steps it changed with the last bits of the
    arithmetic; this minimizer of a fixed sample's mean does not (tested: a change of the sample in the 15th digit
    moves it by less than 1e-3). The same fit on each of ``subsets`` disjoint slices of the sample (one restart
    each) measures how much the sample matters.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the tasks.
    config : TrainConfig
        The task distribution (``n``, ``d``, ``k``, family, ...) and the loss temperature ``tau``.
    n_unroll : int
        Leaky steps before the loss is taken.
    n_tasks : int
        Tasks in the sample.
    restarts : int
        Grid points refined (>= 1).
    subsets : int
        Disjoint slices of the sample fitted on their own (0: none; at most ``n_tasks``).

    Returns
    -------
    dict
        ``beta``, ``sharpness`` (floats), ``loss`` (the sample's mean loss there), ``n_iter`` (L-BFGS iterations
        of the fit), ``restarts`` (each refined grid point's ``start`` and end: ``beta``, ``sharpness``,
        ``loss``) and ``subsets`` (each slice's fit: ``beta``, ``sharpness``, ``loss`` on its slice).
    """
    check_rng(rng)
    check_instance(config, "config", TrainConfig)
    n_unroll = check_int(n_unroll, "n_unroll", low=1)
    n_tasks = check_int(n_tasks, "n_tasks", low=1)
    restarts = check_int(restarts, "restarts", low=1, high=len(FIT_GRID) ** 2)
    subsets = check_int(subsets, "subsets", low=0, high=n_tasks)
    X, init = draw_tasks(rng, n_tasks, init="first", **config.task_kwargs())
    ends = _fit(X, init, n_unroll, config.tau, restarts)
    best = min(ends, key=lambda e: e["loss"])
    parts = [_fit(X[part], init[part], n_unroll, config.tau, 1)[0]
             for part in np.array_split(np.arange(n_tasks), subsets)] if subsets else []
    return dict(beta=best["beta"], sharpness=best["sharpness"], loss=best["loss"], n_iter=best["n_iter"],
                restarts=ends, subsets=[{key: p[key] for key in ("beta", "sharpness", "loss")} for p in parts])


def _fit(X, init, n_unroll, tau, restarts):
    """L-BFGS from each of the ``restarts`` grid points with the lowest mean loss, in order of that loss."""
    grid = np.log(FIT_GRID)
    points = [(a, b) for a in grid for b in grid]
    losses = [float(unrolled_loss(np.array(p), X, init, n_unroll, tau)) for p in points]
    order = sorted(range(len(points)), key=lambda i: (not np.isfinite(losses[i]), losses[i]))[:restarts]
    ends = []
    for i in order:
        end = _minimize(X, init, n_unroll, tau, np.array(points[i]))
        ends.append(dict(start=[float(np.exp(v)) for v in points[i]], **end))
    return ends


#: The box of ``log beta`` and ``log sharpness`` in which the loss is taken: ``exp(60)`` is about 1e26, far above
#: every fit (at most about 7e13) and far below where the step's arithmetic overflows (``exp(709)``).
LOG_LIMIT = 60.0


def _minimize(X, init, n_unroll, tau, log_start):
    """The fit of :func:`fit_leaky` on the sample ``(X, init)`` (trusted: inputs already checked).

    L-BFGS may try a step far out (on some CPUs' rounding a trial reached ``log beta`` past 709, where
    ``exp`` overflows and the centers became nan). Outside the box ``|log p| <= LOG_LIMIT`` the loss is
    taken at the nearest point of the box plus the squared distance to it, so every trial is finite and
    the search is sent back; inside, it is the loss itself (the same steps as with no box).
    """
    def value_and_grad(p):
        inside = np.clip(p, -LOG_LIMIT, LOG_LIMIT)
        value, grad = _value_and_grad(inside, X, init, n_unroll, tau)
        out = p - inside
        grad = np.where(out == 0, np.asarray(grad, dtype=float), 0.0) + 2.0 * out
        return float(value) + float(np.sum(out * out)), grad

    fit = scipy.optimize.minimize(value_and_grad, log_start, jac=True, method="L-BFGS-B",
                                  options=dict(gtol=1e-8, ftol=1e-14, maxiter=200))
    if not np.all(np.isfinite(fit.x)) or not np.isfinite(fit.fun):
        raise ValueError(f"the fit through n_unroll={n_unroll} steps diverged ({fit.message})")
    return dict(beta=float(np.exp(fit.x[0])), sharpness=float(np.exp(fit.x[1])), loss=float(fit.fun),
                n_iter=int(fit.nit))
