"""Time one training step of the learnable model, split into forward and backward."""

import time

import autograd
import numpy as np

from .. import attention
from .model import forward, init_params
from .tasks import sample_tasks
from .train import TrainConfig, batch_loss

__all__ = ["time_training_step"]


def time_training_step(n=512, d=32, k=10, batch=32, repeats=5, fused=True, seed=0):
    """Seconds per training step at the given size (best of ``repeats``).

    Parameters
    ----------
    n, d, k, batch : int
        Points, dimension, centers, tasks per step (the paper: 512, 32, 10, 32).
    repeats : int
        Timed repetitions; the minimum is reported (the least disturbed by
        other processes on a shared machine).
    fused : bool
        Use the hand-written VJP of Euclidean softmax attention (True) or
        autograd's differentiation of the generic attention path (False).

    Returns
    -------
    dict
        ``forward`` (loss only), ``step`` (loss and gradient), ``backward``
        (``step - forward``), all in seconds, plus the sizes and ``fused``.
    """
    config = TrainConfig(d=d, k=k, n=n, batch=batch)
    rng = np.random.default_rng(seed)
    theta = init_params(config.model, rng)
    X, init = sample_tasks(rng, batch, **config.task_kwargs())
    grad_fn = autograd.value_and_grad(batch_loss)
    saved = attention.FUSED_EUCLIDEAN_SOFTMAX
    attention.FUSED_EUCLIDEAN_SOFTMAX = fused
    try:
        fwd, step = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            batch_loss(theta, X, init, config)
            t1 = time.perf_counter()
            grad_fn(theta, X, init, config)
            t2 = time.perf_counter()
            fwd.append(t1 - t0)
            step.append(t2 - t1)
    finally:
        attention.FUSED_EUCLIDEAN_SOFTMAX = saved
    f, s = min(fwd), min(step)
    return dict(n=n, d=d, k=k, batch=batch, fused=fused, forward=f, step=s, backward=s - f)


def time_forward_only(n=512, d=32, k=10, batch=32, seed=0):
    """Seconds of one plain-NumPy forward pass (evaluation), for reference."""
    config = TrainConfig(d=d, k=k, n=n, batch=batch)
    rng = np.random.default_rng(seed)
    theta = init_params(config.model, rng)
    X, init = sample_tasks(rng, batch, **config.task_kwargs())
    t0 = time.perf_counter()
    forward(theta, X, init, config.model)
    return time.perf_counter() - t0
