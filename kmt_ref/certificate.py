"""How large must gamma be? An exactness certificate for the finite-gamma transformer.

In its default ("validated") configuration, :func:`~kmt_ref.lloyd_transformer`
at finite ``gamma`` is *exactly* soft k-means with stiffness ``gamma``: after
layer t the assignment block of point i is ``s_i = softmax_j(-gamma ||x_i -
c~_j||^2)`` (CAX writes it, identity SAX erases the old one) and linear CAC
moves center j to ``sum_i s_ij x_i / sum_i s_ij``. The certificate compares this
map with Lloyd's, along Lloyd's own trajectory ``C_0, C_1, ...``:

* ``radius[t]`` bounds ``||c~_tj - c_tj||`` (Euclidean, every center j);
* the *perturbed margin* of point i against center j != a(i) (its Lloyd
  center) is ``g_ij(delta) = (sqrt(D_ij) - delta)_+^2 - (sqrt(D_ia) + delta)^2``,
  a lower bound on the transformer's own gap whenever its centers are within
  ``delta`` of Lloyd's (``D`` = squared distances to the Lloyd centers);
* if ``g > 0`` then ``s_ij <= eta_ij = u/(1+u)`` with ``u = exp(-gamma g)`` and
  ``1 - s_ia <= eps_i = S/(1+S)``, ``S = sum_j u_ij``; if ``g <= 0`` only the
  trivial bound 1 is used (so the bound is monotone in gamma);
* the soft mean minus the hard mean of cluster j is
  ``[- sum_{a(i)=j} (1-s_ia)(x_i - c'_j) + sum_{a(i)!=j} s_ij (x_i - c'_j)] / sum_i s_ij``
  (the members' deviations from their own mean sum to zero), whence
  ``radius[t+1] = max_j [sum_{a=j} eps_i r_ij + sum_{a!=j} eta_ij r_ij] / (N_j - sum_{a=j} eps_i)``
  with ``r_ij = ||x_i - c'_j||``, capped by the diagonal of the data's bounding box
  (both centers are convex combinations of points). The same sum with
  ``|x_il - c'_jl|`` bounds coordinate l: that is ``Certificate.bound``.

A cluster that Lloyd empties is certified only through float64 underflow
(every weight on it is exactly 0 once ``gamma * margin > 746``; then linear
CAC returns the global mean, Lloyd's policy); in exact arithmetic the soft mean
of an empty cluster never approaches the global mean.

The log-objective gap is bounded from the radii (``Certificate.log_objective_gap``),
to second order near a Lloyd fixed point. Full statements and proofs: the
book chapter "How large must gamma be?".

The theorem is about exact arithmetic. The code adds a small explicit
floating-point allowance (a margin allowance ``sigma`` for rounded squared
distances and a per-layer allowance ``rho`` for rounded means, both standard
worst-case summation estimates), so that its bound can be compared with
float64 runs; pass ``float_allowance=False`` for the exact-arithmetic bound.

The *all-attention* configuration adds two leaks, bounded separately by
:func:`reset_leakage`: softmax SAX mixes point i's old assignment with its
neighbours' (weight ``beta_i``, large unless ``gamma * (smallest squared
distance between distinct points) >> log n``) and softmax SAC mixes center
ids (weight ``(k-1) e^{-2 gamma} / (1 + (k-1) e^{-2 gamma})``).
"""

from dataclasses import dataclass

import numpy as np

from ._validation import (
    check_bool,
    check_choice,
    check_data,
    check_fraction,
    check_positive,
    check_problem,
)
from .attention import softmax
from .classical import _lloyd
from .geometry import CHUNK_ELEMENTS, center_distances, squared_distances
from .normalizers import hardmax
from .trajectory import Trajectory

__all__ = ["Certificate", "exactness_certificate", "min_gamma", "reset_leakage", "rule_of_thumb_gamma"]

_EPS = np.finfo(float).eps
#: ``exp(-x)`` is exactly 0 in float64 for ``x`` above this (the smallest
#: subnormal is ``exp(-744.44)``).
_UNDERFLOW = 746.0
#: Search range of :func:`min_gamma`.
_GAMMA_RANGE = (1e-300, 1e300)


@dataclass(frozen=True)
class Certificate:
    """What :func:`exactness_certificate` guarantees.

    Attributes
    ----------
    bound : ndarray, shape (n_layers + 1,)
        ``bound[t] >= max |C~_t - C_t|`` (largest absolute coordinate
        difference between the transformer's and Lloyd's centers after t
        layers). ``bound[0] = 0``.
    radius : ndarray, shape (n_layers + 1,)
        ``radius[t] >= max_j ||c~_tj - c_tj||`` (Euclidean); the quantity the
        margins are perturbed by.
    log_objective_gap : ndarray, shape (n_layers + 1,)
        Bound on ``|log f(C~_t) - log f(C_t)|``, f the k-means objective
        (``inf`` when the bound on ``|f~ - f|`` reaches ``f``).
    margins : ndarray, shape (n_layers,)
        ``min_{i, j != a(i)} g_ij(radius[t])`` at layer t: the smallest
        perturbed margin (squared-distance units). Positive means every
        transformer assignment provably equals Lloyd's at that layer.
    assignments_exact : bool
        ``margins > 0`` at every layer.
    gamma : float
    lloyd : Trajectory
        The Lloyd trajectory the certificate follows.
    """

    bound: np.ndarray
    radius: np.ndarray
    log_objective_gap: np.ndarray
    margins: np.ndarray
    assignments_exact: bool
    gamma: float
    lloyd: Trajectory


class _LloydGeometry:
    """Everything about the Lloyd trajectory that does not depend on gamma."""

    def __init__(self, X, C0, n_layers, float_allowance):
        self.X = X
        n, d = X.shape
        k = C0.shape[0]
        # One Lloyd step past the last layer: the objective bound at layer T
        # needs the means of the clusters the centers C_T define.
        extended = _lloyd(X, C0, n_layers + 1, "global_mean")
        self.lloyd = Trajectory(centers=extended.centers[: n_layers + 1], labels=extended.labels[:n_layers])
        self.dist = [np.sqrt(_sq_dist(X, C)) for C in extended.centers[: n_layers + 1]]  # (n, k) each
        self.labels = extended.labels
        self.counts = [np.bincount(lab, minlength=k) for lab in self.labels]
        # ||m_tj - c_tj||: how far each center is from the mean of its own cluster.
        self.drift = [np.linalg.norm(extended.centers[t + 1] - extended.centers[t], axis=1)
                      for t in range(n_layers + 1)]
        self.objectives = np.array([np.sum(np.min(D, axis=1) ** 2) for D in self.dist])
        lo, hi = X.min(axis=0), X.max(axis=0)
        self.coord_cap = hi - lo  # (d,): any two convex combinations of points
        self.diag = float(np.linalg.norm(hi - lo))
        if float_allowance:
            scale = max(np.abs(X).max(), np.abs(C0).max())
            norm = max(np.linalg.norm(X, axis=1).max(), np.linalg.norm(C0, axis=1).max())
            # Rounded squared distances (expansion |x|^2 + |c|^2 - 2 x.c, computed twice).
            self.sigma = 4 * (d + 2) * _EPS * (2 * norm) ** 2
            # Rounded weighted means (transformer) and plain means (Lloyd), plus the residual.
            self.rho = 2 * (n + k + 8) * _EPS * scale
            self.log_rho = 4 * (n + d) * _EPS
        else:
            self.sigma = self.rho = self.log_rho = 0.0
        self.n_layers = n_layers

    def certify(self, gamma):
        """The certificate at one gamma (the gamma-dependent part)."""
        X, T = self.X, self.n_layers
        n, d = X.shape
        sqrt_d = np.sqrt(d)
        rows = np.arange(n)
        bound = np.zeros(T + 1)
        radius = np.zeros(T + 1)
        margins = np.empty(T)
        for t in range(T):
            g = self._perturbed_margins(t, radius[t])
            a = self.labels[t]
            margins[t] = g.min() if g.shape[1] > 1 else np.inf
            u = _odds(gamma, g)  # (n, k): s_ij / s_ia <= u_ij (inf: no bound); 0 at j = a(i)
            eta = _odds_to_weight(u)  # s_ij <= eta_ij
            eps = _odds_to_weight(u.sum(axis=1))  # 1 - s_ia <= eps_i
            weights = eta.copy()
            weights[rows, a] = eps
            new = self.lloyd.centers[t + 1]
            member_eps = np.bincount(a, weights=eps, minlength=new.shape[0])
            den = self.counts[t] - member_eps
            num_euclid = np.einsum("ij,ij->j", weights, self.dist[t + 1])
            num_coord = np.stack([weights[:, j] @ np.abs(X - new[j]) for j in range(new.shape[0])])
            ok = (self.counts[t] > 0) & (den > 0)
            safe = np.where(ok, den, 1.0)
            per_center = np.where(ok, num_euclid / safe, np.inf)
            per_coord = np.where(ok[:, None], num_coord / safe[:, None], np.inf)
            # An empty Lloyd cluster: in float64 every weight on it underflows to 0
            # once gamma * margin > _UNDERFLOW, and linear CAC then gives the global
            # mean, as Lloyd does (exact arithmetic never does: see the book).
            with np.errstate(invalid="ignore"):
                underflow = (self.counts[t] == 0) & np.all(gamma * g > _UNDERFLOW, axis=0)
            per_center = np.where(underflow, 0.0, per_center)
            per_coord = np.where(underflow[:, None], 0.0, per_coord)
            radius[t + 1] = min(per_center.max(), self.diag) + sqrt_d * self.rho
            coord = np.minimum(per_coord, self.coord_cap).max() + self.rho
            bound[t + 1] = min(coord, radius[t + 1])
        gap = self._log_gap(radius)
        return Certificate(
            bound=bound,
            radius=radius,
            log_objective_gap=gap,
            margins=margins,
            assignments_exact=bool(np.all(margins > 0)),
            gamma=float(gamma),
            lloyd=self.lloyd,
        )

    def _perturbed_margins(self, t, delta):
        """``g_ij(delta)`` of layer t, shape (n, k); ``inf`` at each point's own center."""
        dist, a = self.dist[t], self.labels[t]
        rows = np.arange(dist.shape[0])
        d_a = dist[rows, a][:, None]
        g = np.maximum(dist - delta, 0.0) ** 2 - (d_a + delta) ** 2 - 2 * self.sigma
        g[rows, a] = np.inf
        return g

    def _log_gap(self, radius):
        """Bound on ``|log f(C~_t) - log f(C_t)|`` from ``radius`` (book: objective bounds).

        ``f~ - f <= min(E, U)`` and ``f - f~ <= min(E, L)`` with the first-order
        ``E = sum_i max_j (2 delta r_ij + delta^2)``, and
        ``U = sum_j N_j (2 delta ||m_j - c_j|| + delta^2)``,
        ``L = 2 delta (sum_j N_j ||m_j - c_j|| + 2 sum_{i in B} r_ia)``, second
        order near a Lloyd fixed point (``m_j`` = mean of cluster j, ``B`` =
        points whose perturbed margin is not positive).
        """
        out = np.empty_like(radius)
        for t, delta in enumerate(radius):
            dist, a = self.dist[t], self.labels[t]
            rows = np.arange(dist.shape[0])
            f = self.objectives[t]
            first = np.sum(np.max(2 * delta * dist + delta**2, axis=1))
            pull = np.sum(self.counts[t] * self.drift[t])
            upper = min(first, 2 * delta * pull + self.X.shape[0] * delta**2)
            unsure = ~np.all(self._perturbed_margins(t, delta) > 0, axis=1)
            lower = min(first, 2 * delta * (pull + 2 * np.sum(dist[rows, a][unsure])))
            if lower >= f:
                out[t] = np.inf
            else:
                out[t] = max(np.log1p(upper / f), -np.log1p(-lower / f)) + self.log_rho
        return out


def _odds(gamma, g):
    """``exp(-gamma g)`` where ``g > 0``, else ``inf`` (no bound): monotone in gamma."""
    if np.isinf(gamma):
        return np.where(g > 0, 0.0, np.inf)
    with np.errstate(under="ignore"):
        return np.where(g > 0, np.exp(-gamma * np.where(g > 0, g, 0.0)), np.inf)


def _odds_to_weight(u):
    """``u / (1 + u)``, 1 at ``u = inf``."""
    return np.where(np.isinf(u), 1.0, u / (1 + np.where(np.isinf(u), 0.0, u)))


def _sq_dist(X, C):
    """Squared distances (n, k), chunked over points."""
    rows = max(1, CHUNK_ELEMENTS // C.shape[0])
    return np.concatenate([center_distances(X[s : s + rows], C) for s in range(0, X.shape[0], rows)])


def exactness_certificate(X, init, n_layers, gamma, float_allowance=True):
    """Certified deviation of ``lloyd_transformer(d, k, gamma)`` from Lloyd's algorithm.

    Covers the default ("validated") configuration: Euclidean softmax CAX,
    identity SAX and SAC, linear CAC. The bound follows the Lloyd trajectory
    from ``init`` (empty clusters go to the global mean, as in
    :func:`~kmt_ref.lloyd`) and is non-increasing in ``gamma``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_layers : int
        ``>= 0``.
    gamma : float
        ``> 0``; ``numpy.inf`` certifies the hardmax model.
    float_allowance : bool
        Add the floating-point allowance (see the module docstring) so the
        bound applies to float64 runs; ``False`` gives the exact-arithmetic
        bound of the theorem.

    Returns
    -------
    Certificate
        ``.bound`` (n_layers + 1,), ``.assignments_exact``, and more.
    """
    X, C, n_layers = check_problem(X, init, n_layers, "n_layers")
    gamma = check_positive(gamma, "gamma", allow_inf=True)
    return _LloydGeometry(X, C, n_layers, float_allowance).certify(gamma)


def min_gamma(X, init, n_layers, tol, target="centers", float_allowance=True, rtol=1e-3):
    """Smallest gamma whose certificate guarantees a deviation below ``tol``.

    Bisection in ``log gamma`` (the bound is non-increasing in gamma), to
    relative precision ``rtol``; the returned gamma always certifies.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_layers : int
    tol : float
        ``> 0``.
    target : {"centers", "log_objective"}
        What ``tol`` bounds at every layer: the largest absolute coordinate
        difference of the centers (``Certificate.bound``), or the
        log-objective gap (``Certificate.log_objective_gap``).
    float_allowance : bool
        As in :func:`exactness_certificate`.
    rtol : float
        Relative precision of the returned gamma, in ``[1e-12, 1)``: the
        bisection takes about ``log2(1380 / rtol)`` certificates (a finer
        ``rtol`` cannot be told apart from 1 in float64).

    Returns
    -------
    float
        A certifying ``gamma``, within a factor ``1 + rtol`` of the smallest;
        ``1e-300`` (the bottom of the search range) if every gamma certifies
        (``k = 1`` or ``n_layers = 0``); ``numpy.inf`` if ``gamma = 1e300``
        is not certified (a Lloyd tie, an empty cluster that does not
        underflow, or ``tol`` below the floating-point allowance).
    """
    X, C, n_layers = check_problem(X, init, n_layers, "n_layers")
    tol = check_positive(tol, "tol")
    rtol = check_fraction(rtol, "rtol", low=1e-12, high=1.0)
    float_allowance = check_bool(float_allowance, "float_allowance")
    check_choice(target, "target", ("centers", "log_objective"))
    geom = _LloydGeometry(X, C, n_layers, float_allowance)

    def certified(gamma):
        cert = geom.certify(gamma)
        return (cert.bound if target == "centers" else cert.log_objective_gap).max() <= tol

    lo, hi = _GAMMA_RANGE
    if certified(lo):
        return lo
    if not (certified(np.inf) and certified(hi)):
        return np.inf
    # Bisection in log gamma: certified(lo) is False, certified(hi) is True.
    # log(1e300 / 1e-300) = 1382: halving it until below rtol ends after ~log2(1382 / rtol) <= 51 steps.
    for _ in range(64):
        if hi / lo <= 1 + rtol:
            break
        mid = float(np.exp((np.log(lo) + np.log(hi)) / 2))
        lo, hi = (lo, mid) if certified(mid) else (mid, hi)
    return float(hi)


def rule_of_thumb_gamma(X, init, n_layers, tol):
    """The closed-form sufficient gamma of the corollary in the book.

    ``gamma_rule = (2 / m) log(2 Delta (n / N_min + k - 2) / tol')``, with ``m``
    the smallest Lloyd margin (second-nearest minus nearest squared distance)
    along the trajectory, ``Delta`` the bounding-box diagonal of X, ``N_min``
    the smallest Lloyd cluster, and ``tol' = min(tol, Delta, m / (10 R))``, R
    the largest point-to-center distance along the trajectory (a smaller
    tolerance is a stronger guarantee; the corollary needs ``tol' <= m / (10
    R)`` so that perturbed margins stay above ``m / 2``). Exact arithmetic.

    Returns
    -------
    float
        ``0`` when nothing can deviate (``n_layers = 0`` or ``k = 1``);
        ``numpy.inf`` when the corollary does not apply (a Lloyd tie, ``m =
        0``, or an empty cluster).
    """
    X, C, n_layers = check_problem(X, init, n_layers, "n_layers")
    tol = check_positive(tol, "tol")
    n, k = X.shape[0], C.shape[0]
    if n_layers == 0 or k == 1:
        return 0.0
    geom = _LloydGeometry(X, C, n_layers, float_allowance=False)
    rows = np.arange(n)
    m, R, n_min = np.inf, 0.0, n
    for t in range(n_layers):
        D2 = geom.dist[t] ** 2
        a = geom.labels[t]
        gap = D2 - D2[rows, a][:, None]
        gap[rows, a] = np.inf
        m = min(m, gap.min())
        R = max(R, geom.dist[t].max(), geom.dist[t + 1].max())
        n_min = min(n_min, geom.counts[t].min())
    if m <= 0 or n_min == 0:
        return np.inf
    tol = min(tol, geom.diag, m / (10 * R))
    return float(2 / m * np.log(2 * geom.diag * (n / n_min + k - 2) / tol))


def reset_leakage(X, gamma):
    """Weight that softmax SAX (all-attention configuration) leaks to other points.

    ``beta = max_i sum_{l: x_l != x_i} w_il``, the SAX attention weight of
    point i on points different from it, computed as the layer computes it
    (equal points carry equal assignments, so only distinct points leak);
    ``w_il <= exp(-gamma ||x_i - x_l||^2)``. The all-attention layer's
    assignment block then satisfies ``max_i ||y_i - s_i||_1 <= 2 beta /
    (1 - 2 beta)`` (book, proposition on the all-attention configuration). Exact
    float equality decides "equal". O(n^2) time, chunked memory.

    Parameters
    ----------
    X : array_like, shape (n, d)
    gamma : float
        ``> 0``.

    Returns
    -------
    float
    """
    X = check_data(X)
    gamma = check_positive(gamma, "gamma", allow_inf=True)
    n = X.shape[0]
    rows = max(1, CHUNK_ELEMENTS // (n * X.shape[1]))
    beta = 0.0
    for s in range(0, n, rows):
        block = X[s : s + rows]
        same = np.all(block[:, None, :] == X[None, :, :], axis=2)  # equal points leak nothing
        if np.isinf(gamma):
            w = hardmax(-squared_distances(block, X))
        else:
            w = softmax(-gamma * squared_distances(block, X))
        beta = max(beta, float(np.where(same, 0.0, w).sum(axis=1).max()))
    return beta
