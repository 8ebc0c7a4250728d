import numpy as np
import pytest

from kmt_ref import gaussian_mixture


@pytest.fixture
def mixture():
    """A small random task factory: ``mixture(seed, n, d, k) -> (X, init)``."""

    def make(seed=0, n=200, d=2, k=4):
        X, init, _ = gaussian_mixture(np.random.default_rng(seed), n=n, d=d, k=k)
        return X, init

    return make
