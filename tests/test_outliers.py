"""The outlier experiment: trimmed and robust k-means beat Lloyd on contaminated data."""

import numpy as np
import pytest

from kmt_ref.programs.outliers import center_error, contaminated_mixture, outlier_experiment


@pytest.mark.parametrize("fraction", [0.05, 0.1])
def test_trimmed_and_robust_variants_beat_lloyd_with_far_outliers(fraction):
    result = outlier_experiment(np.random.default_rng(0), outlier_fraction=fraction, n_tasks=6)
    errors = result["errors"]
    lloyd = errors.pop("Lloyd")
    authors = errors.pop("quantile-trimmed (authors' baseline, q=0.95)")
    assert len(errors) == 3
    for name, err in errors.items():
        assert np.all(err < lloyd), name
        assert np.median(err) < 0.1 * np.median(lloyd), name
    # A fixed 5% per-cluster trim keeps most of a cluster's far outliers: it moves
    # the centers less than Lloyd does, but nowhere near the true means.
    assert np.median(authors) > 0.5 * np.median(lloyd)


def test_contaminated_mixture_places_the_stated_fraction_of_far_outliers():
    X, init, means, is_outlier = contaminated_mixture(np.random.default_rng(1), n=400, outlier_fraction=0.075)
    assert is_outlier.sum() == 30 and X.shape == (400, 2)
    dist = np.linalg.norm(X[is_outlier] - 0.5, axis=1)
    assert np.all((dist >= 5) & (dist <= 10))
    assert np.all((X[~is_outlier] >= 0) & (X[~is_outlier] <= 1))


def test_center_error_matches_centers_to_means_one_to_one():
    means = np.array([[0.0, 0.0], [1.0, 0.0]])
    assert center_error(means[::-1], means) == 0.0
    assert np.isclose(center_error([[1.0, 0.0], [0.0, 0.5]], means), np.sqrt(0.125))


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="outlier_fraction"):
        contaminated_mixture(np.random.default_rng(0), outlier_fraction=1.0)
    with pytest.raises(ValueError, match="rng"):
        outlier_experiment(0)


def test_variant_plots_return_figures():
    pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from kmt_ref.plotting.variants import plot_medoid_law, plot_outlier_experiment
    from kmt_ref.variants.kmedoids import medoid_law

    result = outlier_experiment(np.random.default_rng(0), n=120, n_tasks=2, n_iter=3)
    fig = plot_outlier_experiment(result)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    X = result["example"]["X"]
    init = X[:4]
    fig2 = plot_medoid_law(X, init, medoid_law(X, init, 0.1))
    assert isinstance(fig2, Figure)
    plt.close("all")
