import numpy as np
import pytest

from kmt_ref.learning.tasks import FAMILIES, initial_centers, sample_tasks


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


def test_first_init_is_the_first_k_points_and_kmeanspp_picks_points():
    rng = np.random.default_rng(1)
    X, init = sample_tasks(rng, 2, 30, 2, 4)
    assert np.array_equal(init, X[:, :4])
    pp = initial_centers(X, 4, "kmeans++", rng)
    for t in range(2):
        assert all(np.any(np.all(X[t] == c, axis=1)) for c in pp[t])


def test_unequal_weights_give_unbalanced_components():
    # Tight, well separated components: the largest converged Lloyd cluster
    # holds about n/k points with equal weights, clearly more with Dirichlet ones.
    from kmt_ref.geometry import squared_distances
    from kmt_ref.learning.baseline import lloyd_batch

    def largest_share(equal):
        X, init = sample_tasks(np.random.default_rng(2), 20, 400, 2, 4, scale=0.02, equal_weights=equal)
        C = lloyd_batch(X, init, 30)[-1]
        labels = np.argmin(squared_distances(X, C), axis=-1)
        return np.mean([np.bincount(lab, minlength=4).max() / 400 for lab in labels])

    assert largest_share(False) > largest_share(True) + 0.05


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
