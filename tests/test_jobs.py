"""Jobs: one result file per job, skipped when it holds the job, and the same results in-process and on Dask."""

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

from kmt_ref.__main__ import main as kmt_main
from kmt_ref.learning.checkpoint import load_checkpoint
from kmt_ref.learning.train import load_result
from kmt_ref.programs import experiments, jobs, runs
from kmt_ref.programs import paper_sweep as ps

distributed = pytest.importorskip("distributed",
                                  reason="needs Dask (distributed), of the dask extra: pip install -e '.[dask]'")

#: A small grid of the authors' sweep: two n, two k, two d, two scales (16 cells, seconds).
GRID = dict(ps.PAPER_GRID, ns=[100, 278], ks=[5, 10], ds=[1, 3], scales=[1, 7])
#: Two tiny trainings (one per token layout).
TINY = dict(n=24, d=2, k=3, n_steps=60)


def _cell():
    return ps.cell_jobs(0, dict(GRID, ns=[100], ks=[5], ds=[1], scales=[1]))[0]


def test_a_job_writes_one_file_named_by_its_inputs_and_a_rerun_reads_it(tmp_path, monkeypatch):
    job = _cell()
    result = jobs.run_job(job, str(tmp_path))
    path = tmp_path / "jobs" / "paper-sweep-cell" / "seed0-k5-d1-n100-scale1.json"
    stored = json.loads(path.read_text())
    assert stored == {"job": {"kind": job.kind, "inputs": job.inputs}, "result": result,
                      "seconds": jobs.job_seconds(job, str(tmp_path))} and stored["seconds"] > 0
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    monkeypatch.setattr(ps, "cell_losses", lambda *a: pytest.fail("a finished job was computed again"))
    assert jobs.run_job(job, str(tmp_path)) == result


@pytest.mark.parametrize("content", ["{not json", '{"job": {"kind": "paper-sweep-cell", "inputs": {}}, "result": 1}',
                                     ""])
def test_a_file_that_does_not_hold_the_job_is_recomputed(tmp_path, content):
    job = _cell()
    path = job.path(str(tmp_path))
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(content)  # cut short, another job's inputs, empty
    assert jobs.run_job(job, str(tmp_path)) == jobs.run_job(job)
    assert json.loads(open(path).read())["job"]["inputs"] == job.inputs


def test_a_job_never_writes_into_the_committed_results():
    from kmt_ref.programs._results import COMMITTED_DIR

    with pytest.raises(ValueError, match="committed"):
        jobs.run_job(_cell(), COMMITTED_DIR)
    assert not os.path.exists(os.path.join(COMMITTED_DIR, "jobs"))


def test_bad_jobs_are_refused():
    with pytest.raises(ValueError, match="job kind"):
        jobs.run_job(jobs.Job("nope", "x", {}))
    with pytest.raises(ValueError, match="jobs must be Job values"):
        jobs.run_jobs([("paper-sweep-cell", {})])
    with pytest.raises(ValueError, match="scheduler or workers, not both"), jobs.cluster("tcp://x:1", 2):
        pass


@pytest.mark.slow
def test_the_sweep_gives_the_same_rows_without_files_with_files_and_on_a_local_dask_cluster(tmp_path):
    plain = ps.run_paper_sweep(grid=GRID)
    kept = ps.run_paper_sweep(grid=GRID, directory=str(tmp_path))
    with jobs.cluster(workers=2) as client:
        dask = ps.run_paper_sweep(grid=GRID, directory=str(tmp_path / "dask"), client=client)
    assert plain["rows"] == kept["rows"] == dask["rows"] and len(plain["rows"]) == 16
    assert len(list((tmp_path / "dask" / "jobs" / "paper-sweep-cell").iterdir())) == 16
    assert plain["cell_seconds"] == {} and sorted(kept["cell_seconds"]) == ["100", "278"]
    assert all(t > 0 for t in kept["cell_seconds"].values())
    # The committed run's numbers for the cells it shares (the cells' draws do not depend on the grid).
    committed = {tuple(r[:4]): r[4:] for r in ps.load_paper_sweep()["rows"]}
    for row in plain["rows"]:
        np.testing.assert_allclose(np.array(row[4:], dtype=float), np.array(committed[tuple(row[:4])], dtype=float),
                                   rtol=1e-9, atol=1e-12)


def test_a_stopped_sweep_resumes_with_the_cells_it_lacks(tmp_path, monkeypatch):
    full = ps.run_paper_sweep(grid=GRID, directory=str(tmp_path))
    cells = sorted((tmp_path / "jobs" / "paper-sweep-cell").iterdir())
    for path in cells[::2]:
        path.unlink()  # as if stopped with half the cells done
    computed = []
    real = ps.cell_losses
    monkeypatch.setattr(ps, "cell_losses", lambda *a: computed.append(1) or real(*a))
    assert ps.run_paper_sweep(grid=GRID, directory=str(tmp_path))["rows"] == full["rows"]
    assert len(computed) == len(cells[::2])


def test_finished_only_gathers_the_cells_a_running_sweep_has_done_and_computes_none(tmp_path, monkeypatch, capsys):
    done = ps.run_paper_sweep(grid=GRID, directory=str(tmp_path))
    monkeypatch.setattr(ps, "cell_losses", lambda *a: pytest.fail("a cell was computed"))
    gathered = ps.run_paper_sweep(full=True, directory=str(tmp_path), finished_only=True)
    assert sorted(gathered["rows"]) == sorted(done["rows"]) and gathered["grid"] == ps.PAPER_GRID
    out = str(tmp_path / "paper_sweep.json")
    assert kmt_main(["reproduce", "paper-sweep", "--full", "--finished-only", "--out", out]) == 0
    assert sorted(json.load(open(out))["rows"]) == sorted(done["rows"])
    assert "those finished only" in capsys.readouterr().err
    with pytest.raises(ValueError, match="finished_only needs the directory"):
        ps.run_paper_sweep(finished_only=True)
    # A folder without kept cells is named, not gathered into an empty sweep that the report cannot compare.
    with pytest.raises(SystemExit):
        kmt_main(["reproduce", "paper-sweep", "--full", "--finished-only", "--out", str(tmp_path / "x" / "s.json")])
    assert "no finished cells under" in capsys.readouterr().err


def test_a_sweep_resumed_from_an_earlier_json_computes_only_the_cells_it_lacks(tmp_path, monkeypatch):
    full = ps.run_paper_sweep(grid=GRID, directory=str(tmp_path / "a"))
    half = dict(full, rows=full["rows"][::2], cell_seconds={})
    computed = []
    real = ps.cell_losses
    monkeypatch.setattr(ps, "cell_losses", lambda *a: computed.append(1) or real(*a))
    assert ps.keep_cells(half, str(tmp_path / "b"), grid=GRID) == 8
    assert ps.run_paper_sweep(grid=GRID, directory=str(tmp_path / "b"))["rows"] == full["rows"]
    assert len(computed) == 8
    assert ps.keep_cells(half, str(tmp_path / "b"), grid=GRID) == 0  # kept already, the same losses
    # From the whole run: nothing computed, and its cost carried over as the mean seconds of each n.
    assert ps.keep_cells(full, str(tmp_path / "c"), grid=GRID) == 16
    again = ps.run_paper_sweep(grid=GRID, directory=str(tmp_path / "c"))
    assert again["rows"] == full["rows"] and len(computed) == 8
    assert again["cell_seconds"] == pytest.approx(full["cell_seconds"], abs=0.1)


def test_resuming_refuses_a_source_that_does_not_match(tmp_path, capsys):
    full = ps.run_paper_sweep(grid=GRID)
    with pytest.raises(ValueError, match="source is a sweep of seed 0"):
        ps.keep_cells(full, str(tmp_path), seed=1, grid=GRID)
    with pytest.raises(ValueError, match="source is a sweep of seed 0"):
        ps.keep_cells(full, str(tmp_path))  # another grid
    with pytest.raises(ValueError, match="no cell of the grid"):
        ps.keep_cells(dict(full, rows=[[5, 1, 101, 1, 0.0, 0.0, 0.0]]), str(tmp_path), grid=GRID)
    with pytest.raises(ValueError, match="no cell of the grid"):
        ps.keep_cells(dict(full, rows=[full["rows"][0][:-1]]), str(tmp_path), grid=GRID)
    for row in (7, [[5], 1, 100, 1, 0.0, 0.0, 0.0]):
        with pytest.raises(ValueError, match="no cell of the grid"):
            ps.keep_cells(dict(full, rows=full["rows"][:2] + [row]), str(tmp_path), grid=GRID)
    assert not os.path.exists(tmp_path / "jobs")  # every row is checked before any file is written
    with pytest.raises(ValueError, match="committed results"):  # before anything else: even a bad source
        ps.keep_cells([full], os.path.dirname(ps.COMMITTED_PATH), grid=GRID)
    for bad in ([full], dict(full, rows=None)):
        with pytest.raises(ValueError, match="source must be a sweep's result"):
            ps.keep_cells(bad, str(tmp_path), grid=GRID)
    # A cell kept there with other losses is named, not overwritten.
    ps.keep_cells(full, str(tmp_path), grid=GRID)
    row = full["rows"][3]
    other = dict(full, rows=[row[:4] + [row[4] + 2.0**-40] + row[5:]])
    with pytest.raises(ValueError, match=f"cell seed0-k{row[0]}-d{row[1]}-n{row[2]}-scale{row[3]}: kept under"):
        ps.keep_cells(other, str(tmp_path), grid=GRID)
    assert ps.keep_cells(full, str(tmp_path), grid=GRID) == 0
    out = str(tmp_path / "cli" / "s.json")
    with pytest.raises(SystemExit):
        kmt_main(["reproduce", "paper-sweep", "--resume-from", str(tmp_path / "missing.json"), "--out", out])
    assert "--resume-from" in capsys.readouterr().err and not os.path.exists(out)
    with pytest.raises(SystemExit):
        kmt_main(["reproduce", "paper-sweep", "--report", "--resume-from", "committed"])
    assert "takes no --resume-from" in capsys.readouterr().err


@pytest.mark.slow
def test_the_committed_sweep_resumed_and_gathered_is_the_committed_sweep(tmp_path, monkeypatch):
    monkeypatch.setattr(ps, "cell_losses", lambda *a: pytest.fail("a cell was computed"))
    out = str(tmp_path / "s.json")
    assert kmt_main(["reproduce", "paper-sweep", "--full", "--finished-only", "--resume-from", "committed",
                     "--out", out]) == 0
    gathered, committed = json.load(open(out)), ps.load_paper_sweep()
    assert gathered["rows"] == committed["rows"]
    assert gathered["cell_seconds"] == pytest.approx(committed["cell_seconds"], abs=0.1)


def test_the_report_states_the_coverage_of_the_sweep_it_reads(tmp_path, capsys):
    full = ps.run_paper_sweep(grid=GRID)
    at_278 = [row for row in full["rows"] if row[2] == 278]
    path = str(tmp_path / "s.json")
    with open(path, "w") as f:
        json.dump(dict(full, rows=[row for row in full["rows"] if row[2] == 100] + at_278[:3]), f)
    assert kmt_main(["reproduce", "paper-sweep", "--report", "--out", path]) == 0
    assert "over the 11 cells of our run (every cell up to n = 100, 3 of 8 at n = 278)" in capsys.readouterr().out
    with open(path, "w") as f:
        json.dump(dict(full, rows=at_278), f)
    assert kmt_main(["reproduce", "paper-sweep", "--report", "--out", path]) == 0
    assert "over the 8 cells of our run (0 of 8 at n = 100, 8 of 8 at n = 278)" in capsys.readouterr().out


def test_full_puts_the_committed_cells_first_and_adds_every_other_cell():
    grid = dict(GRID, ns=[100, 16681, 46415], ks=[5], ds=[1, 2])
    some, every = ps._cells(grid, np.random.default_rng(0)), ps._cells(grid, np.random.default_rng(0), full=True)
    assert every[:len(some)] == some and sorted(every) == sorted(set(every)) and len(every) == 3 * 2 * 2
    rest = [cell[2] for cell in every[len(some):]]
    assert rest == sorted(rest)  # by increasing n


def _trainings():
    return runs.train_jobs("quick", [5], ("d+k", "d"), [TINY])


@pytest.mark.slow
def test_two_trainings_on_a_local_dask_cluster_equal_the_in_process_ones(tmp_path):
    here = jobs.run_jobs(_trainings(), str(tmp_path / "here"))
    with jobs.cluster(workers=2) as client:
        there = jobs.run_jobs(_trainings(), str(tmp_path / "there"), client)
    assert here == there and all(r["finished"] and r["trained"] for r in here)
    for r in here:
        a, b = (load_result(str(tmp_path / where / r["checkpoint"])) for where in ("here", "there"))
        assert np.array_equal(a.theta, b.theta)


@pytest.mark.slow
def test_evaluations_on_a_local_dask_cluster_equal_the_in_process_ones(tmp_path):
    here = jobs.run_jobs(_trainings(), str(tmp_path))
    models = [load_result(str(tmp_path / r["checkpoint"])) for r in here]
    evaluations = [runs.evaluate_job_of(r, 3, 4, reembed, {"n": 30})
                   for r in models for reembed in (True, False)]
    assert len({job.name for job in evaluations}) == 4  # every input is in the name (Dask keys results by it)
    local = jobs.run_jobs(evaluations)
    with jobs.cluster(workers=2) as client:
        remote = jobs.run_jobs(evaluations, None, client)
    assert local == remote and not os.path.exists(tmp_path / "jobs" / "evaluate")  # never kept
    assert all(len(r["model"]) == len(r["lloyd"]) == 4 for r in local)


def test_an_evaluation_names_a_committed_model_inside_the_package_and_checks_its_step():
    r = load_result(os.path.join(runs.RESULTS_DIR, "paper", "dk-seed0.npz"))
    job = runs.evaluate_job_of(r, 1, 2)
    assert job.inputs["committed"] and job.inputs["checkpoint"] == os.path.join("paper", "dk-seed0.npz")
    assert len(jobs.run_job(job)["model"]) == 2
    with pytest.raises(ValueError, match="step"):
        jobs.run_job(jobs.Job("evaluate", job.name, dict(job.inputs, step=5)))


def test_a_stored_training_holds_only_while_its_checkpoint_does(tmp_path):
    job = _trainings()[0]
    first = jobs.run_job(job, str(tmp_path))
    checkpoint = tmp_path / first["checkpoint"]
    checkpoint.unlink()
    assert jobs.run_job(job, str(tmp_path)) == first and checkpoint.exists()  # trained again
    checkpoint.write_bytes(b"cut short")
    with pytest.raises(ValueError, match="not a readable training checkpoint"):  # never silently restarted
        jobs.run_job(job, str(tmp_path))


@pytest.mark.slow
def test_a_worker_killed_mid_training_loses_nothing(tmp_path):
    job = runs.train_jobs("quick", [6], ("d+k",), [dict(TINY, n_steps=3000)])[0]
    reference = jobs.run_job(job, str(tmp_path / "here"))
    checkpoint = str(tmp_path / "there" / reference["checkpoint"])
    with jobs.cluster(workers=1) as client:
        future = client.submit(jobs.run_job, job, str(tmp_path / "there"))
        deadline = time.monotonic() + 300
        while not (os.path.exists(checkpoint) and load_checkpoint(checkpoint)[1]["step"] >= 100):
            assert time.monotonic() < deadline and not future.done(), "the job never checkpointed"
            time.sleep(0.05)
        (pid,) = client.run(os.getpid).values()
        os.kill(pid, signal.SIGKILL)
        killed_at = load_checkpoint(checkpoint)[1]["step"]
        result = future.result(timeout=600)  # Dask gave the job to the restarted worker
    assert 100 <= killed_at < 3000
    assert result == reference
    here, there = (load_result(str(tmp_path / where / reference["checkpoint"])) for where in ("here", "there"))
    assert np.array_equal(here.theta, there.theta)
    for key in here.history:
        assert np.array_equal(here.history[key], there.history[key]), key


def test_train_runs_its_jobs_on_a_scheduler_given_by_address(tmp_path, capsys):
    argv = ["train", "--quick", "--seeds", "5", "--tokens", "d+k,d", "--n", "24", "--d", "2", "--k", "3",
            "--steps", "60", "--results-dir", str(tmp_path)]
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as local:
        assert kmt_main(argv + ["--scheduler", local.scheduler_address]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = jobs.run_jobs(_trainings(), str(tmp_path))  # read back from the job files
    assert [dict(r, checkpoint=os.path.join(str(tmp_path), r["checkpoint"])) for r in expected] == lines


def test_the_reproduction_page_counts_the_jobs_the_commands_make():
    text = open(os.path.join(os.path.dirname(__file__), "..", "book", "reproduction.md")).read()
    seeds, tokens = range(10), ("d+k", "d")
    paper = runs.train_jobs("paper", seeds, tokens)
    figures = runs.train_jobs("paper", seeds, tokens, [o for o in experiments.figure_runs("paper") if o])
    cells = ps.cell_jobs(full=True)
    assert (len(paper), len(figures), len(cells)) == (20, 240, 10_000)
    assert "the 20 models of the learning results" in text and "the 240 models of Figures 9 and 10" in text
    assert "the sweep's 10,000 cells" in text


def test_an_experiment_trains_the_models_it_lacks_as_jobs_on_a_cluster(tmp_path, monkeypatch):
    from kmt_ref.engine import Engine
    from kmt_ref.learning import protocols
    from kmt_ref.programs import registry

    tiny = dict(n_steps=12, seeds=(0, 1), eval_tasks=6, val_tasks=6, n_eval_steps=3, gen_n=(40,),
                train=dict(d=2, k=3, n=24, batch=3, eval_every=4))
    monkeypatch.setitem(protocols.SCALES, "quick", tiny)
    here = registry.run_experiment("ablation", "quick", str(tmp_path / "here"), progress=False)
    evaluated, real = [], runs.evaluate_job
    monkeypatch.setattr(runs, "evaluate_job", lambda *a, **kw: evaluated.append(
        threading.current_thread().name) or real(*a, **kw))
    # Threads, not processes: the workers see this test's scale.
    with distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as local, \
            distributed.Client(local) as client:
        there = registry.run_experiment("ablation", "quick", str(tmp_path / "there"), progress=False,
                                        engine=Engine(client=client))
    assert sorted(p.name for p in (tmp_path / "there" / "jobs" / "train").iterdir()) == \
        ["quick-d-seed0.json", "quick-d-seed1.json"]
    assert evaluated and "MainThread" not in evaluated  # the seeds were evaluated on the cluster's workers
    for key in ("d_only_log_objective", "lloyd_log_objective"):
        assert here[key] == there[key]


def test_cluster_options_are_checked_before_any_work():
    with pytest.raises(ValueError, match="workers"):
        jobs.check_cluster(workers=0)
    with pytest.raises(SystemExit):
        kmt_main(["reproduce", "learning", "--quick", "--no-train", "--workers", "1", "--scheduler", "x"])
