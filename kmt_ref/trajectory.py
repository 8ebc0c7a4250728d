"""The result type shared by every clustering algorithm and transformer, and the loop that builds it.

Every algorithm here is a *step*, one iteration from the current centers;
:func:`iterate` applies it ``n_iter`` times and records the iterates, for one
task ``(n, d)`` and a batch ``(B, n, d)`` alike.
"""

from dataclasses import dataclass

import numpy as np

from ._validation import check_callable, check_finite, check_n_steps
from .objective import iterate_objectives

__all__ = ["Trajectory", "iterate"]


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

    Notes
    -----
    :func:`~kmt_ref.lloyd` and :meth:`KMeansTransformer.run
    <kmt_ref.layer.KMeansTransformer.run>` on a batch of tasks give the same
    with a task axis after the iteration axis: ``centers`` (n_iter + 1, B, k, d),
    ``labels`` (n_iter, B, n); :meth:`objectives` is then (n_iter + 1, B).
    """

    centers: np.ndarray
    labels: np.ndarray
    assignments: np.ndarray | None = None

    def __post_init__(self):
        T = np.shape(self.labels)[0] if np.ndim(self.labels) else -1
        if np.ndim(self.centers) < 3 or np.shape(self.centers)[0] != T + 1 or (
                self.assignments is not None and np.shape(self.assignments)[:1] != (T,)):
            raise ValueError("a Trajectory holds n_iter + 1 centers and n_iter labels (and assignments); got "
                             f"centers.shape={np.shape(self.centers)}, labels.shape={np.shape(self.labels)}, "
                             f"assignments.shape={None if self.assignments is None else np.shape(self.assignments)}")

    @property
    def n_iter(self):
        """Number of iterations (layers) recorded."""
        return self.centers.shape[0] - 1

    def __repr__(self):
        """A summary: the shapes and the last centers when they are few, never the whole arrays."""
        shapes = ", ".join(f"{name}={'None' if a is None else 'array' + str(a.shape)}"
                           for name, a in (("centers", self.centers), ("labels", self.labels),
                                           ("assignments", self.assignments)))
        last = ""
        if self.centers[-1].size <= 12:
            last = ", last centers " + np.array2string(self.centers[-1], precision=4, separator=", ").replace("\n", "")
        return f"Trajectory(n_iter={self.n_iter}, {shapes}{last})"

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
        return iterate_objectives(X, self.centers)

    def log_objectives(self, X):
        """Natural log of :meth:`objectives`, shape ``(n_iter + 1,)``."""
        return np.log(self.objectives(X))


def iterate(step, X, C, n_iter, keep_assignments=False):
    """The :class:`Trajectory` of ``n_iter`` applications of one iteration ``step``.

    Parameters
    ----------
    step : callable
        ``step(C, t) -> (new_C, labels)`` or ``(new_C, labels, assignments)``:
        iteration ``t`` from centers ``C`` (..., k, d), giving the next
        centers, the labels (..., n) it assigned against ``C`` and, when
        ``keep_assignments``, the assignment weights (..., n, k).
    X : ndarray, shape (n, d) or (B, n, d)
        The points (only their shape is read).
    C : ndarray, shape (k, d) or (B, k, d)
        The initial centers, ``centers[0]``.
    n_iter : int
    keep_assignments : bool
        Record the third output of ``step``.

    Returns
    -------
    Trajectory
    """
    check_callable(step, "step")
    n_iter = check_n_steps(n_iter, "n_iter")
    check_finite(C, "the initial centers C")
    centers = np.empty((n_iter + 1,) + C.shape)
    labels = np.empty((n_iter,) + X.shape[:-1], dtype=np.intp)
    assignments = np.empty((n_iter,) + X.shape[:-1] + C.shape[-2:-1]) if keep_assignments else None
    centers[0] = C
    for t in range(n_iter):
        current = centers[t]
        current.flags.writeable = False  # a view of the record: a step may not move a recorded iterate
        new, lab, *extra = step(current, t)
        centers[t + 1] = _returned(new, C.shape, "centers", t)
        labels[t] = _returned(lab, labels.shape[1:], "labels", t, integer=True)
        if labels[t].size and not 0 <= labels[t].min() <= labels[t].max() < C.shape[-2]:
            raise ValueError(f"step must return labels in [0, {C.shape[-2]}) (indices of the k centers); got "
                             f"labels from {labels[t].min()} to {labels[t].max()} at iteration {t}")
        if keep_assignments:
            assignments[t] = _returned(extra[0] if extra else None, assignments.shape[1:], "assignments", t)
    return Trajectory(centers=centers, labels=labels, assignments=assignments)


def _returned(value, shape, what, t, integer=False):
    """What a step returned, checked: the shape the trajectory records, real numbers (integers for labels)."""
    arr = np.asarray(value)
    kinds = "iu" if integer else "iuf"
    if arr.shape != shape or arr.dtype.kind not in kinds:
        raise ValueError(f"step must return {what} of shape {shape} and {'integer' if integer else 'real'} dtype; "
                         f"got {what} of shape {arr.shape} and dtype {arr.dtype} at iteration {t}")
    return arr
