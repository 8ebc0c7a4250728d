"""Tokens: how points and centers are embedded, and how results are read out.

Tokens are rows. With the paper's layout ``("x", "y")``:

* point tokens ``P = [X | Y]``, shape (n, d + k), ``Y`` the assignment block
  (zeros before the first layer);
* center tokens ``Q = [C | I_k]``, shape (k, d + k): center ``j`` carries its
  id ``e_j`` in the same coordinates where points carry their assignment.

A layout is a sequence of named coordinate blocks, so weights are assembled
from named projectors (``P_x``, ``P_y``) rather than index arithmetic. Known
blocks:

``"x"``
    width d: the point, or the center.
``"y"``
    width k: zeros for points (assignment, filled by the layers), ``I_k`` for
    centers (ids).
``"sqnorm"``
    width 1: the squared norm of the ``x`` block.
``"one"``
    width 1: the constant 1.
"""

import numpy as np

from ._validation import check_dims, float_type

__all__ = ["TokenLayout"]

_KNOWN = ("x", "y", "sqnorm", "one")


class TokenLayout:
    """Named coordinate blocks of a token.

    Parameters
    ----------
    d : int
        Data dimension.
    k : int
        Number of centers.
    blocks : sequence of str
        Block names in order, from ``"x"``, ``"y"``, ``"sqnorm"``, ``"one"``;
        ``"x"`` is required.
    """

    def __init__(self, d, k, blocks=("x", "y")):
        blocks = tuple(blocks)
        unknown = [b for b in blocks if b not in _KNOWN]
        if unknown or "x" not in blocks or len(set(blocks)) != len(blocks):
            raise ValueError(
                f"blocks must be distinct names from {_KNOWN} including 'x'; got blocks={blocks}"
            )
        self.d, self.k = check_dims(d, k)
        self.blocks = blocks
        widths = {"x": self.d, "y": self.k, "sqnorm": 1, "one": 1}
        self.slices, start = {}, 0
        for name in blocks:
            self.slices[name] = slice(start, start + widths[name])
            start += widths[name]
        self.width = start

    def __repr__(self):
        return f"TokenLayout(d={self.d}, k={self.k}, blocks={self.blocks})"

    def __eq__(self, other):
        return isinstance(other, TokenLayout) and (self.d, self.k, self.blocks) == (
            other.d,
            other.k,
            other.blocks,
        )

    def projector(self, *names):
        """Diagonal 0/1 matrix keeping the named blocks: ``P_x = projector("x")``."""
        P = np.zeros((self.width, self.width))
        for name in names:
            s = self.slices[name]
            P[s, s] = np.eye(s.stop - s.start)
        return P

    def block_map(self, out, inp):
        """The (width, width) matrix that copies block ``inp`` into block ``out`` (all other entries 0).

        Blocks of equal size map by the identity; a block of size 1 is copied
        into every coordinate of the other block (or summed from them).
        """
        so, si = self.slices[out], self.slices[inp]
        n_out, n_in = so.stop - so.start, si.stop - si.start
        if n_out != n_in and 1 not in (n_out, n_in):
            raise ValueError(f"blocks {out!r} ({n_out}) and {inp!r} ({n_in}) differ in size and neither has size 1")
        M = np.zeros((self.width, self.width))
        M[so, si] = np.eye(n_out) if n_out == n_in else 1.0
        return M

    def reader(self, name):
        """The (block width, width) matrix whose rows read block ``name`` of a token."""
        return self.projector(name)[self.slices[name]]

    def embed(self, X, C):
        """Point tokens ``P`` (n, width) and center tokens ``Q`` (k, width); float32 if ``X``, ``C`` are, else
        float64."""
        return self._tokens(X, is_center=False), self._tokens(C, is_center=True)

    def _tokens(self, Z, is_center):
        T = np.zeros(Z.shape[:-1] + (self.width,), dtype=float_type(Z))
        T[..., self.slices["x"]] = Z
        if "y" in self.slices and is_center:
            T[..., self.slices["y"]] = np.eye(self.k)
        if "sqnorm" in self.slices:
            T[..., self.slices["sqnorm"]] = np.sum(Z * Z, axis=-1, keepdims=True)
        if "one" in self.slices:
            T[..., self.slices["one"]] = 1.0
        return T

    def read(self, T, name):
        """The named block of tokens ``T`` (..., width) -> (..., block width)."""
        return T[..., self.slices[name]]
