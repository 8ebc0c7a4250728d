"""The steps of :meth:`KMeansTransformer.run <kmt_ref.layer.KMeansTransformer.run>`: its inputs checked
(``check_run``), then its layers applied (``apply_layers``).

``apply_layers`` is the trusted kernel: validated arrays in, a :class:`~kmt_ref.trajectory.Trajectory` out.
Each layer is the model's :func:`~kmt_ref.layer.transformer_layer` on the tokens
(:meth:`KMeansTransformer.layer <kmt_ref.layer.KMeansTransformer.layer>`), computed by the run's
:class:`~kmt_ref.engine.Engine`, except where the caller named the labels run
(:data:`~kmt_ref.engine.LABELS`), which replaces the layer of a hardmax construction by its labels
(``kmt_ref.kernels.labels``).
"""

from dataclasses import dataclass

import numpy as np

from ._validation import (
    check_batch,
    check_bool,
    check_centers,
    check_choice,
    check_data,
    check_instance,
    check_k,
    check_n_steps,
    check_rng,
    is_batch,
)
from .attention import NORMALIZERS
from .engine import Engine
from .kernels.labels import dense_assignments, label_layer
from .readout import _labels, _nearest_of_finite
from .trajectory import Trajectory, iterate

__all__ = []  # the steps of KMeansTransformer.run, not an interface of their own

#: Largest assignment record a run keeps (bytes); see ``KMeansTransformer.run(keep_assignments=...)``.
MAX_KEPT_BYTES = 2**31


@dataclass(frozen=True)
class RunOptions:
    """A run's validated options; ``all``, ``ties`` and ``split``: which of the checks of ``warn`` it makes
    (``split``: split assignments after the last layer, for which the run keeps that layer's block)."""

    n_layers: int
    rng: object
    reembed: bool
    all: bool
    ties: bool
    split: bool
    keep: bool
    diverged: str
    engine: Engine


def check_run(model, X, init, n_layers, rng, reembed, warn, keep_assignments, diverged, engine):
    """The run's data as fresh float64 arrays ``(X, C)`` and its :class:`RunOptions`; a ``ValueError`` naming
    the argument otherwise, before any work."""
    batch = is_batch(X)
    X = check_batch(X, init).copy() if batch else check_data(X)
    if X.shape[-1] != model.d:
        raise ValueError(f"this model was built for d={model.d}; got X with d={X.shape[-1]} (X.shape={X.shape})")
    if batch:
        C = np.array(init, dtype=np.float64)
        if C.shape[1] != model.k:
            raise ValueError(f"this model was built for k={model.k}; got init.shape={C.shape}")
    else:
        C = check_centers(init, model.d, k=model.k)
    check_k(model.k, X.shape[-2], name="k (rows of init)")
    n_layers = check_n_steps(n_layers, "n_layers")
    if any(NORMALIZERS[b.normalizer].needs_rng for b in model.blocks.values()):
        check_rng(rng, "rng", " (this model is random)")
    elif rng is not None:  # a seed or any other value would be ignored silently
        check_rng(rng, "rng", " or None")
    if not (isinstance(warn, str) and warn == "ties"):
        try:
            warn = check_bool(warn, "warn")
        except ValueError:
            raise ValueError(f"warn must be 'ties', True or False; got warn={warn!r}") from None
    has_y = "y" in model.layout.slices
    keep = check_bool(keep_assignments, "keep_assignments")
    kept = 8 * n_layers * int(np.prod(X.shape[:-1], dtype=np.int64)) * model.k
    if keep and has_y and kept > MAX_KEPT_BYTES:
        raise ValueError(f"keeping every layer's assignments would take {kept / 2**30:.1f} GiB (8 n_layers B n k "
                         f"bytes, more than {MAX_KEPT_BYTES / 2**30:g} GiB): pass keep_assignments=False, "
                         "which keeps the labels")
    hard = model.blocks["CAX"].normalizer == "hardmax"
    # By default a finite-gamma Lloyd construction reads its last assignment block: the one check of how far
    # its softmax has taken it from Lloyd's hard assignments that costs nothing beside the layers.
    split = warn is True or (warn is not False and model.follows_lloyd and not hard and has_y)
    options = RunOptions(
        n_layers=n_layers, rng=rng, reembed=check_bool(reembed, "reembed"), all=warn is True,
        ties=warn is not False and hard and has_y, split=split, keep=keep,
        diverged=check_choice(diverged, "diverged", ("raise", "return")),
        engine=Engine() if engine is None else check_instance(engine, "engine", Engine))
    return X, C, options


def apply_layers(model, X, C, options):
    """``(trajectory, last, tie)``: the layers applied to ``X`` and the initial centers ``C`` (validated, in
    the run's frame), a batch's tasks split over the engine's threads; the last layer's assignment block
    (with ``options.split``, for the split-assignment check); the first point a hardmax shared between tied
    centers, ``(layer, task, point, points shared, centers)``, or None.

    Every task's numbers are those of running it alone, so the split changes nothing; a random model runs
    in one piece (its draws follow the batch order).
    """
    if X.ndim == 2 or model.needs_rng:
        return _apply(model, X, C, options)

    def part(s):
        traj, last, tie = _apply(model, X[s], C[s], options)
        return traj, last, None if tie is None else (tie[0], tie[1] + s.start, *tie[2:])

    parts = options.engine.map_tasks(part, X.shape[0])
    if len(parts) == 1:
        return parts[0]
    trajs = [traj for traj, _, _ in parts]
    joined = {name: None if getattr(trajs[0], name) is None
              else np.concatenate([getattr(t, name) for t in trajs], axis=1)
              for name in ("centers", "labels", "assignments")}
    last = None if parts[0][1] is None else np.concatenate([last for _, last, _ in parts], axis=0)
    ties = [tie for _, _, tie in parts if tie is not None]
    return Trajectory(**joined), last, min(ties, key=lambda tie: tie[:2]) if ties else None


def _apply(model, X, C, options):
    """:func:`apply_layers` for one piece of the batch: each layer on the tokens, or on labels."""
    lean = label_layer(model) if options.engine.labels and not options.reembed else None
    layer = _LabelsLayers(model, X, C, lean, options) if lean is not None else _TokenLayers(model, X, C, options)
    with np.errstate(**({"over": "ignore", "invalid": "ignore"} if options.diverged == "return" else {})):
        # centers[0] is the embedded init read back: C unless a norm rescaled it
        traj = iterate(layer, X, layer.first_centers, options.n_layers,
                       keep_assignments="y" in model.layout.slices and options.keep)
    if options.diverged == "raise":
        bad_centers = ~np.isfinite(traj.centers).reshape(options.n_layers + 1, -1).all(axis=1)
        if bad_centers.any():
            raise ValueError(f"{model.name}: non-finite centers appeared (first at layer "
                             f"{int(np.argmax(bad_centers))}); the scores overflowed - lower gamma or rescale X")
        if layer.first_bad is not None:
            raise ValueError(f"{model.name}: non-finite assignments appeared (first at layer {layer.first_bad}); "
                             "the scores overflowed - lower gamma or rescale X")
    return traj, layer.last() if options.split and options.n_layers else None, layer.first_tie


class _TokenLayers:
    """The layer on tokens: ``self(C, t)`` applies layer ``t + 1`` and reads its centers, labels and
    assignment block; it notes the first layer with non-finite assignments and the first shared point."""

    def __init__(self, model, X, C, options):
        self.model, self.X, self.options = model, X, options
        self.P, self.Q = model._embed(X, C)
        self.first_centers = model.layout.read(self.Q, "x")
        self.first_bad = self.first_tie = None

    def __call__(self, C, t):
        model, layout = self.model, self.model.layout
        if self.options.reembed and t > 0:
            self.P, self.Q = model._embed(self.X, C)
        self.P, self.Q = model.layer(self.P, self.Q, rng=self.options.rng, engine=self.options.engine, overwrite=True)
        if "y" not in layout.slices:
            return layout.read(self.Q, "x"), _nearest_of_finite(self.X, C)
        Y = layout.read(self.P, "y")
        if not self.options.ties or self.first_tie is not None:
            labels, finite = _labels(Y)
        else:
            labels, finite, tied = _labels(Y, ties=True)
            if tied.any():
                where = np.unravel_index(int(np.argmax(tied)), tied.shape)  # the first task's first point
                row = Y[where]
                self.first_tie = (t, int(where[0]) if self.X.ndim == 3 else 0, int(where[-1]),
                                  int(np.count_nonzero(tied[where[:-1]])), np.flatnonzero(row == row.max()).tolist())
        if self.first_bad is None and not finite:
            self.first_bad = t
        return layout.read(self.Q, "x"), labels, Y

    def last(self):
        return self.model.layout.read(self.P, "y") if "y" in self.model.layout.slices else None


class _LabelsLayers:
    """The labels run of a hardmax construction (:class:`~kmt_ref.kernels.labels.LabelLayer`): each point's
    label and the rows a tie shares, the point tokens made only where the layer reads more than ``X``."""

    def __init__(self, model, X, C, lean, options):
        layout = model.layout
        self.k, self.X, self.lean, self.options = model.k, X, lean, options
        self.Q = layout._tokens(C, is_center=True)
        self.fixed = lean.fixed(X, lambda: layout._tokens(X, is_center=False), self.Q)
        self.read = lambda Q: layout.read(Q, "x")
        self.first_centers = self.read(self.Q)
        self.first_bad = self.first_tie = None
        self.assigned = None

    def __call__(self, C, t):
        self.Q, labels, shared = self.lean.step(*self.fixed, self.Q)
        self.assigned = labels, shared
        tasks = [shared] if self.X.ndim == 2 else shared
        if self.first_bad is None and not all(np.isfinite(w).all() for rows in tasks for w in rows.values()):
            self.first_bad = t
        if self.options.ties and self.first_tie is None:
            for b, rows in enumerate(tasks):
                lab = labels if self.X.ndim == 2 else labels[b]
                below = sorted(i for i, w in rows.items() if w[lab[i]] < 1.0)  # a shared arg-max
                if below:
                    row = rows[below[0]]
                    self.first_tie = (t, b, below[0], len(below), np.flatnonzero(row == row.max()).tolist())
                    break
        Y = dense_assignments(labels, shared, self.k) if self.options.keep else None
        return self.read(self.Q), labels, Y

    def last(self):
        return dense_assignments(*self.assigned, self.k)
