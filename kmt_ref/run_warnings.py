"""What a run of a :class:`~kmt_ref.layer.KMeansTransformer` may have missed, said as a ``UserWarning``.

A construction equals its classical algorithm under assumptions (no exact tie, points its self-attention
can tell apart, at finite ``gamma`` a large enough ``gamma``). These checks read what the run already holds
and warn, once, where an assumption fails: the last step of :meth:`~kmt_ref.layer.KMeansTransformer.run`.
Every warning names the model, the layer, the task of a batch and the point, and ends with what it means
for the result.

``run(warn=...)`` chooses the checks. Every run checks, before the first layer, the two closest distinct
points against the model's ``resolution`` (``resolution_warning``). ``"ties"`` (the default) adds the
check that costs nothing beside the layer: with a hardmax CAX, a point whose largest assignment weight is
shared after some layer (its scores tied, so the hardmax shares it where the classical algorithm gives it
to the lowest index), named at the first such layer; for a construction of Lloyd's algorithm
(``follows_lloyd``) at ``gamma = inf`` also a label exact arithmetic gives elsewhere (Theorem 2.2's scores
round) and a point within what the rounding of the means can move of a tie (Lloyd's algorithm averages in
the data's coordinates, the run in its frame: ``lloyd_rounding_warning``, one product per layer), and at
finite ``gamma`` split assignments after the last layer (``split_warning``). ``True`` adds the checks
that cost about a layer each:
the model's ``assumption`` before every layer (``assumption_warning``: exact ties and, for Theorem 2.2,
near ties within its rounding; at finite ``gamma``, the softmax blocks' leaks and one layer's distance from
Lloyd's step); with a hardmax CAX, after the run, a label that is not the nearest of the centers the run
returns (a point within rounding of a tie: the run computes in coordinates shifted by the data's median and
rounds its centers when it shifts them back); and after the last layer more than ``SPLIT_SHARE`` of the
points of some task with split assignments (at finite ``gamma``, too small a ``gamma`` for the data's scale;
:func:`kmt_ref.min_gamma` says how large it must be). ``False``: only the resolution check.
"""

import warnings

import numpy as np

from .geometry import _score_bound, closest_distinct_pair
from .readout import _first_not_nearest

__all__ = []  # helpers of KMeansTransformer.run, not an interface of their own

#: Where a warning points: the caller of ``run`` (run -> say_what_was_missed -> the warning's helper).
_CALLER = 4
#: Share of a task's points with split assignments after the last layer above which a run warns.
SPLIT_SHARE = 0.1
#: An assignment is split when its largest weight is below ``1 - SPLIT_TOL`` (as ``Trajectory.split_fraction``).
SPLIT_TOL = 1e-3
_PARTS = "the transformer need not equal its classical algorithm from there on"


def resolution_warning(model, X, origin=0.0, stacklevel=3):
    """Warn when two distinct points of a task (``X`` as the run measures it, from ``origin``) are closer than
    ``model.resolution`` says its point self-attention can tell apart (no resolution: nothing to check)."""
    if model.resolution is None:
        return
    origin = np.broadcast_to(0.0 if origin is None else origin, X.shape[:-2] + (1, X.shape[-1]))
    tasks = [("", X, origin)] if X.ndim == 2 else [(f" of task {b}", X[b], origin[b]) for b in range(len(X))]
    for where, Xb, ob in tasks:
        pair, returned = closest_distinct_pair(Xb), model.resolution(Xb)
        try:  # a nan would compare False and switch the check off without a word
            limit = float(returned)
        except (TypeError, ValueError):
            limit = np.nan
        if not limit >= 0:
            raise ValueError(f"{model.name}: its resolution(X) must return a number >= 0 (a squared distance); "
                             f"got {returned!r}{where}")
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
    shared between tied centers, a label that is not the nearest of the returned centers, a Lloyd
    construction's label or near tie that rounding decides; then, with ``checks.split``, split assignments
    after the last layer.

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
            _parted_warning(model, parted, batch, "but center {nearest} of the centers the run returns is nearer "
                            "(the run computes in coordinates shifted by the data's median and rounds its centers "
                            "when it shifts them back): the point is within rounding of a tie", _CALLER)
            told = True
    if checks.ties and model.follows_lloyd and not told:
        lloyd_rounding_warning(model, X, origin, moved)
    if checks.split and last is not None:
        split_warning(model, last)


def split_warning(model, last):
    """Warn when more than ``SPLIT_SHARE`` of the points of a task have split assignments after the last
    layer (``last`` (..., n, k), its assignment block)."""
    split = 1.0 - np.max(last, axis=-1) > SPLIT_TOL  # (..., n)
    share = np.mean(split, axis=-1)
    task = int(np.argmax(share)) if share.ndim else None
    worst = float(np.max(share))
    if worst <= SPLIT_SHARE:
        return
    row = split[task] if task is not None else split
    i = int(np.argmax(row))
    weight = float(np.max((last[task] if task is not None else last)[i]))
    where = "" if task is None else f" of task {task}"
    gamma = model.blocks["CAX"].gamma
    if model.blocks["CAX"].normalizer == "hardmax":
        meaning = "at gamma = inf only exact ties split a point, which the classical algorithm gives to one center"
    elif model.follows_lloyd:
        meaning = (f"gamma = {gamma:g} is too small for the scale of X, and the run is far from Lloyd's algorithm "
                   "(kmt_ref.min_gamma says how large gamma must be)")
    else:
        meaning = "if gamma is finite it is too small for the scale of X (see kmt_ref.min_gamma)"
    warnings.warn(f"{model.name}: after the last layer, {worst:.0%} of the points{where} have split assignments "
                  f"(the first: point {i}, {weight:.3g} to its center); {meaning}", stacklevel=_CALLER)


def lloyd_rounding_warning(model, X, origin, moved):
    """Warn where a hardmax run of a Lloyd construction (``moved``, in the run's frame: ``X + origin`` is the
    data) may part from :func:`~kmt_ref.lloyd` although no point was shared; whether it warned.

    Two causes, each found at its first layer. A label that exact arithmetic gives to another center: the
    layer's scores round (Theorem 2.2's dot products, its ``||c||^2`` written as a float), so a point within
    their rounding of a tie, or at an exact tie whose scores rounded apart, goes either way. And a point that
    the means' rounding can move across a tie: Lloyd's algorithm averages in the data's coordinates, the run
    in its frame or in another order, so their centers after a layer differ by up to a few ulps of the data's
    distance from the origin, and a point that near a tie of the run's centers may go elsewhere in Lloyd's.
    """
    batch = X.ndim == 3
    parted = _first_not_nearest(X, moved.centers, moved.labels)  # in the frame: the run's own centers
    if parted is not None:
        _parted_warning(model, parted, batch, "where exact arithmetic, as Lloyd's algorithm, gives it to center "
                        "{nearest} (nearer, or as near with a lower index): the layer's scores round, and the point "
                        "is within their rounding of a tie", _CALLER + 1)
        return True
    near = _first_within_mean_rounding(X, origin, moved)
    if near is None:
        return False
    t, task, i, j, l, margin, band, R = near
    where = f" in task {task}" if batch else ""
    warnings.warn(f"{model.name}: before layer {t + 1}{where}, point {i}'s squared distances to centers {j} and {l} "
                  f"differ by {margin:.3g}, within {band:.3g}, what the rounding of the centers' means can move "
                  f"(Lloyd's algorithm averages the points as given, up to {R:.3g} from the origin, the run "
                  "averages them in its own frame and order): Lloyd's algorithm may give the point to the other "
                  f"center; {_PARTS}", stacklevel=_CALLER)
    return True


def _first_within_mean_rounding(X, origin, moved):
    """The first ``(layer, task, point, nearest, second, margin, band, R)`` where a point's squared distances
    to its two nearest centers (the run's, in its frame) differ by no more than the means' rounding can move
    them, or None. ``R``: the task's largest coordinate as given, the scale at which Lloyd's means round.

    A mean of ``m`` points rounds by at most about ``(m + 2) eps sqrt(d) R`` in each center, the run's in its
    frame (``R'``) as Lloyd's as given, so the two centers differ by ``delta = (m + 2) eps sqrt(d) (R + R')``
    (``m = n`` for the global mean of an empty cluster), which moves a squared distance ``D`` by up to
    ``2 delta sqrt(D) + delta^2``. The first layer reads the initial centers, the same for both: nothing to
    compare there. Scores ``|c|^2 - 2 x.c`` (one product per layer) find the candidates within their own
    rounding of that band; only those are measured directly.
    """
    L, k = moved.labels.shape[0], moved.centers.shape[-2]
    if L < 2 or k < 2:
        return None
    Xb = X if X.ndim == 3 else X[None]
    B, n, d = Xb.shape
    eps = np.finfo(float).eps
    R = np.max(np.abs(Xb if origin is None else Xb + (origin if X.ndim == 3 else origin[None])), axis=(1, 2))
    scale = np.sqrt(d) * eps * (R + np.max(np.abs(Xb), axis=(1, 2)))  # (B,)
    sq = np.einsum("bij,bij->bi", Xb, Xb)
    norms = np.sqrt(sq)
    offsets = (np.arange(B) * k)[:, None]
    for t in range(1, L):
        C = moved.centers[t] if X.ndim == 3 else moved.centers[t][None]
        counts = np.bincount((moved.labels[t - 1].reshape(B, n) + offsets).ravel(), minlength=B * k).reshape(B, k)
        delta = ((np.max(np.where(counts == 0, n, counts), axis=1) + 2) * scale)[:, None]  # (B, 1)
        with np.errstate(over="ignore", invalid="ignore"):  # a task that diverged: nan, never near
            c2 = np.einsum("bjl,bjl->bj", C, C)
            S = c2[:, :, None] - 2.0 * np.matmul(C, np.swapaxes(Xb, -1, -2))  # (B, k, n): one center per row
            least = np.min(S, axis=-2)
            rounding = _score_bound(d, np.sqrt(np.max(c2, axis=1))[:, None], norms)
            D = np.maximum(least + sq, 0.0) + rounding  # at least the nearest squared distance
            # the band with the second distance taken as the first, and a quarter to spare for that
            reach = 1.25 * (4 * delta * np.sqrt(D) + 8 * delta**2 + 4 * (d + 2) * eps * D) + 2 * rounding
            candidates = np.argwhere(np.count_nonzero(S <= (least + reach)[:, None, :], axis=-2) > 1)
        for b, i in candidates:  # in order of task, then point: the first that is near is the one to name
            direct = np.sum((Xb[b, i] - C[b]) ** 2, axis=-1)
            j, l = (int(c) for c in np.argsort(direct, kind="stable")[:2])
            exact_band = (2 * delta[b, 0] * (np.sqrt(direct[j]) + np.sqrt(direct[l])) + 2 * delta[b, 0] ** 2
                          + 2 * (d + 2) * eps * (direct[j] + direct[l]))
            if direct[l] - direct[j] <= exact_band:
                return (t, int(b) if X.ndim == 3 else None, int(i), j, l, float(direct[l] - direct[j]),
                        float(exact_band), float(R[b]))
    return None


def _parted_warning(model, parted, batch, cause, stacklevel):
    """Warn that layer ``t + 1`` gives a point to a center other than the nearest: ``parted`` is
    ``(t, task, point, label, nearest)``, ``cause`` says why (``{nearest}`` stands for that center)."""
    t, task, i, label, nearest = parted
    where = f" in task {task}" if batch else ""
    warnings.warn(f"{model.name}: layer {t + 1}{where} gives point {i} to center {label}, "
                  f"{cause.format(nearest=nearest)}; {_PARTS}", stacklevel=stacklevel)
