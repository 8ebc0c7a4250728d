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

from types import MappingProxyType

import numpy as np

from ._validation import (
    check_bool,
    check_callable,
    check_instance,
)
from .attention import NORMALIZERS, check_tokens
from .engine import Engine
from .readout import choose_frame, shift_back
from .run_warnings import assumption_warning, resolution_warning, say_what_was_missed
from .running import apply_layers, check_run
from .tokens import TokenLayout

__all__ = ["BLOCK_NAMES", "transformer_layer", "KMeansTransformer"]

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
    follows_lloyd : bool
        The model is a construction of Lloyd's algorithm (Theorems 2.1 and 2.2, at any ``gamma``):
        its runs then also say, by default, where they may part from :func:`~kmt_ref.lloyd`
        (a label exact arithmetic gives elsewhere, a point within the rounding of Lloyd's means
        of a tie, split assignments after the last layer at finite ``gamma``;
        :mod:`kmt_ref.run_warnings`). False (default) for anything else.

    Attributes
    ----------
    weights : mapping
        ``weights[block]["Wq" | "Wk" | "Wv"]``, read-only views of the matrices.
    """

    def __init__(self, layout, blocks, ffn=None, name="k-means transformer", norm=None,
                 translation_invariant=False, assumption=None, resolution=None, follows_lloyd=False):
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
        self.follows_lloyd = check_bool(follows_lloyd, "follows_lloyd")

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

        The steps: check the inputs, choose the frame (a translation-invariant model measures the data from
        a data value where that shift is exact), apply the layers, shift the centers back, say what the run
        may have missed (:mod:`kmt_ref.run_warnings`).

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
            Rebuild the tokens from the current centers before every layer (assignments 0, ids ``I_k``).
        warn : {"ties", True, False}
            Which checks warn where the run may part from its classical algorithm (every run checks the
            closest distinct points against ``resolution``): ``"ties"`` (default) also a point a hardmax
            CAX shares between tied centers, and for a Lloyd construction (``follows_lloyd``) a label or a near
            tie that rounding decides and, at finite ``gamma``, split assignments after the last layer;
            ``True`` also the ``assumption`` before every layer, a label that is not the nearest returned
            center, split assignments after the last layer (:mod:`kmt_ref.run_warnings` says what each
            costs and means).
        keep_assignments : bool
            Keep every layer's assignment block (``8 n_layers B n k`` bytes, refused above
            ``kmt_ref.running.MAX_KEPT_BYTES``, 2 GiB); ``False`` keeps the labels only.
        diverged : {"raise", "return"}
            Non-finite centers or assignments: a ``ValueError`` naming the first layer, or the trajectory.
        engine : Engine, optional
            How the layers are computed (default ``Engine()``: the four blocks on tokens, by the fast
            kernels; :data:`~kmt_ref.engine.LABELS`: the labels run, named for speed). Results do not
            depend on its thread count.

        Returns
        -------
        Trajectory
            ``centers`` (n_layers + 1, k, d), ``centers[0]`` the embedded ``init``; ``labels`` (n_layers,
            n), the arg-max of each layer's assignment block (lowest index at ties), or the nearest center
            without a ``"y"`` block; ``assignments`` (n_layers, n, k) or ``None``. A batch adds a task axis
            after the layer axis; each task's numbers are those of running it alone.
        """
        X, C, checks = check_run(self, X, init, n_layers, rng, reembed, warn, keep_assignments, diverged, engine)
        X, origin = choose_frame(self, X, C)
        C_run = C if origin is None else C - origin
        resolution_warning(self, X, origin)
        # What the first layer assumes is said before any work (a run that fails on its way gets it too).
        told = (checks.all and checks.n_layers > 0 and self.assumption is not None
                and assumption_warning(self, X, C_run[None]))
        moved, last, tie = apply_layers(self, X, C_run, checks)
        traj = shift_back(moved, C, origin)
        say_what_was_missed(self, X, origin, traj, moved, last, tie, told, checks)
        return traj

    def layer(self, P, Q, rng=None, engine=None, overwrite=False):
        """One layer of this model on tokens: :func:`transformer_layer` with its blocks, FFN and norm."""
        return transformer_layer(P, Q, self.blocks, self.ffn, self.norm, rng=rng, engine=engine, overwrite=overwrite)

    def _embed(self, X, C):
        """Token matrices, normalized by ``norm`` when the model has one."""
        P, Q = self.layout.embed(X, C)
        if self.norm is not None:
            P, Q = self.norm(P), self.norm(Q)
        return P, Q
