"""What a block's weights read and write, found once per block (the lowest tier of the kernels).

The constructions' weights are block projectors: most rows of ``Wq, Wk, Wv``
are zero and the rest are often ``+-I``. :func:`structure` finds which
coordinates a score reads and a value writes; a ``+-I`` projection is then a
view of the tokens, not a product.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["Projection", "Structure", "structure", "affine"]


def affine(Z, W, b):
    """``Z @ W.T + b`` (``b`` may be None) on plain arrays: every projection of the kernels is this one."""
    out = np.matmul(Z, np.swapaxes(W, -1, -2))
    return out if b is None else out + b


def _as_index(mask):
    """Boolean mask -> ``None`` (all), a slice (one contiguous run) or indices."""
    idx = np.flatnonzero(mask)
    if len(idx) == len(mask):
        return None
    if len(idx) and idx[-1] - idx[0] + 1 == len(idx):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


@dataclass(frozen=True)
class Projection:
    """``Z @ W[rows].T + b[rows]`` reduced to what it touches.

    ``cols`` are the input coordinates ``W[rows]`` reads; ``sign`` is +1 or -1
    when ``W[rows][:, cols]`` is ``+-I`` (the projection is then a view of the
    tokens), else 0 and ``W`` is the reduced matrix; ``diagonal``, when that
    matrix is diagonal (Theorem 2.2's ``2 P_x + E_s1``), its diagonal: the
    product is then a scaling of the columns.
    """

    W: np.ndarray
    b: np.ndarray | None
    cols: object
    sign: int
    diagonal: np.ndarray | None = None

    def __call__(self, Z):
        if isinstance(self.cols, slice):
            Z = Z[..., self.cols]
        elif self.cols is not None:
            Z = np.take(Z, self.cols, axis=-1)  # the same gather, several times faster than indexing
        if self.sign == 1:
            return Z
        if self.sign == -1:
            return -Z
        if self.diagonal is not None:
            out = Z * self.diagonal
            # Each product row of a diagonal matrix is one non-zero term plus zeros: the same number,
            # unless another coordinate is infinite or nan (0 * inf is nan); then the product decides.
            # (A finite sum means no such coordinate; one that overflows only costs the product.)
            if np.isfinite(np.sum(out)):
                return out if self.b is None else out + self.b
        return affine(Z, self.W, self.b)


def _projection(W, b, rows):
    if rows is not None:
        W, b = W[rows], (None if b is None else b[rows])
    cols = _as_index(np.any(W != 0, axis=0))
    if cols is not None:
        W = W[:, cols]
    sign, diagonal = 0, None
    if b is None and W.shape[0] == W.shape[1]:
        eye = np.eye(W.shape[0])
        sign = 1 if np.array_equal(W, eye) else -1 if np.array_equal(W, -eye) else 0
    if sign == 0 and W.shape[0] == W.shape[1] and np.array_equal(W, np.diag(np.diag(W))):
        diagonal = np.diag(W).copy()
    return Projection(W, b, cols, sign, diagonal)


@dataclass(frozen=True)
class Structure:
    """What one block's weights read and write (found once per block).

    ``value_rows``: the output coordinates the block can make non-zero
    (``None``: all); ``values``, ``queries``, ``keys``: the reduced projections.
    """

    value_rows: object
    values: Projection
    queries: Projection
    keys: Projection


def _rows(W, b):
    rows = np.any(W != 0, axis=1)
    return rows if b is None else rows | (b != 0)


def structure(block):
    """The :class:`Structure` of a block of plain arrays, cached on the (frozen) block."""
    cached = block.__dict__.get("_structure")
    if cached is None:
        value_rows = _as_index(_rows(block.Wv, block.bv))
        score_rows = _as_index(_rows(block.Wq, block.bq) | _rows(block.Wk, block.bk))
        cached = Structure(value_rows, _projection(block.Wv, block.bv, value_rows),
                           _projection(block.Wq, block.bq, score_rows), _projection(block.Wk, block.bk, score_rows))
        block.__dict__["_structure"] = cached  # the block's arrays are read-only: this cannot go stale
    return cached
