"""Attention normalizers beyond softmax: the hardmax, and the sparse and random ones (sparsemax, entmax-1.5,
normmax, Gumbel).

The hardmax is the ``gamma -> inf`` limit of softmax: uniform weight on the arg-max set. With the Euclidean
score that set is the set of nearest keys as exact arithmetic decides (:func:`euclidean_hardmax_average`);
with the dot score, the arg-max set of :func:`~kmt_ref.products.fixed_order_scores`.

Each function maps scores of shape (..., r) to weights of the same shape whose
rows (last axis) lie on the probability simplex. All are exact: the sparse
ones solve their defining convex problem in closed form after one sort of each
row, so the result is correct to rounding, not to an iteration tolerance.
They are registered in :data:`kmt_ref.attention.NORMALIZERS` (the one
registry) under the names ``"sparsemax"``, ``"entmax15"``, ``"normmax2"``,
``"normmax_inf"``, ``"gumbel_max"`` and ``"gumbel_softmax"``.

Definitions (``z`` one row of scores, ``Δ`` the simplex)::

    sparsemax(z)      = argmin_{p in Δ} ||p - z||_2^2            (Martins & Astudillo 2016)
    entmax15(z)       = argmax_{p in Δ} <p, z> + (4/3) sum_i (p_i - p_i^(3/2))
                                                                   (Peters, Niculae & Martins 2019)
    normmax(z; t, q)  = argmax_{p in Δ} <p, z> - t ||p||_q       (Santos et al. 2024), q in {2, inf}
                        (t is the argument threshold)
    gumbel_max(z)     = hardmax(z + g),        g_i ~ Gumbel(0, 1) i.i.d.
    gumbel_softmax(z) = softmax((z + g) / temperature)

Closed forms, with ``z_(1) >= z_(2) >= ...`` the sorted row and
``S_s = z_(1) + ... + z_(s)``:

* sparsemax: ``p = [z - tau]_+`` with ``tau = (S_s - 1) / s`` for the largest
  ``s`` such that ``1 + s z_(s) > S_s``.
* entmax-1.5: ``p = [z/2 - tau]_+^2``; on a support of the top ``s`` entries
  of ``w = z/2``, ``sum (w_i - tau)^2 = 1`` is a quadratic whose smaller root is
  ``tau_s = m_s - sqrt((1 - V_s) / s)`` (``m_s`` the mean of the top ``s``,
  ``V_s`` the sum of their squared deviations from it), and the support size is
  the number of ``s`` with ``tau_s <= w_(s)`` (the condition holds for a
  prefix).
* normmax, 2-norm: ``p = [z - mu]_+ / sum [z - mu]_+`` with ``mu`` solving
  ``||[z - mu]_+||_2 = t``. On the support of the top ``s`` entries that is a
  quadratic, ``s mu^2 - 2 S_s mu + (sum of squares) - t^2 = 0`` (smaller root);
  the support is the largest ``s`` with ``sum_{i<=s} (z_(i) - z_(s))^2 < t^2``.
  (KKT: on the support ``z_i - t p_i / ||p|| = lambda``.)
* normmax, inf-norm: a linear programme whose vertices are the uniform
  distributions on top-``s`` sets, with value ``(S_s - t) / s``. That value is
  unimodal in ``s`` and the largest maximizer is the largest ``s`` with
  ``sum_{i<=s} (z_(i) - z_(s)) <= t``: uniform weight ``1/s`` on the top ``s``.
  Taking the largest maximizer means tied scores always get equal weight.
* Gumbel-max samples index ``i`` with probability ``softmax(z)_i`` (the
  Gumbel-max trick); Gumbel-softmax tends to it as ``temperature -> 0`` and to
  the uniform distribution as ``temperature -> inf``.
"""


import numpy as np

from ._validation import check_finite, check_positive, check_rng
from .geometry import exact_nearest

__all__ = ["hardmax", "hardmax_average", "euclidean_hardmax_average", "mean_over", "mean_of_rows", "sparsemax",
           "entmax15", "normmax2", "normmax_inf", "gumbel_max", "gumbel_softmax"]


def _sorted_desc(z):
    """Row-wise descending sort, cumulative sums and 1-based positions.

    The row maximum is subtracted first (every normalizer here is invariant to
    a shift of the row), so the sums below involve only gaps between scores.
    Non-finite scores have no gaps (a nan or inf would give a row of nan): refused.
    """
    check_finite(z, "scores")
    z = z - np.max(z, axis=-1, keepdims=True)
    zs = -np.sort(-z, axis=-1)
    return z, zs, np.cumsum(zs, axis=-1), np.arange(1, z.shape[-1] + 1)


def _take(a, s):
    """``a[..., s - 1]`` for a per-row support size ``s`` of shape (...)."""
    return np.take_along_axis(a, (s - 1)[..., None], axis=-1)


def sparsemax(scores):
    """Euclidean projection of each row onto the simplex.

    Parameters
    ----------
    scores : ndarray, shape (..., r)

    Returns
    -------
    ndarray, shape (..., r)
        ``[z - tau]_+``; exactly zero outside the support.
    """
    z, zs, cs, pos = _sorted_desc(np.asarray(scores, dtype=float))
    # The support condition holds for a prefix of the sorted row, so counting suffices.
    s = np.sum(1.0 + pos * zs > cs, axis=-1)
    tau = (_take(cs, s) - 1.0) / s[..., None]
    return np.maximum(z - tau, 0.0)


def entmax15(scores):
    """1.5-entmax of each row: between softmax (1-entmax) and sparsemax (2-entmax).

    Parameters
    ----------
    scores : ndarray, shape (..., r)

    Returns
    -------
    ndarray, shape (..., r)
        ``[z/2 - tau]_+^2``; exactly zero outside the support.
    """
    z, zs, cs, pos = _sorted_desc(np.asarray(scores, dtype=float) / 2.0)
    mean = cs / pos
    # V_s = sum_{i<=s} (w_(i) - m_s)^2 from the running sums (the row max is 0, so the terms are gaps)
    V = np.cumsum(zs * zs, axis=-1) - pos * mean * mean
    tau = mean - np.sqrt(np.maximum(1.0 - V, 0.0) / pos)
    s = np.sum(tau <= zs, axis=-1)
    return np.maximum(z - _take(tau, s), 0.0) ** 2


def normmax2(scores, threshold=1.0):
    """2-norm normmax: ``argmax_{p in simplex} <p, z> - t ||p||_2`` per row.

    ``t -> 0`` gives hardmax (uniform on the arg-max set), ``t -> inf`` the
    uniform distribution.

    Parameters
    ----------
    scores : ndarray, shape (..., r)
    threshold : float
        Regularization strength ``t``, ``> 0``.

    Returns
    -------
    ndarray, shape (..., r)
    """
    t = check_positive(threshold, "threshold")
    z, zs, cs, pos = _sorted_desc(np.asarray(scores, dtype=float))
    # sum_{i<=s} (z_(i) - z_(s))^2 for every s, without forming the differences.
    gap2 = np.cumsum(zs * zs, axis=-1) - 2.0 * zs * cs + pos * zs * zs
    s = np.sum(gap2 < t * t, axis=-1)
    # mu = m - sqrt((t^2 - V) / s), m and V the mean and the sum of squared
    # deviations of the top s scores: the smaller root, written stably.
    sf = s[..., None].astype(float)
    m = _take(cs, s) / sf
    V = np.sum(np.where(pos <= sf, (zs - m) ** 2, 0.0), axis=-1, keepdims=True)
    mu = m - np.sqrt(np.maximum(t * t - V, 0.0) / sf)
    p = np.maximum(z - mu, 0.0)
    return p / np.sum(p, axis=-1, keepdims=True)


def normmax_inf(scores, threshold=1.0):
    """inf-norm normmax: ``argmax_{p in simplex} <p, z> - t max_i p_i`` per row.

    The solution is uniform on the top ``s`` scores, ``s`` the largest with
    ``sum_{i<=s} (z_(i) - z_(s)) <= t``: a score is kept when its total gap
    below the higher scores is at most ``t``. ``t -> 0`` gives hardmax,
    ``t -> inf`` the uniform distribution.

    Parameters
    ----------
    scores : ndarray, shape (..., r)
    threshold : float
        Regularization strength ``t``, ``> 0``.

    Returns
    -------
    ndarray, shape (..., r)
        ``1/s`` on the kept entries, exactly 0 elsewhere.
    """
    t = check_positive(threshold, "threshold")
    z, zs, cs, pos = _sorted_desc(np.asarray(scores, dtype=float))
    s = np.sum(cs - pos * zs <= t, axis=-1)
    threshold = _take(zs, s)
    keep = (z >= threshold).astype(float)
    return keep / np.sum(keep, axis=-1, keepdims=True)


def _gumbel(shape, rng):
    check_rng(rng)
    return rng.gumbel(size=shape)


def gumbel_max(scores, rng):
    """One sample per row: the one-hot of ``argmax(z + g)``, ``g`` i.i.d. Gumbel(0, 1).

    Row ``a`` selects key ``b`` with probability ``softmax(z_a)_b``. Keys with
    score ``-inf`` are never selected.

    Parameters
    ----------
    scores : ndarray, shape (..., r)
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (..., r)
        One-hot rows.
    """
    z = np.asarray(scores, dtype=float)
    noisy = z + _gumbel(z.shape, rng)
    out = np.zeros_like(z)
    np.put_along_axis(out, np.argmax(noisy, axis=-1)[..., None], 1.0, axis=-1)
    return out


def gumbel_softmax(scores, rng, temperature=1.0):
    """``softmax((z + g) / temperature)`` per row, ``g`` i.i.d. Gumbel(0, 1).

    Parameters
    ----------
    scores : ndarray, shape (..., r)
    rng : numpy.random.Generator
    temperature : float
        ``> 0``. Small values approach :func:`gumbel_max` with the same noise,
        large values the uniform distribution.

    Returns
    -------
    ndarray, shape (..., r)
    """
    temperature = check_positive(temperature, "temperature")
    z = (np.asarray(scores, dtype=float) + _gumbel(np.shape(scores), rng)) / temperature
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def hardmax(scores):
    """Uniform weights over the arg-max set of each row (averaging hardmax).

    This is the limit of ``softmax(gamma * scores)`` as ``gamma -> inf``.
    Ties are exact float equality: tied keys share the weight equally.
    """
    scores = np.asarray(scores)
    mask = (scores == scores.max(axis=-1, keepdims=True)).astype(float)
    return mask / mask.sum(axis=-1, keepdims=True)


def hardmax_average(scores, values=None):
    """``hardmax(scores) @ values``, as the sum of the arg-max rows divided by their count.

    The same numbers as the weights times the values in exact arithmetic; in
    float64 the mean of m equal rows is then exactly that row (m copies of
    ``1/m`` need not sum to 1: seven duplicates would leave an assignment one
    ulp off one-hot, and the next hardmax, comparing exactly, would drop it).
    ``values=None`` stands for the identity: the result is then the weights.
    Only rows whose count is not 1 are divided (a tie; or nan scores, whose
    ``0 / 0`` is nan): dividing by 1 changes no number.
    """
    scores = np.asarray(scores)
    return mean_over(scores == scores.max(axis=-1, keepdims=True), values)


def euclidean_hardmax_average(queries, keys, values=None):
    """The Euclidean hardmax: the mean of ``values`` over each query's nearest keys, as exact arithmetic decides.

    The rule of both engines. The arg-max set of ``-||q - k||^2`` is the set
    of keys nearest to ``q`` in exact arithmetic on the float64 queries and
    keys (:func:`~kmt_ref.geometry.exact_nearest`, the decision Lloyd's
    algorithm makes), not the arg-max of rounded scores: two keys are tied
    only when they are exactly equidistant, and then share the weight
    equally. Here a query at a time; the fast kernels find the same sets in
    chunks (:func:`~kmt_ref.geometry.nearest_center`).

    Parameters
    ----------
    queries : ndarray, shape (..., m, D)
    keys : ndarray, shape (..., r, D)
    values : ndarray, shape (..., r, D'), optional
        ``None`` stands for the identity (the result is then the weights, (..., m, r)).

    Returns
    -------
    ndarray, shape (..., m, D')
    """
    queries, keys = _as_decided(queries, "queries"), _as_decided(keys, "keys")
    batch = np.broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
    Q, K = np.broadcast_to(queries, batch + queries.shape[-2:]), np.broadcast_to(keys, batch + keys.shape[-2:])
    mask = np.zeros(batch + (Q.shape[-2], K.shape[-2]), dtype=bool)
    for index in np.ndindex(*mask.shape[:-1]):
        mask[index] = exact_nearest(Q[index], K[index[:-1]])
    return mean_over(mask, values)


def _as_decided(Z, name):
    """Tokens a Euclidean hardmax decides on: float arrays as they are; an array of exact rationals (object
    dtype: :mod:`kmt_ref.symbolic` runs the layer on them) as the float64 numbers it equals, so that the
    same rule decides on the same numbers. ``ValueError`` if one entry has no float64 equal."""
    if Z.dtype != object:
        return Z
    F = Z.astype(float)
    if not all(f == z for f, z in zip(F.ravel(), Z.ravel(), strict=True)):
        raise ValueError(f"a Euclidean hardmax decides on float64 numbers; {name} holds a rational that is not one")
    return F


def mean_over(mask, values=None):
    """The mean of ``values`` (..., r, D') over each row's ``True`` entries of ``mask`` (..., m, r), shape
    (..., m, D') (:func:`hardmax_average`); ``values=None`` stands for the identity (the result is then the
    weights, (..., m, r)).

    A row with one entry is that value row, copied; a row with several is :func:`mean_of_rows`; a row with
    none (nan scores) is nan. No product: the same numbers on every CPU, and equal rows of ``mask`` give
    equal rows.
    """
    mask = np.asarray(mask, dtype=bool)
    count = np.count_nonzero(mask, axis=-1)
    if values is None:
        out = mask.astype(float)
        odd = count != 1
        if odd.any():
            with np.errstate(invalid="ignore"):
                out[odd] /= count[odd][:, None]
        return out
    values = np.broadcast_to(values, mask.shape[:-2] + np.shape(values)[-2:])
    out = np.take_along_axis(values, np.argmax(mask, axis=-1)[..., None], axis=-2)
    for index in zip(*np.nonzero(count != 1), strict=True):
        out[index] = mean_of_rows(values[index[:-1]], mask[index])
    return out


def mean_of_rows(values, chosen):
    """The mean of the rows of ``values`` (r, D') where ``chosen`` (r,) is True: their sum, in order, divided by
    their count (nan when none is chosen); one implementation for both engines."""
    rows = values[chosen]
    if rows.shape[0] == 0:
        return np.full(values.shape[-1], np.nan)
    return np.sum(rows, axis=0) / rows.shape[0]
