"""Fitting the closed form's two scalars by autograd on the training distribution.

The closed form is leaky soft k-means (:mod:`kmt_ref.variants.leaky`): the
responsibilities at stiffness ``beta``, and each center the softmax over all
the points of ``sharpness`` times its responsibilities. Its two scalars are fitted
the way the layer's weights were trained: Adam on the mean smoothed
objective (:func:`~kmt_ref.learning.loss.smoothed_objective`) of fresh
batches of tasks, taken after ``n_unroll`` steps (the layer: one).
Parameters are ``log beta`` and ``log sharpness``, so both stay positive.
"""

import autograd
import autograd.numpy as anp
import numpy as np

from .._validation import check_instance, check_int, check_positive, check_rng
from ..tasks import draw_tasks
from ..variants.leaky import leaky_step
from .loss import smoothed_objective
from .optim import AdamState, adam_step
from .train import TrainConfig

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


def fit_leaky(rng, config, n_unroll, n_fit=200, batch=32, lr=0.05, start=(4.0, 6.0)):
    """Fit ``(beta, sharpness)`` on fresh batches of the training distribution of ``config``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws every batch.
    config : TrainConfig
        The task distribution (``n``, ``d``, ``k``, family, ...) and the loss temperature ``tau``.
    n_unroll : int
        Leaky steps before the loss is taken.
    n_fit : int
        Adam steps.
    batch : int
        Tasks per step.
    lr : float
        Adam's rate on the log-parameters.
    start : (float, float)
        Initial ``(beta, sharpness)``.

    Returns
    -------
    dict
        ``beta``, ``sharpness`` (floats) and ``loss`` (the loss of every step, a list).
    """
    check_rng(rng)
    check_instance(config, "config", TrainConfig)
    if np.ndim(start) != 1 or len(start) != 2:
        raise ValueError(f"start must be a pair (beta, sharpness); got start={start!r}")
    n_unroll = check_int(n_unroll, "n_unroll", low=1)
    n_fit = check_int(n_fit, "n_fit", low=1)
    batch = check_int(batch, "batch", low=1)
    lr = check_positive(lr, "lr")
    p = np.log([check_positive(start[0], "start[0]"), check_positive(start[1], "start[1]")])
    state, losses = AdamState.zeros(2), []
    kw = config.task_kwargs()
    for _ in range(n_fit):
        X, init = draw_tasks(rng, batch, init="first", **kw)
        value, grad = _value_and_grad(p, X, init, n_unroll, config.tau)
        p, state = adam_step(p, grad, state, lr)
        losses.append(float(value))
    return dict(beta=float(np.exp(p[0])), sharpness=float(np.exp(p[1])), loss=losses)
