"""Token layouts: named blocks, and weights built from them."""

import numpy as np
import pytest

from kmt_ref import TokenLayout


def test_block_map_and_reader_build_weights_from_named_blocks():
    layout = TokenLayout(2, 3, ("x", "y", "sqnorm", "one"))
    E = layout.block_map("sqnorm", "one")
    z = np.arange(1.0, 8.0)  # x = (1, 2), y = (3, 4, 5), sqnorm = 6, one = 7
    assert np.array_equal(E @ z, [0, 0, 0, 0, 0, 7, 0])
    assert np.array_equal(layout.block_map("x", "x"), layout.projector("x"))
    assert np.array_equal(layout.reader("y") @ z, [3, 4, 5])
    with pytest.raises(ValueError, match="differ in size"):
        layout.block_map("x", "y")
