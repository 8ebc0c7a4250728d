"""Reference solution of exercise 18."""

import numpy as np

from kmt_ref import TokenLayout


def name_block(Wq, Wk, Wv, d, k):
    """Which block does the score read (x or y), and what does the value write, with what sign?"""
    layout = TokenLayout(d, k)
    x, y = layout.slices["x"], layout.slices["y"]
    M = Wq.T @ Wk  # the quadratic form behind the score
    reads_x = np.linalg.norm(M[x, x]) / d > np.linalg.norm(M[y, y]) / k
    target = y if reads_x else x  # CAX/SAX write y, CAC/SAC write x
    sign = np.trace(Wv[target, target])
    if reads_x:
        return "CAX" if sign > 0 else "SAX"
    return "CAC" if sign > 0 else "SAC"
