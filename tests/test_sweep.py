"""The gamma sweep: the subcommand, the cached result, and its figures."""

import json

import numpy as np
import pytest

from kmt_ref.__main__ import main
from kmt_ref.programs.sweep import DEFAULT_PATH, GRID, load_sweep, run_sweep

pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
import matplotlib  # noqa: E402

matplotlib.use("Agg")

CACHED = DEFAULT_PATH


def test_reproduce_sweep_quick_writes_json_with_certified_gaps_above_measured(tmp_path):
    out = tmp_path / "sweep.json"
    figure = tmp_path / "h.png"
    assert main(["reproduce", "sweep", "--quick", "--out", str(out), "--figure", str(figure)]) == 0
    result = json.loads(out.read_text())
    assert figure.stat().st_size > 0
    for task in result["tasks"]:
        assert len(task["gap"]) == len(result["grid"]["gammas"])
        assert np.all(np.array(task["gap"]) <= np.array(task["certified_gap"]))


def test_cached_sweep_is_the_default_grid_and_not_stale():
    result = load_sweep(CACHED)
    grid = dict(result["grid"])
    # The gammas are np.logspace's, whose last digit differs between NumPy versions (2.4 rounds
    # 10**2.5 one unit in the last place higher than the version that wrote the cache).
    np.testing.assert_allclose(grid.pop("gammas"), GRID["gammas"], rtol=4 * np.finfo(float).eps, atol=0)
    assert grid == {key: (list(value) if isinstance(value, list) else value) for key, value in GRID.items()
                    if key != "gammas"}
    expected = len(GRID["ds"]) * len(GRID["ks"]) * len(GRID["ns"]) * len(GRID["scales"]) * len(GRID["seeds"])
    assert len(result["tasks"]) == expected
    # Recompute one small task and compare with the cache.
    task = next(t for t in result["tasks"] if t["n"] == 100 and t["d"] == 2)
    fresh = run_sweep(GRID["gammas"], [task["d"]], [task["k"]], [task["n"]], [task["scale"]], [task["seed"]],
                      GRID["n_layers"], GRID["tol"])["tasks"][0]
    np.testing.assert_allclose(fresh["gap"], task["gap"], rtol=1e-6, atol=1e-15)
    np.testing.assert_allclose(fresh["certified_gamma"], task["certified_gamma"], rtol=1e-9)
    for t in result["tasks"]:
        assert np.all(np.array(t["gap"]) <= np.array(t["certified_gap"]))


def test_sweep_figures_are_drawn():
    from kmt_ref.plotting.certificate import bound_vs_measured, gap_collapse, sweep_heatmaps

    result = load_sweep(CACHED)
    assert len(sweep_heatmaps(result).axes) == len(GRID["scales"]) + 1  # + colorbar
    assert len(gap_collapse(result).axes) == 1
    assert len(bound_vs_measured([1, 10], [0.1, 0.01], [0.2, 0.02]).axes) == 1


def test_run_sweep_rejects_bad_grid_values():
    for bad in (dict(scales=[0.0]), dict(gammas=[-1.0]), dict(n_layers=-1), dict(tol=0.0)):
        args = dict(gammas=[1.0], ds=[2], ks=[2], ns=[10], scales=[1.0], seeds=[0], n_layers=1, tol=1e-3)
        args.update(bad)
        with pytest.raises(ValueError, match="="):
            run_sweep(**args)
