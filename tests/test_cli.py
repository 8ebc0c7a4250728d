"""The command line: verify and bench run and report honestly."""

import json

import pytest

from kmt_ref.__main__ import main
from kmt_ref.programs.verify import Row, format_table


def test_verify_quick_exits_zero_and_every_claim_that_should_hold_holds(capfd):
    assert main(["verify", "--quick", "--json"]) == 0  # a child process, with one BLAS thread
    results = json.loads(capfd.readouterr().out)
    rows = [r for section in results.values() for r in section]
    assert rows and all(r["ok"] for r in rows)
    exact = [r for r in rows if r["kind"] == "run" and r["parameter"] == "gamma" and r["value"] == float("inf")]
    assert exact and all(r["holds"] for r in exact)


def test_a_failing_claim_is_reported_as_failing():
    bad = Row("x", "data", 1e4, "claim", 1.0, 1.0, holds=False, expect=True)
    assert not bad.ok
    assert "FAILS" in format_table({"section": [bad]})
    shown = Row("x", "data", 1e4, "claim", 1.0, 1.0, holds=False, expect=False)
    assert shown.ok and "fails, as documented" in format_table({"section": [shown]})
    measured = Row("x", "data", 2.0, "gap <= 1", 1.0, 3.0, holds=False, expect=None, parameter="beta")
    text = format_table({"section": [measured]})
    assert measured.ok and "outside" in text and "beta=2" in text and "every claim holds" in text
    # Each number in its own column; a proof has none to show, nor a formula row a parameter.
    line = next(ln for ln in text.splitlines() if ln.startswith("x ") and "beta=2" in ln)
    assert line.split()[3:5] == ["1.00e+00", "3.00e+00"] and "(" not in line
    proof = Row("formula", "symbolic", float("nan"), "an identity", 0.0, 0.0, True, True, parameter="", kind="proof")
    line = next(ln for ln in format_table({"proofs": [proof]}).splitlines() if ln.startswith("formula"))
    assert line.split()[:5] == ["formula", "symbolic", "-", "-", "-"] and "nan" not in line


def test_bench_quick_reports_ratios_and_memory_with_pinned_blas_threads(capfd):
    assert main(["bench", "--quick"]) == 0  # runs in a child process with BLAS threads pinned
    out = capfd.readouterr().out
    assert "BLAS threads: 1" in out
    assert "transformer gamma=inf / lloyd" in out and "transformer gamma=1e4 / lloyd" in out
    assert "lloyd / scipy kmeans2" in out and "peak" in out and "machine floor of one layer" in out
    assert "where a layer's time goes (ms)" in out and "CAX" in out and "on 2 threads" in out
    assert "ABOVE" not in out


def test_bench_grid_sets_every_model_beside_lloyd_at_every_point():
    from kmt_ref.programs.bench import GRID_MODELS, format_grid, grid_verdicts, run_grid

    grid = {"n": (300,), "k": (2, 16), "d": (2,)}
    rows = run_grid(grid, n_iter=2, repeats=1)
    assert [(r["n"], r["k"], r["d"]) for r in rows] == [(300, 2, 2), (300, 16, 2)]
    for r in rows:
        assert set(GRID_MODELS) <= set(r["ratios"])
        for name in GRID_MODELS:
            assert r["ratios"][name] == r["seconds"][name] / r["seconds"]["lloyd"]
    text = format_grid(rows)
    assert "largest ratio" in text and all(name in text for name in GRID_MODELS)
    # Every target has its verdict: 2x at k >= 16, 3x below, met or missed by how much; the softmax
    # models are measured without one.
    fixed = [dict(r, ratios={name: (2.5 if r["k"] < 16 else 3.0) for name in r["ratios"]}) for r in rows]
    text = format_grid(fixed)
    for name in GRID_MODELS:
        if "gamma=inf" in name:
            assert f"{name} (k >= 16): 3.00x at n=300, k=16, d=2; target <= 2.00x: missed by 1.50x" in text
            assert f"{name} (k < 16): 2.50x at n=300, k=2, d=2; target <= 3.00x: met" in text
        else:
            assert f"{name} (every point): 3.00x at n=300, k=16, d=2; measured, no target" in text
    verdicts = grid_verdicts([dict(r, ratios={name: 1.5 for name in r["ratios"]}) for r in rows])
    assert all(v["met"] for v in verdicts if v["target"] is not None)
    # scikit-learn's Lloyd per iteration: lloyd's time per iteration over its own, its iterations counted.
    with_sklearn = [dict(r, ratios=dict(r["ratios"], **{"lloyd / scikit-learn per iteration": s}))
                    for r, s in zip(rows, (2.0, 4.0), strict=True)]
    assert ("lloyd / scikit-learn per iteration (every point): 4.00x at n=300, k=16, d=2; target <= 1.50x: "
            "missed by 2.67x") in format_grid(with_sklearn)


def test_bench_grid_measures_peak_memory_at_its_memory_point(monkeypatch):
    from kmt_ref.programs import bench

    monkeypatch.setattr(bench, "MEMORY_POINT", (300, 2, 4))
    (row,) = bench.run_grid({"n": (300,), "k": (4,), "d": (2,)}, n_iter=2, repeats=1)
    assert set(row["peak_bytes"]) == {"lloyd", "2.1 gamma=inf", "2.2 gamma=inf"}
    assert row["token_bytes"] == 8 * 300 * (2 + 4) and all(b > 0 for b in row["peak_bytes"].values())
    assert "peak memory at n=300, d=2, k=4 (MB)" in bench.format_grid([row])


def test_bench_grid_writes_a_new_file_only(tmp_path, capsys):
    import json

    from kmt_ref.programs.bench import COMMITTED_GRID

    existing = tmp_path / "grid.json"
    existing.write_text("{}")
    for argv, said in ((["bench", "--grid", "--out", str(existing)], "(it exists)"),
                       (["bench", "--out", str(tmp_path / "new.json")], "without --grid"),
                       (["bench", "--grid", "--out", COMMITTED_GRID + ".new"], "committed")):
        with pytest.raises(SystemExit):
            main(argv)
        assert said in capsys.readouterr().err
    assert existing.read_text() == "{}" and not (tmp_path / "new.json").exists()
    assert main(["bench", "--grid", "--quick", "--repeats", "1", "--out", str(tmp_path / "new.json")]) == 0
    record = json.loads((tmp_path / "new.json").read_text())
    assert {"measured", "cpu", "versions", "rows", "verdicts"} <= set(record) and len(record["rows"]) == 4


def test_bench_rejects_a_non_positive_thread_count():
    with pytest.raises(SystemExit):
        main(["bench", "--threads", "0"])


def test_unknown_command_is_rejected():
    with pytest.raises(SystemExit):
        main(["frobnicate"])


@pytest.mark.slow
def test_verify_in_two_processes_gives_the_same_rows(capsys, monkeypatch):
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(variable, "1")  # already pinned: verify runs in this process
    assert main(["verify", "--quick", "--json", "--jobs", "1"]) == 0
    one = capsys.readouterr().out
    assert main(["verify", "--quick", "--json", "--jobs", "2"]) == 0
    assert capsys.readouterr().out == one


def test_the_command_line_keeps_freed_memory_on_glibc_and_numbers_do_not_move(monkeypatch):
    import platform
    import subprocess
    import sys

    import kmt_ref.__main__ as entry
    from kmt_ref.programs._cli import keep_freed_memory

    called = []
    monkeypatch.setattr(entry, "keep_freed_memory", lambda: called.append(True))
    with pytest.raises(SystemExit):
        entry.main(["no-such-command"])
    assert called == [True]

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    script = ("import numpy as np, autograd, sys\n"
              "from kmt_ref.programs._cli import keep_freed_memory\n"
              "if sys.argv[1] == '1': assert keep_freed_memory()\n"
              "from kmt_ref.learning.model import init_params\n"
              "from kmt_ref.learning.config import TrainConfig\n"
              "from kmt_ref.learning.train import batch_loss\n"
              "from kmt_ref.tasks import sample_tasks\n"
              "c = TrainConfig(d=3, k=4, n=300, batch=3)\n"
              "rng = np.random.default_rng(0)\n"
              "theta = init_params(c.model, rng)\n"
              "X, init = sample_tasks(rng, 3, **c.task_kwargs())\n"
              "print(autograd.grad(batch_loss)(theta, X, init, c).tobytes().hex())\n")
    runs = [subprocess.run([sys.executable, "-c", script, flag], capture_output=True, text=True, check=True).stdout
            for flag in ("0", "1")]
    assert runs[0] == runs[1] and len(runs[0]) > 100
    assert keep_freed_memory() is True
