"""A layer whose assignments are labels: the fast engine's run of a hardmax construction.

At ``gamma = inf`` a construction's assignment block is one-hot in every row
but the few whose scores tie. When a model's layer is the pattern of
Theorems 2.1 and 2.2 (a hardmax CAX writing the centers' ids, an identity
reset SAX, a linear CAC whose queries are the ids and whose keys are the
assignments, an identity reset SAC), the fast engine carries each point's
label and the shared rows instead of the n x k block: CAX is the nearest-key
search that ``lloyd`` runs, CAC the sum of each cluster's members (the one
:func:`~kmt_ref.geometry.cluster_sums` of ``lloyd``), over the count of its
members. The block is built only for a caller that keeps it.

The same assignments as the layer's residual sums, and the same centers to
rounding: the sums are taken in another order (the tests compare every run
against the reference engine's).
"""

from dataclasses import dataclass

import numpy as np

from ..geometry import PointFrame, _nearest_center, cluster_sums, point_frame
from .fast import add_attention, is_plain
from .plain import dot_hardmax_members, query_sizes, tie_shares
from .structure import structure

__all__ = ["LabelLayer", "label_layer", "dense_assignments"]


def _same(a, b):
    """Whether two coordinate indexes (slices, here) select the same coordinates."""
    return isinstance(a, slice) and isinstance(b, slice) and (a.start, a.stop) == (b.start, b.stop)


def _disjoint(cols, block):
    """Whether the coordinates ``cols`` (None: all) read nothing of the slice ``block``."""
    if cols is None:
        return False
    if isinstance(cols, slice):
        return cols.stop <= block.start or cols.start >= block.stop
    return not np.any((cols >= block.start) & (cols < block.stop))


def label_layer(model):
    """The :class:`LabelLayer` of a model whose layer has the labels pattern, else None.

    The pattern (on plain weights): CAX a hardmax writing ``+I`` of the centers' ``y`` block into the
    points' ``y`` block, with scores that read no ``y``; SAX the identity attention writing ``-I`` of the
    points' ``y`` (an exact reset); CAC linear dot-product attention whose queries and keys are ``+I``
    of the ``y`` blocks, whose values read no ``y``; SAC identity attention, the ids not among what it
    writes; an FFN that writes no id (a :class:`~kmt_ref.feedforward.FeedForward`); no normalization.
    Then no block writes the centers' ids (they stay the ``I_k`` of the embedding) and none the points'
    coordinates that CAX and CAC read.
    """
    layout, blocks = model.layout, model.blocks
    if "y" not in layout.slices or model.norm is not None or not is_plain(*blocks.values()):
        return None
    y = layout.slices["y"]
    cax, sax, cac, sac = (blocks[b] for b in ("CAX", "SAX", "CAC", "SAC"))
    if any(b.params for b in (cax, cac)):
        return None
    if (cax.normalizer, sax.normalizer, cac.normalizer, sac.normalizer) != ("hardmax", "identity", "linear",
                                                                            "identity"):
        return None
    st = {name: structure(b) for name, b in blocks.items()}
    writes_ids = _same(st["CAX"].value_rows, y) and _same(st["CAX"].values.cols, y) and st["CAX"].values.sign == 1
    resets_ids = _same(st["SAX"].value_rows, y) and _same(st["SAX"].values.cols, y) and st["SAX"].values.sign == -1
    reads_ids = (cac.score == "dot" and _same(st["CAC"].queries.cols, y) and st["CAC"].queries.sign == 1
                 and _same(st["CAC"].keys.cols, y) and st["CAC"].keys.sign == 1)
    fixed = (_disjoint(st["CAX"].queries.cols, y) and _disjoint(st["CAX"].keys.cols, y)
             and _disjoint(st["CAC"].values.cols, y) and st["CAC"].value_rows is not None
             and _disjoint(st["CAC"].value_rows, y) and _disjoint(st["SAC"].value_rows, y))
    ffn = model.ffn
    if ffn is not None:
        W2, b2 = getattr(ffn, "W2", None), getattr(ffn, "b2", None)
        if type(W2) is not np.ndarray or not (np.all(W2[y] == 0) and (b2 is None or np.all(b2[y] == 0))):
            return None
    if not (writes_ids and resets_ids and reads_ids and fixed and cax.score in ("euclidean", "dot")):
        return None
    return LabelLayer(cax, sac, st["CAX"], st["CAC"], ffn, y, layout.slices["x"], layout.slices.get("one"))


@dataclass(frozen=True)
class LabelLayer:
    """One layer of a labels-pattern model (:func:`label_layer`) on labels.

    :meth:`fixed` reads, once per run, what the layer's point side never changes (CAX's queries, CAC's
    values, and for a Euclidean CAX the queries' frame, as ``lloyd`` makes it); :meth:`step` is one layer
    on the center tokens, which it updates in place.
    """

    cax: object
    sac: object
    cax_structure: object
    cac_structure: object
    ffn: object
    y: slice
    x: slice
    one: slice | None

    def fixed(self, X, tokens, Q):
        """CAX's queries and CAC's values of the point tokens, which no layer writes, and per task what
        the search for the queries' nearest keys keeps from layer to layer: for a Euclidean CAX a
        :class:`~kmt_ref.geometry.PointFrame` of the queries, measured from the first key of the initial
        center tokens ``Q``, as ``lloyd`` makes it; for a dot-product CAX the queries' sizes ``|q|_1``.

        A projection that is the tokens' ``x`` block is ``X`` (..., n, d) itself, which the tokens hold
        unchanged, contiguous (the member sums read it whole); one that scales coordinates of the ``x``
        block and the constant ``one`` (Theorem 2.2's queries ``[2x | 1]``) is made from ``X`` in one pass;
        any other is taken of the point tokens ``tokens()``, made only then.
        """
        made = []

        def projected(projection):
            if projection.sign == 1 and _same(projection.cols, self.x):
                return X
            direct = _of_points(projection, X, self.x, self.one)
            if direct is not None:
                return direct
            if not made:
                made.append(tokens())
            return projection(made[0])

        queries = projected(self.cax_structure.queries)
        if self.cax.score == "dot":
            sizes = query_sizes(queries)
            kept = [sizes] if queries.ndim == 2 else list(sizes)
        else:
            # a copy: the keys may be a view of Q, which every layer updates in place
            whole = point_frame(queries, self.cax_structure.keys(Q)[..., :1, :].copy())
            kept = [whole] if queries.ndim == 2 else [PointFrame(*(a[b] for a in whole))
                                                          for b in range(queries.shape[0])]
        return queries, projected(self.cac_structure.values), kept

    def step(self, queries, values, kept, Q):
        """One layer: ``(Q, labels, shared)``, the new center tokens (``Q`` updated in place, or the FFN's
        new array), each point's label (..., n) and, per task, ``{point: its assignment row}`` for the rows
        the hardmax shares (ties, and a nan score's row of nans).

        The residual's order: the points' ids from the old centers; SAC's reset of the centers, then
        CAC's means (:func:`cluster_sums`; an empty cluster's center is the mean of all points, as the
        linear attention averages a row of zero scores); then the FFN.
        """
        single = Q.ndim == 2
        if single:
            queries, values, Q = queries[None], values[None], Q[None]
        k = Q.shape[-2]
        keys = self.cax_structure.keys(Q)
        labels = np.empty(queries.shape[:-1], dtype=np.intp)
        shared = []
        for b in range(Q.shape[0]):
            if self.cax.score == "euclidean":  # exact decisions: the same labels from any frame
                labels[b], tied = _nearest_center(queries[b], keys[b], kept[b], ties=True)
                shared.append(tie_shares(tied))
            else:
                labels[b], odd = dot_hardmax_members(queries[b], keys[b], kept[b])
                shared.append(odd)
            for i, row in shared[b].items():
                labels[b, i] = np.argmax(row)  # the arg-max the assignment block is read at (a nan row: 0)
        add_attention(Q, Q, Q, self.sac)  # the reset, before the write
        rows = self.cac_structure.value_rows
        for b in range(Q.shape[0]):
            sums, counts = _member_sums(values[b], labels[b], shared[b], k)
            empty = counts == 0
            with np.errstate(invalid="ignore"):
                means = sums / np.where(empty, 1.0, counts)[:, None]
            if np.any(empty):
                means[empty] = np.sum(values[b], axis=0) / values.shape[-2]
            Q[b, :, rows] += means
        if self.ffn is not None:
            Q = Q + self.ffn(Q)
        return (Q[0], labels[0], shared[0]) if single else (Q, labels, shared)


def _of_points(projection, X, x, one):
    """A projection of the point tokens that reads only their ``x`` block and their ``one``, as a
    scaling of those coordinates (``sign`` or ``diagonal``), made from ``X`` (..., n, d) without the
    tokens; else None.

    The same numbers as the projection of the tokens: ``X`` is finite (validated), so the terms of the
    projection's product that the zeros of its diagonal matrix make are zeros."""
    if projection.cols is None or (projection.sign == 0 and projection.diagonal is None):
        return None
    cols = np.arange(projection.cols.start, projection.cols.stop) if isinstance(projection.cols, slice) \
        else projection.cols
    in_x = (cols >= x.start) & (cols < x.stop)
    is_one = np.zeros_like(in_x) if one is None else (cols >= one.start) & (cols < one.stop)
    if not np.all(in_x | is_one):
        return None
    scale = projection.diagonal if projection.sign == 0 else np.full(len(cols), float(projection.sign))
    xs = cols[in_x] - x.start
    m = len(xs)
    out = np.empty(X.shape[:-1] + (len(cols),))
    if m and in_x[:m].all() and np.array_equal(xs, np.arange(xs[0], xs[0] + m)):  # a run of x, first: no gather
        np.multiply(X[..., xs[0] : xs[0] + m], scale[:m], out=out[..., :m])
    else:
        out[..., in_x] = np.take(X, xs, axis=-1) * scale[in_x]
    out[..., is_one] = scale[is_one]
    return out if projection.b is None else out + projection.b


def _member_sums(values, labels, shared, k):
    """Per center the sum of its members' values and their weight: a point that is not shared is a member
    of its label's cluster with weight 1, a shared one of every cluster its row weighs (by that weight)."""
    n = len(labels)
    if not shared:
        return cluster_sums(values, labels, k)
    per_point = np.ones(n, dtype=np.intp)
    rows = {i: np.flatnonzero(w) for i, w in shared.items()}  # a nan weight is not 0: a nan row weighs all
    for i, nz in rows.items():
        per_point[i] = len(nz)
    columns = np.concatenate([[0], np.cumsum(per_point)])
    cluster = np.empty(columns[-1], dtype=np.intp)
    weights = np.ones(columns[-1])
    alone = np.ones(n, dtype=bool)
    alone[list(rows)] = False
    cluster[columns[:-1][alone]] = labels[alone]
    for i, nz in rows.items():
        cluster[columns[i] : columns[i + 1]] = nz
        weights[columns[i] : columns[i + 1]] = shared[i][nz]
    return cluster_sums(values, cluster, k, columns, weights)


def dense_assignments(labels, shared, k):
    """The assignment block (..., n, k) of labels and shared rows: 1 at each label, a shared row whole."""
    Y = np.zeros(labels.shape + (k,))
    np.put_along_axis(Y, labels[..., None], 1.0, axis=-1)
    tasks = [shared] if labels.ndim == 1 else shared
    for b, rows in enumerate(tasks):
        for i, w in rows.items():
            (Y if labels.ndim == 1 else Y[b])[i] = w
    return Y
