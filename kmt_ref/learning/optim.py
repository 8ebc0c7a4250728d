"""Adam and learning-rate halving on a plateau, as plain state-passing functions.

Both follow PyTorch's defaults, which the authors used: ``torch.optim.Adam``
(betas 0.9, 0.999, eps 1e-8, bias correction, no weight decay) and
``ReduceLROnPlateau`` (mode "min", relative threshold 1e-4, no cooldown):
the metric improves when it falls below ``best * (1 - 1e-4)``; after more
than ``patience`` evaluations without improvement the learning rate is
multiplied by ``factor`` and the count restarts.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["AdamState", "adam_step", "PlateauState", "plateau_step"]

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
THRESHOLD = 1e-4


@dataclass
class AdamState:
    """First and second moment estimates and the step count."""

    m: np.ndarray
    v: np.ndarray
    t: int = 0

    @classmethod
    def zeros(cls, size):
        """The state before the first step: zero moments of length ``size``, step count 0."""
        return cls(np.zeros(size), np.zeros(size), 0)


def adam_step(theta, grad, state, lr):
    """One Adam update: ``(new theta, new AdamState)``; ``state`` is left as it was."""
    t = state.t + 1
    m = BETA1 * state.m + (1 - BETA1) * grad
    v = BETA2 * state.v + (1 - BETA2) * grad * grad
    m_hat = m / (1 - BETA1**t)
    v_hat = v / (1 - BETA2**t)
    return theta - lr * m_hat / (np.sqrt(v_hat) + EPS), AdamState(m, v, t)


@dataclass
class PlateauState:
    """Best metric so far and the number of evaluations without improvement."""

    best: float = np.inf
    bad: int = 0


def plateau_step(metric, state, lr, patience, factor):
    """Record one validation ``metric``: ``(learning rate, possibly reduced; new PlateauState)``.

    ``state`` is left as it was.
    """
    best, bad = (float(metric), 0) if metric < state.best * (1 - THRESHOLD) else (state.best, state.bad + 1)
    if bad > patience:
        return lr * factor, PlateauState(best, 0)
    return lr, PlateauState(best, bad)
