import numpy as np
import pytest
from scipy import stats

from kmt_ref.tasks import FAMILIES, initial_centers, sample_tasks


def test_same_generator_state_gives_the_same_batch():
    a = sample_tasks(np.random.default_rng(3), 4, 50, 3, 5)
    b = sample_tasks(np.random.default_rng(3), 4, 50, 3, 5)
    c = sample_tasks(np.random.default_rng(4), 4, 50, 3, 5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0], c[0])


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("equal_weights, isotropic", [(True, True), (False, False)])
def test_tasks_are_min_max_scaled_per_task_and_dimension(family, equal_weights, isotropic):
    X, init = sample_tasks(np.random.default_rng(0), 3, 40, 4, 6, family=family,
                           equal_weights=equal_weights, isotropic=isotropic)
    assert X.shape == (3, 40, 4) and init.shape == (3, 6, 4)
    np.testing.assert_allclose(X.min(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.max(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize(
    "family, law",
    [
        ("normal", stats.norm(0.3, 0.1)),
        ("cauchy", stats.cauchy(0.3, 0.1)),
        ("gumbel", stats.gumbel_r(0.3, 0.1)),
        ("laplace", stats.laplace(0.3, 0.1)),
        # The exponential of N(0.3, 0.1^2), the authors' parameterization (not 0.3 + 0.1 exp(z)).
        ("lognormal", stats.lognorm(s=0.1, scale=np.exp(0.3))),
    ],
)
def test_each_family_draws_its_law_with_the_components_location_and_scale(family, law):
    draws = FAMILIES[family](np.random.default_rng(0), np.full(20_000, 0.3), np.full(20_000, 0.1))
    assert stats.kstest(draws, law.cdf).pvalue > 1e-3


def test_first_init_is_the_first_k_points_and_kmeanspp_picks_points():
    rng = np.random.default_rng(1)
    X, init = sample_tasks(rng, 2, 30, 2, 4)
    assert np.array_equal(init, X[:, :4])
    pp = initial_centers(X, 4, "kmeans++", rng)
    for t in range(2):
        assert all(np.any(np.all(X[t] == c, axis=1)) for c in pp[t])


def test_farthest_first_spreads_the_centers_out_and_crowded_gathers_them():
    X, _ = sample_tasks(np.random.default_rng(5), 3, 40, 2, 4)
    spread = initial_centers(X, 4, "farthest-first")
    crowd = initial_centers(X, 4, "crowded")
    again, _ = sample_tasks(np.random.default_rng(5), 3, 40, 2, 4, init="crowded")
    assert np.array_equal(again, X)  # neither scheme draws: the same points as with "first"
    for x, s, c in zip(X, spread, crowd, strict=True):
        assert np.array_equal(s[0], x[0]) and np.array_equal(c[0], x[0])  # both start from the first point
        for j in range(1, 4):  # each spread center: the point farthest from the centers before it
            gap = np.min(np.sum((x[:, None] - s[None, :j]) ** 2, axis=2), axis=1)
            assert np.array_equal(s[j], x[np.argmax(gap)])
        d = np.sum((x - x[0]) ** 2, axis=1)  # the crowded ones: the first point's nearest
        assert np.max(np.sum((c - x[0]) ** 2, axis=1)) == np.sort(d)[3]
        assert len({tuple(p) for p in c}) == 4
    # By hand: on a line, from 0 the farthest is 10, then the point farthest from both, 4.
    line = np.array([[0.0], [1.0], [4.0], [10.0], [6.0]])[None]
    np.testing.assert_array_equal(initial_centers(line, 3, "farthest-first")[0], [[0.0], [10.0], [4.0]])
    np.testing.assert_array_equal(initial_centers(line, 3, "crowded")[0], [[0.0], [1.0], [4.0]])


def test_unequal_weights_are_uniform_draws_normalized():
    # Two tight components in 1-D land at the two ends of [0, 1]: the share of
    # points below 1/2 is one component's weight w. Under weights U(0, 1)^2
    # normalized, E|w - 1/2| is about 0.19 (Monte Carlo below); a flat
    # Dirichlet would give 0.25, equal weights about 0.
    def mean_imbalance(equal):
        X, _ = sample_tasks(np.random.default_rng(2), 400, 1000, 1, 2, scale=0.001, equal_weights=equal)
        return np.mean(np.abs((X[:, :, 0] < 0.5).mean(axis=1) - 0.5))

    u = np.random.default_rng(9).uniform(size=(10**6, 2))
    expected = np.mean(np.abs(u[:, 0] / u.sum(axis=1) - 0.5))
    assert mean_imbalance(True) < 0.02
    assert abs(mean_imbalance(False) - expected) < 0.025


def test_anisotropic_scales_differ_per_component_and_coordinate():
    # Per-dimension min-max scaling cancels in the ratio of two components'
    # spreads in one coordinate: 1 when isotropic, far from 1 otherwise.
    from kmt_ref import lloyd
    from kmt_ref.geometry import squared_distances

    def spread_ratios(isotropic):
        X, init = sample_tasks(np.random.default_rng(4), 1, 4000, 4, 2, scale=0.001, isotropic=isotropic)
        labels = np.argmin(squared_distances(X, lloyd(X, init, 30).centers[-1]), axis=-1)[0]
        return X[0][labels == 0].std(axis=0) / X[0][labels == 1].std(axis=0)

    np.testing.assert_allclose(spread_ratios(True), 1.0, atol=0.1)
    assert np.max(np.abs(np.log(spread_ratios(False)))) > np.log(2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n=5, k=6), "k"),
        (dict(family="student"), "family"),
        (dict(init="random"), "init"),
        (dict(scale=0.0), "scale"),
    ],
)
def test_bad_task_options_raise_naming_the_argument(kwargs, match):
    args = dict(n=20, d=2, k=3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        sample_tasks(np.random.default_rng(0), 2, **args)


def test_sampler_needs_a_generator():
    with pytest.raises(ValueError, match="rng"):
        sample_tasks(0, 2, 20, 2, 3)
