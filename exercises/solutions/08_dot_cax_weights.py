"""Reference solution of exercise 08."""

from kmt_ref import TokenLayout


def dot_cax_weights(d, k):
    """query = [2x | 0 | 0 | 1], key = [c | 0 | 0 | -||c||^2], value = [0 | e_j | 0 | 0]."""
    layout = TokenLayout(d, k, ("x", "y", "sqnorm", "one"))
    s, one = layout.slices["sqnorm"].start, layout.slices["one"].start
    Wq = 2.0 * layout.projector("x")
    Wq[one, one] = 1.0
    Wk = layout.projector("x")
    Wk[one, s] = -1.0  # the key's coordinate "one" holds -||c||^2
    Wv = layout.projector("y")
    return Wq, Wk, Wv
