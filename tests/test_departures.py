"""Where a run may part from its classical algorithm, it says so: cases found by an adversary, each rebuilt
from its recipe (the data are drawn here, not pasted), each a case that once parted without a word."""

import warnings

import numpy as np
import pytest

import kmt_ref
from kmt_ref import dot_product_lloyd_transformer, lloyd, lloyd_transformer
from kmt_ref.engine import LABELS, REFERENCE, Engine

ENGINES = {"dense kernels": Engine(), "labels run": LABELS, "reference": REFERENCE}


def _near_ties_far_out(seed):
    """Points within about an ulp of the bisectors of two centers at 1e6 (the recipe of the near_ties strategy
    of test_properties, offset 1e6, wobble 1e-16)."""
    rng = np.random.default_rng(seed)
    k, d = int(rng.integers(2, 5)), int(rng.integers(1, 4))
    C = rng.standard_normal((k, d)) + 1e6
    pairs = rng.integers(k, size=(20, 2))
    X = (C[pairs[:, 0]] + C[pairs[:, 1]]) / 2 + 1e-16 * rng.standard_normal((20, d)) * 1e6
    return X, C


def _far_exact_tie(seed):
    """20 points in d = 1 around 1e6, three starts among them, point 0 exactly between the first two."""
    rng = np.random.default_rng(seed)
    X = 1e6 + rng.standard_normal((20, 1))
    init = X[rng.choice(20, 3, replace=False)].copy()
    X[0] = (init[0] + init[1]) / 2
    return X, init


@pytest.mark.parametrize("build", [lloyd_transformer, dot_product_lloyd_transformer])
@pytest.mark.parametrize("warn", ["ties", True])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_point_within_the_rounding_of_lloyd_s_means_of_a_tie_is_named(build, warn, engine):
    # Far from the origin Lloyd's means round at 1e6 and the run's in its frame: half the points, an ulp from
    # a bisector, go to the other center at layer 2, although every label is the nearest of the run's centers.
    X, C = _near_ties_far_out(2526)
    X0, C0 = X.copy(), C.copy()
    with pytest.warns(UserWarning, match=r"before layer 2, point 1's squared distances to centers 0 and 1 differ by "
                                         r"\S+, within \S+, what the rounding of the centers' means can move"):
        run = build(X.shape[1], C.shape[0]).run(X, C, 3, warn=warn, engine=ENGINES[engine])
    ref = lloyd(X, C, 3)
    assert np.count_nonzero(run.labels[1] != ref.labels[1]) >= 5  # what it warns of
    assert np.array_equal(X, X0) and np.array_equal(C, C0)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_theorem_2_2_s_defaults_name_an_exact_tie_its_scores_round_apart(engine):
    # The dot-product scores 2 x.c - |c|^2 of the two tied centers round apart: the hardmax shares nothing,
    # gives the point to center 1, Lloyd's algorithm to center 0.
    X, init = _far_exact_tie(9)
    with pytest.warns(UserWarning, match=r"Theorem 2\.2 \(validated, gamma=inf\): layer 1 gives point 0 to center 1, "
                                         r"where exact arithmetic, as Lloyd's algorithm, gives it to center 0"):
        run = dot_product_lloyd_transformer(1, 3).run(X, init, 3, engine=ENGINES[engine])
    assert run.labels[0, 0] == 1 != lloyd(X, init, 3).labels[0, 0]


def test_theorem_2_1_decides_the_same_exact_tie_as_lloyd_and_says_nothing_of_rounding():
    # Its Euclidean hardmax shares the tied point (the tie warning), and no rounding check adds to it.
    X, init = _far_exact_tie(9)
    with pytest.warns(UserWarning) as said:
        lloyd_transformer(1, 3).run(X, init, 3)
    assert [str(w.message) for w in said if "shares point 0 between centers 0, 1" in str(w.message)]
    assert len(said) == 1


def test_a_finite_gamma_far_from_lloyd_says_so_by_default_and_a_large_one_does_not():
    X, init = kmt_ref.figure3_data()
    with pytest.warns(UserWarning, match=r"Theorem 2\.1 \(validated, gamma=10\): after the last layer, 100% of the "
                                         r"points have split assignments \(the first: point 0, .*\); gamma = 10 is "
                                         r"too small .* far from Lloyd's algorithm"):
        cold = lloyd_transformer(2, 5, gamma=10).run(X, init, 10)
    assert np.abs(cold.log_objectives(X) - lloyd(X, init, 10).log_objectives(X)).max() > 1  # what it warns of
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lloyd_transformer(2, 5, gamma=1e4).run(X, init, 10)  # the README's first look: nothing to say
        lloyd_transformer(2, 5, gamma=10).run(X, init, 10, warn=False)  # asked for silence
        # soft k-means is the same layer, and its split assignments are what it computes
        kmt_ref.soft_kmeans_transformer(2, 5, 10.0).run(X, init, 10)


def test_a_finite_gamma_batch_names_the_task_whose_points_split():
    X, init = kmt_ref.figure3_data()
    Xb = np.stack([X[:500], X[:500] * 1e-3])  # the same gamma is far too small for the second task's scale
    ib = np.stack([init, init * 1e-3])
    with pytest.warns(UserWarning, match=r"of the points of task 1 have split assignments"):
        dot_product_lloyd_transformer(2, 5, gamma=1e4).run(Xb, ib, 3)


@pytest.mark.parametrize("lemma", ["center_lemmas", "layer_lemma", "prove"])
def test_the_lemmas_refuse_n_none_by_name(lemma):
    from kmt_ref import symbolic

    with pytest.raises(ValueError, match=r"n must be an integer; got n=None"):
        getattr(symbolic, lemma)(lloyd_transformer(2, 2), n=None)


@pytest.mark.parametrize("bad, said", [([[np.nan]], r"X must be finite"), ([1.0, 2.0], r"X must be 2-D")])
def test_the_dot_self_attention_resolution_checks_its_points(bad, said):
    from kmt_ref.dot_product_transformer import dot_self_attention_resolution

    with pytest.raises(ValueError, match=said):
        dot_self_attention_resolution(bad)


@pytest.mark.parametrize("scale", [1e200, 1e-300, 1.0])
def test_the_closest_distinct_pair_is_found_at_every_scale(scale):
    from kmt_ref.geometry import closest_distinct_pair

    X = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 1.0], [5.0, 5.0]]) * scale
    i, l, _ = closest_distinct_pair(X)
    assert (i, l) == (0, 2)


@pytest.mark.parametrize("returned", [float("nan"), -1.0, "small"])
def test_a_resolution_that_returns_no_squared_distance_is_refused_before_the_run(returned):
    base = lloyd_transformer(1, 2)
    model = kmt_ref.KMeansTransformer(base.layout, dict(base.blocks), name="odd", resolution=lambda X: returned)
    with pytest.raises(ValueError, match=r"odd: its resolution\(X\) must return a number >= 0 .*; got "):
        model.run(np.array([[0.0], [1.0], [2.0]]), np.array([[0.0], [2.0]]), 1)
