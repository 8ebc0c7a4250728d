"""What a run of a :class:`~kmt_ref.layer.KMeansTransformer` may have missed, said as a ``UserWarning``.

A construction equals its classical algorithm under assumptions (no exact tie, points its self-attention
can tell apart, at finite ``gamma`` a large enough ``gamma``). These checks read what the run already holds
and warn, once, where an assumption fails: the last step of :meth:`~kmt_ref.layer.KMeansTransformer.run`.
Every warning names the model, the layer, the task of a batch and the point, and ends with what it means
for the result.

``run(warn=...)`` chooses the checks. Every run checks, before the first layer, the two closest distinct
points against the model's ``resolution`` (:func:`resolution_warning`). ``"ties"`` (the default) adds the
check that costs nothing beside the layer: with a hardmax CAX, a point whose largest assignment weight is
shared after some layer (its scores tied, so the hardmax shares it where the classical algorithm gives it
to the lowest index), named at the first such layer. ``True`` adds the checks that cost about a layer each:
the model's ``assumption`` before every layer (:func:`assumption_warning`: exact ties and, for Theorem 2.2,
near ties within its rounding; at finite ``gamma``, the softmax blocks' leaks and one layer's distance from
Lloyd's step); with a hardmax CAX, after the run, a label that is not the nearest of the centers the run
returns (a point within rounding of a tie: the run computes in coordinates shifted by the data's median and
rounds its centers when it shifts them back); and after the last layer more than :data:`SPLIT_SHARE` of the
points of some task with split assignments (at finite ``gamma``, too small a ``gamma`` for the data's scale;
:func:`kmt_ref.min_gamma` says how large it must be). ``False``: only the resolution check.
"""

import warnings

import numpy as np

from .geometry import closest_distinct_pair
from .readout import _first_not_nearest
from .trajectory import Trajectory

__all__ = []  # helpers of KMeansTransformer.run, not an interface of their own

#: Where a warning points: the caller of ``run`` (run -> say_what_was_missed -> the warning's helper).
_CALLER = 4
#: Share of a task's points with split assignments after the last layer above which a run warns.
SPLIT_SHARE = 0.1
_PARTS = "the transformer need not equal its classical algorithm from there on"


def resolution_warning(model, X, origin=0.0, stacklevel=3):
    """Warn when two distinct points of a task (``X`` as the run measures it, from ``origin``) are closer than
    ``model.resolution`` says its point self-attention can tell apart (no resolution: nothing to check)."""
    if model.resolution is None:
        return
    origin = np.broadcast_to(0.0 if origin is None else origin, X.shape[:-2] + (1, X.shape[-1]))
    tasks = [("", X, origin)] if X.ndim == 2 else [(f" of task {b}", X[b], origin[b]) for b in range(len(X))]
    for where, Xb, ob in tasks:
        pair, limit = closest_distinct_pair(Xb), model.resolution(Xb)
        if pair is not None and pair[2] < limit:
            i, l, sq = pair
            warnings.warn(f"{model.name}: the points {i} and {l}{where} ({(Xb[i] + ob[0]).tolist()} and "
                          f"{(Xb[l] + ob[0]).tolist()}) are distinct, but their squared distance {sq:.3g} is below "
                          f"{limit:.3g}, what the point self-attention (SAX) can resolve: where they are assigned to "
                          "different centers it resets each with the other's assignment, and the run need not equal "
                          "its classical algorithm", stacklevel=stacklevel)
            return


def assumption_warning(model, X, centers, first=0, stacklevel=3):
    """Warn at the first layer whose input centers (``centers[t]`` the input of layer ``first + t + 1``, in
    ``X``'s coordinates) break ``model.assumption``; whether it warned."""
    tasks = [((), X, centers)] if X.ndim == 2 else [((b,), X[b], centers[:, b]) for b in range(X.shape[0])]
    for t in range(centers.shape[0]):
        for task, Xb, Cb in tasks:
            message = model.assumption(Xb, Cb[t])
            if message is not None:
                where = f" in task {task[0]}" if task else ""
                warnings.warn(f"{model.name}: before layer {first + t + 1}{where}, {message}; {_PARTS}",
                              stacklevel=stacklevel)
                return True
    return False


def say_what_was_missed(model, X, origin, traj, moved, last, tie, told, checks):
    """The warnings after a run, the first that applies: the assumption at a later layer, a point a hardmax
    shared between tied centers, a label that is not the nearest of the returned centers; then, with
    ``checks.all``, split assignments after the last layer.

    ``X`` and ``moved`` are in the run's shifted coordinates (``X + origin`` is the data, exactly; ``origin``
    None: no shift), ``traj`` in the data's; ``told``: a warning was given before the run.
    """
    batch = X.ndim == 3
    if checks.all and model.assumption is not None and not told:
        told = assumption_warning(model, X, moved.centers[1:-1], first=1, stacklevel=_CALLER)
    if tie is not None and not told:
        t, task, i, count, shared = tie
        where = f" in task {task}" if batch else ""
        warnings.warn(f"{model.name}: layer {t + 1}{where} shares point {i} between centers "
                      f"{', '.join(map(str, shared))} (their scores tie; {count} point{'s' if count > 1 else ''} "
                      f"shared at that layer), where the classical algorithm gives it to center {shared[0]}; "
                      f"{_PARTS}", stacklevel=_CALLER - 1)
        told = True
    if checks.all and checks.ties and not told and origin is not None and np.any(origin != 0):
        # A hardmax run computes in shifted coordinates and rounds its centers when it shifts them back: a
        # point nearly as near two centers may then be nearer another returned center than its own.
        parted = _first_not_nearest(X + origin, traj.centers, traj.labels)  # X + origin: exact, as the shift
        if parted is not None:
            t, task, i, label, nearest = parted
            where = f" in task {task}" if batch else ""
            warnings.warn(f"{model.name}: layer {t + 1}{where} gives point {i} to center {label}, but center "
                          f"{nearest} of the centers the run returns is nearer (the run computes in coordinates "
                          "shifted by the data's median and rounds its centers when it shifts them back): the "
                          f"point is within rounding of a tie; {_PARTS}", stacklevel=_CALLER - 1)
    if checks.all and last is not None:
        split = Trajectory(traj.centers[-2:], traj.labels[-1:], last[None]).split_fraction()
        if np.max(split[-1]) > SPLIT_SHARE:
            warnings.warn(
                f"{model.name}: {np.max(split[-1]):.0%} of the points have split assignments after the last "
                "layer; if gamma is finite it is too small for the scale of X (see kmt_ref.min_gamma)",
                stacklevel=_CALLER - 1,
            )
