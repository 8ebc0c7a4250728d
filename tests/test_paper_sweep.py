"""The authors' parameter sweep: their task sampler, their metric, and the comparison."""

import os

import numpy as np
import pytest

from kmt_ref.programs import paper_sweep as ps


def test_authors_task_has_n_over_k_points_per_center_scaled_to_the_upper_bound():
    X, init = ps.authors_task(np.random.default_rng(0), 103, 2, 5, 4.0)
    assert X.shape == (100, 2) and init.shape == (5, 2)  # 103 // 5 = 20 points per center
    np.testing.assert_allclose(X.min(axis=0), 0.0)
    np.testing.assert_allclose(X.max(axis=0), 4.0)
    np.testing.assert_array_equal(init, X[:5])


def test_cell_losses_are_nan_where_lloyd_empties_a_cluster_and_zero_when_exact():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    assert np.isnan(ps.cell_losses(X, np.array([[0.0], [100.0]]), [1.0, 10.0])).all()
    # Two far-apart pairs: at gamma = 100 softmax is one-hot, the transformer is Lloyd.
    assert ps.cell_losses(X, np.array([[0.0], [10.0]]), [100.0]) == [pytest.approx(0.0, abs=1e-12)]


def test_compare_summarizes_the_shared_cells_of_both_sweeps():
    result = {"grid": {"gammas": [1.0]}, "rows": [[5, 1, 100, 1, 0.5], [5, 1, 100, 2, None], [10, 2, 278, 3, -0.01]]}
    authors = {1.0: {(5, 1, 100, 1): 0.4, (5, 1, 100, 2): 0.3, (10, 2, 278, 3): 0.002, (50, 9, 100, 1): 9.0}}
    report = ps.compare(result, authors)["1"]
    assert report["ours"] == {"n_cells": 2, "mean": pytest.approx(0.245), "median": pytest.approx(0.245),
                              "frac_within_1e-3": 0.0, "frac_negative": 0.5}
    assert report["authors"]["n_cells"] == 3 and report["authors_full_grid"]["n_cells"] == 4
    # Cell by cell over the two cells both define: 0.5 - 0.4 and -0.01 - 0.002, the second of opposite signs.
    assert report["cells"] == {"cells": 2, "mean_difference": pytest.approx(0.044),
                               "mean_abs_difference": pytest.approx(0.056), "max_abs_difference": pytest.approx(0.1),
                               "frac_opposite_signs": 0.5}
    assert report["heatmaps"]["k x scale"]["max_abs_difference"] == pytest.approx(0.1)
    assert report["heatmaps"]["k x scale"]["mean_difference"] == pytest.approx(0.044)


def test_opposite_signs_count_only_beyond_the_tolerance_on_both_sides():
    ours = np.array([0.002, -0.002, 0.001, 0.5, -0.5])
    theirs = np.array([-0.002, 0.002, -0.5, 0.4, -0.0011])
    # Opposite beyond 1e-3: the first two; 0.001 is not beyond it; the last two agree in sign.
    assert ps._differences(ours, theirs)["frac_opposite_signs"] == pytest.approx(2 / 5)


def test_the_authors_csv_gives_the_published_summary():
    authors = ps.load_authors()
    means = {g: ps.summarize(authors[g])["mean"] for g in (1.0, 10.0, 100.0)}
    assert [round(means[g], 3) for g in (1.0, 10.0, 100.0)] == [0.993, 0.267, 0.031]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(ps.COMMITTED_PATH), reason="no committed paper sweep yet")
def test_committed_paper_sweep_is_not_stale():
    result = ps.load_paper_sweep()
    rows = {tuple(r[:4]): r[4:] for r in result["rows"]}
    fresh = ps.run_paper_sweep(seed=result["seed"], grid=dict(result["grid"], ns=[100], ks=[5, 10], ds=[1, 3],
                                                               scales=[1, 7]))
    # and the cheapest cell of the largest n (a few seconds), which full runs computed over many sessions
    largest = ps.run_paper_sweep(seed=result["seed"], grid=dict(result["grid"], ns=[10**6], ks=[5], ds=[1], scales=[1]))
    for row in fresh["rows"] + largest["rows"]:
        np.testing.assert_allclose(np.array(row[4:], dtype=float), np.array(rows[tuple(row[:4])], dtype=float),
                                   rtol=1e-9, atol=1e-12)


def test_coverage_counts_the_cells_of_each_n():
    grid = dict(ps.PAPER_GRID, ns=[100, 278], ks=[5], ds=[1, 2], scales=[1, 2, 3])
    result = dict(grid=grid, rows=[[5, 1, 100, 1, 0.0, 0.0, 0.0], [5, 2, 100, 3, None, None, None]])
    assert ps.coverage(result) == {100: (2, 6), 278: (0, 6)}
    # The committed run has every cell of the grid, each once.
    rows = ps.load_paper_sweep()["rows"]
    assert list(ps.coverage(ps.load_paper_sweep()).values()) == [(1000, 1000)] * 10
    assert len({tuple(row[:4]) for row in rows}) == len(rows) == 10_000


def test_a_cell_keeps_no_assignment_record(monkeypatch):
    # The full grid's largest cells (n = 1e6, k = 50) would record gigabytes of assignment weights; a cell
    # needs only the centers, so it must run under any record limit.
    import kmt_ref.running as running

    monkeypatch.setattr(running, "MAX_KEPT_BYTES", 1)
    X, init = ps.authors_task(np.random.default_rng(0), 200, 2, 5, 3.0)
    losses = ps.cell_losses(X, init, [1.0, 100.0])
    assert all(np.isfinite(losses))
