"""The k-means transformer layer: four attention blocks and residual connections.

One layer is one Lloyd iteration::

    P <- P + A(P, Q; CAX) + A(P, P; SAX)    points read centers; points reset
    Q <- Q + A(Q, P; CAC) + A(Q, Q; SAC)    centers read the NEW points; centers reset
    Q <- Q + FFN(Q)                         optional (Theorem 2.2)
    P, Q <- norm(P), norm(Q)                optional (spherical k-means)

The Theorem 2.1 model has no normalization (``norm=None``, the default), and
the weights are shared by all layers.

The sums are taken left to right, with one exception: a reset (a self-attention
block with the identity or the hardmax normalizer: the constructions' SAX and
SAC) is added before the cross-attention's write, as the paper describes the residual connections ("reset the current
assignments or centers before the cross-attention writes the new ones"). Then
``y + (-y) = 0`` exactly, and the new assignment is written into a zero,
unrounded; adding the write first would round a small new weight ``r`` against
the old one (``(y + r) - y``): a responsibility of ``1e-30`` next to an old
``0.9`` would be lost, and a soft k-means cluster that holds only such weights
would move somewhere else; and two centers whose cluster is empty get the
same mean whatever their old positions, where ``(c + m) - c`` rounds by ``c``.
Softmax and learned self-attention blocks are no exact reset and keep the
equation's order (so trained models compute what they were trained with, bit
for bit).
:func:`transformer_layer` is the single implementation used by every hand-built
construction, every variant and the learned model. How its blocks are computed
(the fast kernels or the reference attention, in place or not, on how many
threads) is not its concern: an :class:`~kmt_ref.engine.Engine` passed in says.
"""

import warnings
from types import MappingProxyType

import numpy as np

from ._validation import (
    check_batch,
    check_bool,
    check_callable,
    check_centers,
    check_choice,
    check_data,
    check_instance,
    check_k,
    check_n_steps,
    check_rng,
    is_batch,
)
from .attention import NORMALIZERS, check_tokens
from .engine import Engine
from .kernels.labels import dense_assignments, label_layer
from .readout import _check_resolution, _column_stats, _first_not_nearest, _labels, _nearest_of_finite
from .tokens import TokenLayout
from .trajectory import Trajectory, iterate

__all__ = ["BLOCK_NAMES", "transformer_layer", "KMeansTransformer"]

#: Largest assignment record a run keeps (bytes); see ``KMeansTransformer.run(keep_assignments=...)``.
MAX_KEPT_BYTES = 2**31

#: The four blocks, in the order a layer applies them.
BLOCK_NAMES = ("CAX", "SAX", "CAC", "SAC")


def transformer_layer(P, Q, blocks, ffn=None, norm=None, *, rng=None, engine=None, overwrite=False):
    """Apply one layer to point tokens ``P`` and center tokens ``Q``.

    Parameters
    ----------
    P : ndarray, shape (..., n, D)
        Point tokens.
    Q : ndarray, shape (..., k, D)
        Center tokens.
    blocks : mapping
        ``{"CAX": Block, "SAX": Block, "CAC": Block, "SAC": Block}``.
    ffn : callable, optional
        Position-wise map applied to the center tokens with a residual.
    norm : callable, optional
        Per-token normalization ``(..., m, D) -> (..., m, D)``, applied to
        every point token and every center token at the very end of the layer
        (post-norm, after the FFN). ``None`` (default): no normalization, as in
        Theorems 2.1 and 2.2. Spherical k-means uses a normalization of the
        ``x`` coordinates only (:class:`kmt_ref.variants.spherical.BlockRMSNorm`).
    rng : numpy.random.Generator, optional
        For random normalizers.
    engine : Engine, optional
        How the blocks are computed (:class:`kmt_ref.engine.Engine`; default
        ``Engine()``: the fast kernels on one thread). The reference engine
        :data:`kmt_ref.engine.REFERENCE` computes the same numbers.
    overwrite : bool
        ``P`` and ``Q`` may be overwritten by the new tokens (a run that owns
        its tokens: one pass over them less per residual; the same numbers).

    Returns
    -------
    P, Q : ndarrays of the same shapes
    """
    overwrite = check_bool(overwrite, "overwrite")
    missing = [b for b in BLOCK_NAMES if b not in blocks]
    if missing:
        raise ValueError(f"blocks must hold {BLOCK_NAMES}; missing {missing}")
    for name in BLOCK_NAMES:
        check_tokens(P, Q, blocks[name])
    engine = Engine() if engine is None else engine
    # Both point blocks read the OLD P; both center blocks read the NEW P.
    P = engine.residual(P, P, *_write_order(P, Q, blocks["CAX"], blocks["SAX"]), rng, overwrite)
    Q = engine.residual(Q, Q, *_write_order(Q, P, blocks["CAC"], blocks["SAC"]), rng, overwrite)
    if ffn is not None:
        Q = Q + ffn(Q)
    if norm is not None:
        P, Q = norm(P), norm(Q)
    return P, Q


def _write_order(own, keys, cross, reset):
    """``(Zk1, block1, Zk2, block2)`` of a residual: a reset before the write, else the
    cross-attention first, as the layer's equation reads.

    ``cross`` reads ``keys``, ``reset`` the tokens' ``own`` values. A reset (identity or hardmax
    self-attention, which subtracts the token's own values) is exact only added first:
    ``(y - y) + r`` keeps a small new weight ``r`` that ``(y + r) - y`` rounds away, and
    ``(c - c) + m`` is the mean ``m`` whatever the old center ``c``. Other self-attention blocks
    (softmax resets, learned blocks) are no exact reset, and keep the equation's order.
    """
    if reset.normalizer in ("identity", "hardmax"):
        return own, reset, keys, cross
    return keys, cross, own, reset


class KMeansTransformer:
    """A weight-tied k-means transformer.

    Parameters
    ----------
    layout : TokenLayout
        Token coordinates (``d``, ``k`` and the named blocks).
    blocks : mapping of str to Block
        One :class:`~kmt_ref.attention.Block` for each of ``BLOCK_NAMES``.
    ffn : callable, optional
        Feed-forward sub-layer on the center tokens (with residual). If it has a
        ``weights`` mapping, it is exposed as ``model.weights["FFN"]``.
    name : str
        A label for tables and plots.
    norm : callable, optional
        Per-token normalization (see :func:`transformer_layer`), applied to the
        embedded tokens before the first layer and at the end of every layer.
        If it has a ``weights`` mapping, it is exposed as
        ``model.weights["NORM"]``. ``None`` (default): no normalization.
    translation_invariant : bool
        Every score of the model is unchanged (up to a constant per query)
        when points and centers move by the same vector, so its centers move
        with them. :meth:`run` then measures the data from a reference point
        (the coordinate-wise lower median of ``X``, a data value) and moves
        the centers back: nothing changes in exact arithmetic, and float64
        rounding stays at the scale of the data's spread instead of its
        distance from the origin. True for the hand-built constructions
        whose centers are means; False (default) for anything else
        (spherical k-means measures directions from the origin, a learned
        layer has no such guarantee).
    assumption : callable, optional
        ``assumption(X, C) -> str or None``: what the model's exactness claim
        assumes of the data and of a layer's input centers, as a message when
        it does not hold. ``run(warn=True)`` checks it at every layer.
    resolution : callable, optional
        ``resolution(X) -> float``: the squared distance below which the
        model's point self-attention cannot tell two distinct points apart
        (``X`` (n, d) as the run measures it, after its shift). Every run
        checks it before the first layer (``kmt_ref.readout._check_resolution``) and warns,
        naming the two closest distinct points, when they are closer.

    Attributes
    ----------
    weights : mapping
        ``weights[block]["Wq" | "Wk" | "Wv"]``, read-only views of the matrices.
    """

    def __init__(self, layout, blocks, ffn=None, name="k-means transformer", norm=None,
                 translation_invariant=False, assumption=None, resolution=None):
        check_instance(layout, "layout", TokenLayout)
        missing = [b for b in BLOCK_NAMES if b not in blocks]
        if missing:
            raise ValueError(f"blocks must hold {BLOCK_NAMES}; missing {missing}")
        D = layout.width
        for bname in BLOCK_NAMES:
            for wname in ("Wq", "Wk", "Wv"):
                W = getattr(blocks[bname], wname)
                if np.shape(W) != (D, D):
                    raise ValueError(
                        f"{bname}.{wname} must have shape ({D}, {D}) for {layout}; "
                        f"got {bname}.{wname}.shape={np.shape(W)}"
                    )
        self.layout = layout
        self.blocks = MappingProxyType({b: blocks[b] for b in BLOCK_NAMES})
        self.ffn = ffn
        self.name = name
        self.norm = norm
        self.translation_invariant = check_bool(translation_invariant, "translation_invariant")
        self.assumption = None if assumption is None else check_callable(assumption, "assumption")
        self.resolution = None if resolution is None else check_callable(resolution, "resolution")

    @property
    def d(self):
        """Dimension of the data, the width of the layout's ``x`` block."""
        return self.layout.d

    @property
    def k(self):
        """Number of centers, the width of the layout's ``y`` block."""
        return self.layout.k

    @property
    def weights(self):
        """Read-only ``{block: {"Wq", "Wk", "Wv": (D, D) array}}``, and ``"FFN"``, ``"NORM"`` for a model with them."""
        out = {}
        for bname, block in self.blocks.items():
            mats = {}
            for wname in ("Wq", "Wk", "Wv"):
                W = np.asarray(getattr(block, wname)).view()
                W.flags.writeable = False
                mats[wname] = W
            out[bname] = MappingProxyType(mats)
        if self.ffn is not None and hasattr(self.ffn, "weights"):
            out["FFN"] = MappingProxyType(dict(self.ffn.weights))
        if self.norm is not None and hasattr(self.norm, "weights"):
            out["NORM"] = MappingProxyType(dict(self.norm.weights))
        return MappingProxyType(out)

    @property
    def needs_rng(self):
        """Whether a run draws random numbers (and so needs ``rng``)."""
        return any(NORMALIZERS[b.normalizer].needs_rng for b in self.blocks.values())

    def nonzero_count(self):
        """Number of non-zero entries in all weight matrices (and FFN, if any)."""
        return int(sum(np.count_nonzero(W) for mats in self.weights.values() for W in mats.values()))

    def __repr__(self):
        def describe(blk):
            gamma = f"(gamma={blk.gamma:g})" if NORMALIZERS[blk.normalizer].uses_gamma else ""
            return f"{blk.score}/{blk.normalizer}{gamma}"

        parts = ", ".join(f"{b}: {describe(blk)}" for b, blk in self.blocks.items())
        extra = "" if self.norm is None else f", norm={self.norm!r}"
        return f"KMeansTransformer({self.name!r}, {self.layout}, {parts}{extra})"

    def run(self, X, init, n_layers, rng=None, reembed=False, warn="ties", keep_assignments=True,
            diverged="raise", engine=None):
        """Embed ``X`` and ``init``, apply ``n_layers`` layers, read out centers.

        Parameters
        ----------
        X : array_like, shape (n, d) or (B, n, d)
            One task, or a batch of ``B`` tasks run together.
        init : array_like, shape (k, d) or (B, k, d)
        n_layers : int
            ``>= 0``.
        rng : numpy.random.Generator, optional
            Required when a block's normalizer is random.
        reembed : bool
            Rebuild the tokens from the current centers before every layer
            (assignment block reset to 0, ids to ``I_k``), carrying only the
            d-dimensional centers. The hand-built constructions keep that
            invariant themselves; the learned model needs it.
        warn : {"ties", True, False}
            Which checks warn (``UserWarning``) where the run may part from
            its classical algorithm. Every run checks, before the first layer,
            the two closest distinct points against the model's
            ``resolution``. ``"ties"`` (default) adds the check that costs
            nothing beside the layer: with a hardmax CAX, a point whose
            largest assignment weight is shared after some layer (its scores
            tied, so the hardmax shares it where the classical algorithm
            gives it to the lowest index), named at the first such layer.
            ``True`` adds the checks that cost about a layer each: the model's
            ``assumption`` before every layer (exact ties and, for Theorem
            2.2, near ties within its rounding; at finite ``gamma``, the
            softmax blocks' leaks and one layer's distance from Lloyd's step),
            with a hardmax CAX, after the run, a label that is not the nearest
            of the centers the run returns (a point within rounding of a tie:
            the run computes in coordinates shifted by the data's median and
            rounds its centers when it shifts them back), and, after the last
            layer, more than 10% of the points (of some
            task) with split assignments
            (:meth:`~kmt_ref.trajectory.Trajectory.split_fraction`: at finite
            ``gamma``, too small a ``gamma`` for the data's scale;
            :func:`kmt_ref.min_gamma` says how large it must be). ``False``:
            only the resolution check.
        keep_assignments : bool
            Keep every layer's assignment block (``False``: ``assignments`` is
            ``None``, and the run holds one layer's tokens only). They take
            ``8 n_layers B n k`` bytes; above ``MAX_KEPT_BYTES`` (2 GiB) a run
            that keeps them is refused with a ``ValueError`` that says so.
        diverged : {"raise", "return"}
            What a run whose centers or assignments become non-finite does:
            raise a ``ValueError`` naming the first such layer, or return the
            trajectory as it is (an evaluation that reports divergence).
        engine : Engine, optional
            How the layers are computed (:class:`kmt_ref.engine.Engine`,
            default ``Engine()``); its threads share a batch's tasks. The fast
            engine runs a construction at ``gamma = inf`` on labels (the same
            assignments, centers equal to rounding), the reference engine on the
            layer's residual sums. Results do not depend on the thread count.

        Returns
        -------
        Trajectory
            ``centers`` (n_layers + 1, k, d), ``centers[0]`` the embedded
            (and, with ``norm``, normalized) ``init``; ``labels`` (n_layers, n), the
            arg-max of the assignment block after each layer (lowest index at
            ties), or the nearest center when the layout has no ``"y"`` block;
            ``assignments`` (n_layers, n, k), the raw assignment blocks, or
            ``None`` without a ``"y"`` block. A batch adds a task axis after
            the layer axis: (n_layers + 1, B, k, d), (n_layers, B, n) and
            (n_layers, B, n, k); each task's numbers are those of running it
            alone (for a model with random blocks, the draws follow the batch).
        """
        batch = is_batch(X)
        X = check_batch(X, init).copy() if batch else check_data(X)
        if X.shape[-1] != self.d:
            raise ValueError(
                f"this model was built for d={self.d}; got X with d={X.shape[-1]} (X.shape={X.shape})"
            )
        if batch:
            C = np.array(init, dtype=np.float64)
            if C.shape[1] != self.k:
                raise ValueError(f"this model was built for k={self.k}; got init.shape={C.shape}")
        else:
            C = check_centers(init, self.d, k=self.k)
        check_k(self.k, X.shape[-2], name="k (rows of init)")
        n_layers = check_n_steps(n_layers, "n_layers")
        if self.needs_rng:
            check_rng(rng, "rng", " (this model is random)")
        elif rng is not None:  # a seed or any other value would be ignored silently
            check_rng(rng, "rng", " or None")
        reembed = check_bool(reembed, "reembed")
        if not (isinstance(warn, str) and warn == "ties"):
            try:
                warn = check_bool(warn, "warn")
            except ValueError:
                raise ValueError(f"warn must be 'ties', True or False; got warn={warn!r}") from None
        ties = warn is not False and self.blocks["CAX"].normalizer == "hardmax" and "y" in self.layout.slices
        warn = warn is True
        keep = check_bool(keep_assignments, "keep_assignments")
        kept = 8 * n_layers * int(np.prod(X.shape[:-1], dtype=np.int64)) * self.k
        if keep and "y" in self.layout.slices and kept > MAX_KEPT_BYTES:
            raise ValueError(f"keeping every layer's assignments would take {kept / 2**30:.1f} GiB (8 n_layers B n k "
                             f"bytes, more than {MAX_KEPT_BYTES / 2**30:g} GiB): pass keep_assignments=False, "
                             "which keeps the labels")
        diverged = check_choice(diverged, "diverged", ("raise", "return"))
        engine = Engine() if engine is None else check_instance(engine, "engine", Engine)
        origin = 0.0
        if self.translation_invariant:
            # The lower median is a data value: integer data stay integers, exact ties stay exact.
            origin, lo, hi = _column_stats(X)
            # Only where the shift is exact (Sterbenz: x - o is exact for o/2 <= x <= 2o), so that it moves
            # no decision: elsewhere the coordinate reaches zero and needs no shift for precision.
            lo = np.minimum(lo, np.min(C, axis=-2))
            hi = np.maximum(hi, np.max(C, axis=-2))
            exact = np.where(origin > 0, (lo >= origin / 2) & (hi <= 2 * origin),
                             (hi <= origin / 2) & (lo >= 2 * origin))
            origin = np.where(exact, origin, 0.0)[..., None, :]
            X -= origin  # X is the validated copy: moved in place, no second copy
        _check_resolution(self, X, origin)
        # What the first layer assumes is said before any work (a run that fails on its way gets it too).
        told = warn and n_layers > 0 and self.assumption is not None and self._check_assumption(X, (C - origin)[None])
        moved, last, tie = self._run_tasks(X, C - origin, n_layers, rng, reembed, keep, diverged, engine, ties, warn)
        traj = moved
        if self.translation_invariant:
            centers = moved.centers + origin
            centers[0] = C
            traj = Trajectory(centers=centers, labels=moved.labels, assignments=moved.assignments)
        if warn and self.assumption is not None and not told:
            told = self._check_assumption(X, moved.centers[1:-1], first=1)
        if tie is not None and not told:
            t, task, i, count, shared = tie
            where = f" in task {task}" if batch else ""
            warnings.warn(f"{self.name}: layer {t + 1}{where} shares point {i} between centers "
                          f"{', '.join(map(str, shared))} (their scores tie; {count} point{'s' if count > 1 else ''} "
                          f"shared at that layer), where the classical algorithm gives it to center {shared[0]}; the "
                          "transformer need not equal its classical algorithm from there on", stacklevel=2)
        if warn and ties and not told and tie is None and np.any(origin != 0):
            # A hardmax run computes in shifted coordinates and rounds its centers when it shifts them back: a
            # point nearly as near two centers may then be nearer another returned center than its own.
            parted = _first_not_nearest(X + origin, traj.centers, traj.labels)  # X + origin: exact, as the shift
            if parted is not None:
                t, task, i, label, nearest = parted
                where = f" in task {task}" if batch else ""
                warnings.warn(f"{self.name}: layer {t + 1}{where} gives point {i} to center {label}, but center "
                              f"{nearest} of the centers the run returns is nearer (the run computes in coordinates "
                              "shifted by the data's median and rounds its centers when it shifts them back): the "
                              "point is within rounding of a tie; the transformer need not equal its classical "
                              "algorithm from there on", stacklevel=2)
        split = None
        if warn and last is not None:
            split = Trajectory(traj.centers[-2:], traj.labels[-1:], last[None]).split_fraction()
        if split is not None and np.max(split[-1]) > 0.1:
            warnings.warn(
                f"{self.name}: {np.max(split[-1]):.0%} of the points have split assignments after the last "
                "layer; if gamma is finite it is too small for the scale of X (see kmt_ref.min_gamma)",
                stacklevel=2,
            )
        return traj

    def _check_assumption(self, X, centers, first=0):
        """Warn at the first layer whose input centers (``centers[t]`` the input of layer ``first + t + 1``, in
        ``X``'s coordinates) break :attr:`assumption`; whether it warned."""
        tasks = [((), X, centers)] if X.ndim == 2 else [((b,), X[b], centers[:, b]) for b in range(X.shape[0])]
        for t in range(centers.shape[0]):
            for task, Xb, Cb in tasks:
                message = self.assumption(Xb, Cb[t])
                if message is not None:
                    where = f" in task {task[0]}" if task else ""
                    warnings.warn(f"{self.name}: before layer {first + t + 1}{where}, {message}; the transformer need "
                                  "not equal its classical algorithm from there on", stacklevel=3)
                    return True
        return False

    def _embed(self, X, C):
        """Token matrices, normalized by ``norm`` when the model has one."""
        P, Q = self.layout.embed(X, C)
        if self.norm is not None:
            P, Q = self.norm(P), self.norm(Q)
        return P, Q

    def _run_tasks(self, X, C, n_layers, rng, reembed, keep, diverged, engine, ties, need_last):
        """:meth:`_run`, a batch's tasks split over the engine's threads.

        Every task's numbers are those of running it alone, so the split
        changes nothing; a random model runs in one piece (its draws follow
        the batch order).
        """
        if X.ndim == 2 or self.needs_rng:
            return self._run(X, C, n_layers, rng, reembed, keep, diverged, engine, ties, need_last)

        def part(s):
            traj, last, tie = self._run(X[s], C[s], n_layers, rng, reembed, keep, diverged, engine, ties,
                                        need_last)
            return traj, last, None if tie is None else (tie[0], tie[1] + s.start, *tie[2:])

        parts = engine.map_tasks(part, X.shape[0])
        if len(parts) == 1:
            return parts[0]
        trajs = [traj for traj, _, _ in parts]
        joined = {name: None if getattr(trajs[0], name) is None
                  else np.concatenate([getattr(t, name) for t in trajs], axis=1)
                  for name in ("centers", "labels", "assignments")}
        last = None if parts[0][1] is None else np.concatenate([last for _, last, _ in parts], axis=0)
        ties = [tie for _, _, tie in parts if tie is not None]
        return Trajectory(**joined), last, min(ties, key=lambda tie: tie[:2]) if ties else None

    def _run(self, X, C, n_layers, rng, reembed, keep, diverged, engine, ties=False, need_last=True):
        """Trusted kernel of :meth:`run`: the trajectory, the last layer's assignment block (with
        ``need_last``), and with ``ties`` the first layer's first shared point, ``(layer, task, point, points
        shared, centers)`` or None.

        The fast engine runs a model of the labels pattern on labels (:func:`kmt_ref.kernels.labels.label_layer`),
        the reference engine always on the layer's residual sums."""
        layout = self.layout
        has_y = "y" in layout.slices
        lean = None if engine.reference or reembed else label_layer(self)
        if lean is None:
            P, Q = self._embed(X, C)
        else:  # the point tokens only where CAX's queries or CAC's values read more than X (no norm here)
            Q = layout._tokens(C, is_center=True)
            fixed = lean.fixed(X, lambda: layout._tokens(X, is_center=False), Q)
        first_bad = first_tie = None
        assigned = None  # the labels layer's last (labels, shared rows)

        def labels_layer(t):
            nonlocal Q, first_bad, first_tie, assigned
            Q, labels, shared = lean.step(*fixed, Q)
            assigned = labels, shared
            tasks = [shared] if X.ndim == 2 else shared
            if first_bad is None and not all(np.isfinite(w).all() for rows in tasks for w in rows.values()):
                first_bad = t
            if ties and first_tie is None:
                for b, rows in enumerate(tasks):
                    lab = labels if X.ndim == 2 else labels[b]
                    below = sorted(i for i, w in rows.items() if w[lab[i]] < 1.0)  # a shared arg-max
                    if below:
                        row = rows[below[0]]
                        first_tie = (t, b, below[0], len(below), np.flatnonzero(row == row.max()).tolist())
                        break
            Y = dense_assignments(labels, shared, self.k) if keep else None
            return layout.read(Q, "x"), labels, Y

        def layer(C, t):
            nonlocal P, Q, first_bad, first_tie
            if lean is not None:
                return labels_layer(t)
            if reembed and t > 0:
                P, Q = self._embed(X, C)
            P, Q = transformer_layer(P, Q, self.blocks, self.ffn, self.norm, rng=rng, engine=engine, overwrite=True)
            if not has_y:
                return layout.read(Q, "x"), _nearest_of_finite(X, C)
            Y = layout.read(P, "y")
            if not ties or first_tie is not None:
                labels, finite = _labels(Y)
            else:
                labels, finite, tied = _labels(Y, ties=True)
                if tied.any():
                    where = np.unravel_index(int(np.argmax(tied)), tied.shape)  # the first task's first point
                    row = Y[where]
                    first_tie = (t, int(where[0]) if X.ndim == 3 else 0, int(where[-1]),
                                 int(np.count_nonzero(tied[where[:-1]])), np.flatnonzero(row == row.max()).tolist())
            if first_bad is None and not finite:
                first_bad = t
            return layout.read(Q, "x"), labels, Y

        with np.errstate(**({"over": "ignore", "invalid": "ignore"} if diverged == "return" else {})):
            # centers[0] is the embedded init read back: C unless a norm rescaled it
            traj = iterate(layer, X, layout.read(Q, "x"), n_layers, keep_assignments=has_y and keep)
        if lean is not None:
            last = dense_assignments(*assigned, self.k) if need_last and n_layers else None
        else:
            last = layout.read(P, "y") if has_y and n_layers else None
        if diverged == "raise":
            bad_centers = ~np.isfinite(traj.centers).reshape(n_layers + 1, -1).all(axis=1)
            if bad_centers.any():
                raise ValueError(
                    f"{self.name}: non-finite centers appeared (first at layer {int(np.argmax(bad_centers))}); "
                    "the scores overflowed - lower gamma or rescale X"
                )
            if first_bad is not None:
                raise ValueError(
                    f"{self.name}: non-finite assignments appeared (first at layer {first_bad}); "
                    "the scores overflowed - lower gamma or rescale X"
                )
        return traj, last, first_tie
