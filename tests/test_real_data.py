"""The shipped real data sets, their preprocessing and the adjusted Rand index."""

import itertools

import numpy as np
import pytest

from kmt_ref.real_data import DATASETS, adjusted_rand_index, load_dataset, minmax_scale, to_width

pytest.importorskip("hypothesis", reason="needs hypothesis, of the test extra: pip install -e '.[test]'")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SHAPES = {"iris": (150, 4, 3), "wine": (178, 13, 3), "breast_cancer": (569, 30, 2), "digits": (1797, 64, 10)}


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_data_sets_load_with_their_documented_shapes_and_classes(name):
    X, labels = load_dataset(name)
    n, d, k = SHAPES[name]
    assert X.shape == (n, d) and labels.shape == (n,) and np.all(np.isfinite(X))
    assert set(np.unique(labels)) == set(range(k))


def test_known_values_of_the_files():
    X, labels = load_dataset("iris")
    np.testing.assert_array_equal(X[0], [5.1, 3.5, 1.4, 0.2])
    assert np.bincount(labels).tolist() == [50, 50, 50]
    X, labels = load_dataset("digits")
    assert X.min() == 0 and X.max() == 16 and np.bincount(labels).tolist()[:3] == [178, 182, 177]


def test_unknown_data_set_is_a_clear_error():
    with pytest.raises(ValueError, match="name='mnist'"):
        load_dataset("mnist")


def test_minmax_and_width():
    X = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 3.0], [4.0, 5.0, 2.0]])
    before = X.copy()
    np.testing.assert_array_equal(minmax_scale(X), [[0, 0, 0], [0.5, 0, 1], [1, 0, 0.5]])
    np.testing.assert_array_equal(X, before)
    padded = to_width(X, 5)
    assert padded.shape == (3, 5) and np.all(padded[:, 3:] == 0)
    Xd, _ = load_dataset("digits")
    reduced = to_width(Xd, 32)
    assert reduced.shape == (1797, 32) and reduced.min() == 0 and reduced.max() == 1
    # principal components are uncorrelated, and rescaling each keeps them so
    corr = np.corrcoef(reduced, rowvar=False)
    np.testing.assert_allclose(corr - np.diag(np.diag(corr)), 0, atol=1e-10)
    with pytest.raises(ValueError, match="d=0"):
        to_width(X, 0)


def test_adjusted_rand_index_hand_computed_case():
    # contingency [[2, 0, 0], [0, 1, 1]]: sum C(n_ij, 2) = 1, rows 2 + ... : (1 - 1/3) / (3/2 - 1/3) = 4/7
    assert adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]) == pytest.approx(4 / 7, rel=1e-15)
    assert adjusted_rand_index([0, 0, 1, 1], [5, 5, 3, 3]) == 1.0
    assert adjusted_rand_index([0, 0, 0, 0], [1, 1, 1, 1]) == 1.0
    assert adjusted_rand_index([0, 1, 0, 1], [0, 0, 1, 1]) == pytest.approx(-0.5)


def _ari_by_pairs(a, b):
    """The index from its definition over pairs of points (Hubert and Arabie's formula, no contingency table)."""
    same_a = np.array([a[i] == a[j] for i, j in itertools.combinations(range(len(a)), 2)])
    same_b = np.array([b[i] == b[j] for i, j in itertools.combinations(range(len(a)), 2)])
    both, na, nb, m = np.sum(same_a & same_b), np.sum(same_a), np.sum(same_b), len(same_a)
    expected = na * nb / m
    top = (na + nb) / 2
    return 1.0 if top == expected else (both - expected) / (top - expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), min_size=2, max_size=25))
def test_adjusted_rand_index_equals_the_pair_counting_definition(pairs):
    a, b = np.array(pairs).T
    assert adjusted_rand_index(a, b) == pytest.approx(_ari_by_pairs(a, b), rel=1e-12, abs=1e-12)
    assert adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_index(b, a), rel=1e-12, abs=1e-12)


def test_adjusted_rand_index_checks_its_input():
    with pytest.raises(ValueError, match="same length"):
        adjusted_rand_index([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match=">= 2"):
        adjusted_rand_index([0], [0])


def test_separation_ratio_hand_case_and_spread():
    from kmt_ref.real_data import separation_ratio, spread_classes

    # two classes on the line: means 0 and 4, each point 1 from its mean
    X = np.array([[-1.0], [1.0], [3.0], [5.0]])
    labels = np.array([0, 0, 1, 1])
    assert separation_ratio(X, labels) == pytest.approx(16 / 2)
    wider = spread_classes(X, labels, 3.0)
    np.testing.assert_allclose(wider.ravel(), [-5.0, -3.0, 7.0, 9.0])  # means -4 and 8, offsets kept
    assert separation_ratio(wider, labels) == pytest.approx(9 * 8)
    np.testing.assert_array_equal(spread_classes(X, labels, 1.0), X)
    with pytest.raises(ValueError, match="two classes"):
        separation_ratio(X, np.zeros(4))
    with pytest.raises(ValueError, match="factor="):
        spread_classes(X, labels, 0.0)


def test_adjusted_rand_index_of_many_singletons_builds_no_dense_table():
    import tracemalloc

    from kmt_ref.real_data import adjusted_rand_index

    labels = np.arange(8000)
    tracemalloc.start()
    value = adjusted_rand_index(labels, labels[::-1].copy())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert value == 1.0 and peak < 50e6  # a dense 8000 x 8000 table is 512 MB
