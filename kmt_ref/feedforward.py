"""A position-wise feed-forward sub-layer (the FFN of a transformer).

``FFN(z) = W2 act(W1 z + b1) + b2`` for every token ``z`` independently.
Weights act on column tokens, as everywhere in this package; code applies
them to row tokens as ``Z @ W1.T``. :func:`~kmt_ref.layer.transformer_layer`
adds the output to the center tokens (a residual), so ``__call__`` returns
the *update*, not the new token.

Activations (see :data:`ACTIVATIONS`):

``"relu"``    ``max(z, 0)``
``"relu2"``   ``max(z, 0)**2``, the rectified quadratic of Theorem 2.2.
"""

from dataclasses import dataclass
from types import MappingProxyType

import autograd.numpy as anp
import numpy as np

from ._validation import check_choice, check_finite

__all__ = ["ACTIVATIONS", "FeedForward"]


def _relu(z):
    return anp.maximum(z, 0.0)


def _relu2(z):
    r = anp.maximum(z, 0.0)
    return r * r


#: Activation functions by name.
ACTIVATIONS = {"relu": _relu, "relu2": _relu2}


@dataclass(frozen=True)
class FeedForward:
    """One hidden layer, applied to every token.

    Attributes
    ----------
    W1 : ndarray, shape (h, D)
        Input layer: token (D) -> hidden pre-activations (h).
    b1 : ndarray, shape (h,)
    W2 : ndarray, shape (D, h)
        Output layer: hidden units (h) -> residual update (D).
    b2 : ndarray, shape (D,)
    activation : str
        A key of :data:`ACTIVATIONS`.
    """

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    activation: str = "relu2"

    def __post_init__(self):
        check_choice(self.activation, "activation", ACTIVATIONS)
        h, D = np.shape(self.W1)
        expected = {"b1": (h,), "W2": (D, h), "b2": (D,)}
        for name, shape in expected.items():
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(
                    f"{name} must have shape {shape} for W1.shape={(h, D)}; "
                    f"got {name}.shape={np.shape(getattr(self, name))}"
                )
        for name in ("W1", "b1", "W2", "b2"):
            W = getattr(self, name)
            if isinstance(W, np.ndarray):
                check_finite(W, name)  # nan tokens, silently, otherwise

    @property
    def weights(self):
        """``{"W1", "b1", "W2", "b2"}``: read-only views of the parameters."""
        out = {}
        for name in ("W1", "b1", "W2", "b2"):
            W = np.asarray(getattr(self, name)).view()
            W.flags.writeable = False
            out[name] = W
        return MappingProxyType(out)

    def hidden(self, Z):
        """Hidden activations ``act(Z @ W1.T + b1)``, shape (..., m, h)."""
        return ACTIVATIONS[self.activation](anp.matmul(Z, anp.swapaxes(self.W1, -1, -2)) + self.b1)

    def __call__(self, Z):
        """The residual update of tokens ``Z`` (..., m, D), shape (..., m, D)."""
        return anp.matmul(self.hidden(Z), anp.swapaxes(self.W2, -1, -2)) + self.b2
