"""Reference solution of exercise 05."""

import numpy as np

from kmt_ref import Block, TokenLayout, attend


def sax_reset(X, Y):
    """``P + SAX(P)`` with the Equation 5 SAX weights and averaging hardmax."""
    layout = TokenLayout(X.shape[1], Y.shape[1])
    P = np.hstack([X, Y])
    P_x, P_y = layout.projector("x"), layout.projector("y")
    block = Block(P_x, P_x, -P_y, score="euclidean", normalizer="hardmax")
    return P + attend(P, P, block)
