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

from .._validation import check_instance, check_int, check_positive, check_rng
from ..tasks import draw_tasks
from ..variants.leaky import leaky_step
from .config import TrainConfig
from .loss import smoothed_objective

__all__ = ["unrolled_loss", "fit_leaky"]


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


def fit_leaky(rng, config, n_unroll, n_tasks=256, start=(4.0, 6.0)):
    """Fit ``(beta, sharpness)`` to the mean loss of ``n_tasks`` tasks drawn once from the training distribution.

    A local minimizer of that mean over ``log beta`` and ``log sharpness``, by
    L-BFGS (``scipy.optimize.minimize``) with autograd's gradient, from
    ``start``: the mean has several minima (other starts end elsewhere, at
    nearly the same loss), and this is the one reached from ``start``. A
    fixed sample rather than Adam on fresh batches: Adam's end point wanders
    with its batches, and through 20 steps it changed with the last bits of
    the arithmetic; this minimizer of a fixed sample's mean does not (tested:
    a change of the sample in the 15th digit moves it by less than 1e-3).

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
    start : (float, float)
        Initial ``(beta, sharpness)``.

    Returns
    -------
    dict
        ``beta``, ``sharpness`` (floats), ``loss`` (the sample's mean loss there) and ``n_iter`` (L-BFGS
        iterations).
    """
    check_rng(rng)
    check_instance(config, "config", TrainConfig)
    if np.ndim(start) != 1 or len(start) != 2:
        raise ValueError(f"start must be a pair (beta, sharpness); got start={start!r}")
    n_unroll = check_int(n_unroll, "n_unroll", low=1)
    n_tasks = check_int(n_tasks, "n_tasks", low=1)
    start = np.log([check_positive(start[0], "start[0]"), check_positive(start[1], "start[1]")])
    X, init = draw_tasks(rng, n_tasks, init="first", **config.task_kwargs())
    return _minimize(X, init, n_unroll, config.tau, start)


def _minimize(X, init, n_unroll, tau, log_start):
    """The fit of :func:`fit_leaky` on the sample ``(X, init)`` (trusted: inputs already checked)."""
    def value_and_grad(p):
        value, grad = _value_and_grad(p, X, init, n_unroll, tau)
        return float(value), np.asarray(grad, dtype=float)

    fit = scipy.optimize.minimize(value_and_grad, log_start, jac=True, method="L-BFGS-B",
                                  options=dict(gtol=1e-8, ftol=1e-14, maxiter=200))
    if not np.all(np.isfinite(fit.x)) or not np.isfinite(fit.fun):
        raise ValueError(f"the fit through n_unroll={n_unroll} steps diverged ({fit.message})")
    return dict(beta=float(np.exp(fit.x[0])), sharpness=float(np.exp(fit.x[1])), loss=float(fit.fun),
                n_iter=int(fit.nit))
