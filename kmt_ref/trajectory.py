"""The result type shared by every clustering algorithm and transformer."""

from dataclasses import dataclass

import numpy as np

from .geometry import kmeans_objective

__all__ = ["Trajectory"]


@dataclass(frozen=True)
class Trajectory:
    """The iterates of a clustering algorithm (classical or transformer).

    Attributes
    ----------
    centers : ndarray, shape (n_iter + 1, k, d)
        ``centers[0]`` is the initial centers; ``centers[t]`` the centers after
        ``t`` iterations (or layers).
    labels : ndarray of int, shape (n_iter, n)
        ``labels[t]`` is the assignment made against ``centers[t]`` (the one
        that produced ``centers[t + 1]``). Ties go to the lowest index.
    assignments : ndarray, shape (n_iter, n, k), optional
        For transformers: the raw assignment block ``Y`` of the point tokens
        after each layer (one-hot rows when the layer is exact; fractional at
        ties or at finite ``gamma``). For soft k-means: the responsibilities.
        ``None`` for the other classical algorithms.

    :func:`~kmt_ref.lloyd` and :meth:`KMeansTransformer.run
    <kmt_ref.layer.KMeansTransformer.run>` on a batch of tasks give the same
    with a task axis after the iteration axis: ``centers`` (n_iter + 1, B, k, d),
    ``labels`` (n_iter, B, n); :meth:`objectives` is then (n_iter + 1, B).
    """

    centers: np.ndarray
    labels: np.ndarray
    assignments: np.ndarray | None = None

    @property
    def n_iter(self):
        """Number of iterations (layers) recorded."""
        return self.centers.shape[0] - 1

    def split_fraction(self, tol=1e-3):
        """Fraction of points whose assignment after each layer is not one-hot to ``tol``.

        A finite-``gamma`` construction that follows Lloyd's algorithm keeps
        this near 0 (only points near a boundary split); a large value says
        that ``gamma`` is too small for the data's scale. Shape
        ``(n_iter,)``; ``None`` without an assignment block.
        """
        if self.assignments is None:
            return None
        return np.mean(1.0 - self.assignments.max(axis=-1) > tol, axis=-1)

    def objectives(self, X):
        """k-means objective of every iterate, shape ``(n_iter + 1,)`` (``(n_iter + 1, B)`` for a batch)."""
        return np.array([kmeans_objective(X, C) for C in self.centers])

    def log_objectives(self, X):
        """Natural log of :meth:`objectives`, shape ``(n_iter + 1,)``."""
        return np.log(self.objectives(X))
